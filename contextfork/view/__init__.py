"""The session and package inspector: a self-contained static site, optionally served live."""
