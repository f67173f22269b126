"""The contextfork MCP server as a project server of the real Claude Code."""

from __future__ import annotations

import json

from contextfork.cold.decisions import load_decisions
from tests.e2e.mock_anthropic import Reply, ToolUse, Usage
from tests.e2e.rigs import ClaudeRig
from tests.helpers import cli


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


def _call_tool(claude: ClaudeRig, call: ToolUse, prompt: str) -> dict[str, object]:
    """Have the model call ``call`` once through the real client; the tool_result it got back.

    In -p mode Claude Code sends the first request while project MCP servers still connect; the
    model "waits" (a harmless Bash call) until the tool is offered, then calls it."""
    tool = call.name
    claude.mock.script(
        Reply(text="Calling the tool.", tool_uses=[call], usage=Usage(input_tokens=3100),
              when=lambda body: tool in json.dumps(body) and call.id not in json.dumps(body)),
        Reply(text="Done.", usage=Usage(input_tokens=3400),
              when=lambda body: call.id in json.dumps(body)),
        *[
            Reply(text="Waiting for the tools.", tool_uses=[ToolUse("Bash", {"command": "sleep 1"})],
                  when=lambda body: tool not in json.dumps(body))
            for _ in range(8)
        ],
    )

    claude.prompt(prompt, allowed=(tool, "Bash"), timeout=120)

    last = claude.mock.main_requests()[-1]
    assert call.id in json.dumps(last), "the model's call of the contextfork MCP tool never happened"
    results = [
        b
        for m in last["messages"]
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") == call.id
    ]
    assert len(results) == 1, last["messages"][-3:]
    [result] = results
    assert not result.get("is_error"), result
    return result  # type: ignore[no-any-return]


def test_a_model_call_of_get_context_status_reaches_the_mcp_server(claude: ClaudeRig) -> None:
    _add_project_server(claude)
    result = _call_tool(claude, ToolUse("mcp__contextfork__get_context_status", {}),
                        "How full is the context?")
    body = json.dumps(result)
    # the real server answered from this repository's state
    assert "tokens" in body and "risk" in body, body[:2000]


def test_a_model_pin_through_contextfork_context_is_a_durable_decision(claude: ClaudeRig) -> None:
    """The curation verbs reach Claude Code as the MCP tool contextfork_context: a pin the model
    asks for is written to the session's verified decisions, which fork and page-in honour."""
    _add_project_server(claude)
    folded = cli("fold", "add", "1", "pytest run of the parser", "--session", "s1",
                 input="FAILED tests/test_parser.py::test_nested - KeyError: 'depth'\n",
                 cwd=claude.repo.path)
    assert folded.returncode == 0, folded.stderr
    call = ToolUse("mcp__contextfork__contextfork_context",
                   {"verb": "pin", "session_id": "s1", "args": {"step": 1}})

    result = _call_tool(claude, call, "Keep the parser failure raw.")

    assert "pin" in json.dumps(result)
    decisions = load_decisions(claude.repo.path, "s1")
    assert len(decisions.pinned) == 1, decisions
