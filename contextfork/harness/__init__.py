"""Where users work: Claude Code / Codex hooks, the folded fork, and the MCP server.

Nothing is imported here: ``contextfork hooks run ...`` must start without Typer, pydantic, jinja2
or mcp, so each submodule is imported only by the entry point that needs it.
"""
