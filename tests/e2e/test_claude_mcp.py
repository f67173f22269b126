"""The contextfork MCP server as a project server of the real Claude Code."""

from __future__ import annotations

import json

from tests.e2e.mock_anthropic import Reply, ToolUse, Usage
from tests.e2e.rigs import ClaudeRig


def _add_project_server(claude: ClaudeRig) -> None:
    """The project's .mcp.json as examples/claude-code/.mcp.json has it, approved by the user."""
    claude.repo.write(
        ".mcp.json",
        json.dumps({"mcpServers": {"contextfork": {"type": "stdio", "command": "contextfork", "args": ["mcp"], "env": {}}}}),
    )
    claude.trust_project(mcp_servers=("contextfork",))


def test_claude_mcp_list_shows_contextfork_connected(claude: ClaudeRig) -> None:
    _add_project_server(claude)

    run = claude.run("mcp", "list", timeout=120)

    assert run.returncode == 0, run
    line = next((ln for ln in run.stdout.splitlines() if ln.startswith("contextfork")), "")
    assert "Connected" in line, run


def test_a_model_call_of_get_context_status_reaches_the_mcp_server(claude: ClaudeRig) -> None:
    _add_project_server(claude)
    tool = "mcp__contextfork__get_context_status"
    claude.mock.script(
        Reply(text="Checking the footprint.", tool_uses=[ToolUse(tool, {})], usage=Usage(input_tokens=3100)),
        Reply(text="The context is small.", usage=Usage(input_tokens=3400)),
    )

    claude.prompt("How full is the context?", allowed=(tool,), timeout=120)

    _first, second = claude.mock.main_requests()
    # MCP tools are announced to the model (as deferred tools in 2.1: named, schema on demand)
    assert tool in json.dumps(second), "the contextfork MCP tools were not offered to the model"
    results = [
        b
        for m in second["messages"]
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    assert len(results) == 1, second["messages"][-3:]
    [result] = results
    assert not result.get("is_error"), result
    body = json.dumps(result)
    # the real server answered from this repository's state
    assert "tokens" in body and "risk" in body, body[:2000]
