"""The MCP server: its tools, the context curation tool, and which paths a client may name.

Nothing is imported here: the server pulls in the ``mcp`` stack, imported only by ``contextfork mcp``.
"""
