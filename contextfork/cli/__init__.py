"""CLI layer. The Typer application lives in ``cli.app`` so that importing a fast-path module
from this package does not build the whole Typer app."""
