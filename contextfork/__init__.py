"""contextfork: see, fold, render and fork long AI coding-agent sessions without losing anything."""

__version__ = "0.1.0"
