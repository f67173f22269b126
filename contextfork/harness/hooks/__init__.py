"""The harness hooks: the runner ``contextfork hooks run ...`` calls, and what installs them.

Nothing is imported here: the runner is on every prompt's path and must start without Typer,
pydantic, jinja2 or tomlkit, so each module is imported only by the entry point that needs it.
"""
