"""The local model-API proxy: live folding for every client with a base-URL setting.

``contextfork proxy`` / ``contextfork run`` (docs/proxy.md, docs/design/proxy.md). Importing
this package imports nothing: aiohttp is loaded by ``server`` only, and ``stats`` (read by the
status line) is stdlib only.
"""
