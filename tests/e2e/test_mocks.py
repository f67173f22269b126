"""The mocks speak the wire formats the real clients parse (fast; no client needed)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.e2e.mock_anthropic import COMPACT_MARKERS, MockAnthropic, Reply, ToolUse, Usage
from tests.e2e.mock_openai import Call, MockOpenAI, OAReply


def _post(url: str, body: dict[str, Any]) -> tuple[str, bytes]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.headers["Content-Type"], resp.read()


def _events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for chunk in raw.decode().strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        out.append((lines.get("event", ""), json.loads(lines["data"])))
    return out


def test_anthropic_mock_streams_text_and_tool_use_with_usage_and_logs_the_request() -> None:
    tools = [{"name": "Bash", "input_schema": {}}]
    with MockAnthropic() as mock:
        mock.script(Reply(text="hi", tool_uses=[ToolUse("Bash", {"command": "ls -la"})], usage=Usage(10, 2, 3, 4)))
        ctype, raw = _post(f"{mock.url}/v1/messages?beta=true", {"stream": True, "tools": tools, "messages": [{"role": "user", "content": "x"}]})
        _, count = _post(f"{mock.url}/v1/messages/count_tokens", {"messages": []})

    assert ctype == "text/event-stream"
    events = _events(raw)
    names = [n for n, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    tool_start = next(d for n, d in events if n == "content_block_start" and d["content_block"]["type"] == "tool_use")
    partial = "".join(
        d["delta"]["partial_json"] for n, d in events if n == "content_block_delta" and d["index"] == tool_start["index"]
    )
    assert json.loads(partial) == {"command": "ls -la"}
    delta = next(d for n, d in events if n == "message_delta")
    assert delta["delta"]["stop_reason"] == "tool_use" and delta["usage"]["cache_read_input_tokens"] == 4
    assert json.loads(count) == {"input_tokens": 1000}
    assert mock.main_requests()[0]["messages"][0]["content"] == "x"


def test_anthropic_mock_answers_a_compaction_request_unscripted_and_without_streaming() -> None:
    with MockAnthropic() as mock:
        mock.script(Reply(text="main reply"))
        body = {"tools": [{"name": "Bash"}], "messages": [{"role": "user", "content": [{"type": "text", "text": COMPACT_MARKERS[1]}]}]}
        _, raw = _post(f"{mock.url}/v1/messages", body)

    msg = json.loads(raw)
    assert "<summary>" in msg["content"][0]["text"]
    assert [r.text for r in mock.pending()] == ["main reply"]
    assert len(mock.message_requests("compact")) == 1


def test_openai_mock_streams_a_function_call_and_completes_with_usage() -> None:
    with MockOpenAI() as mock:
        mock.script(OAReply(text="ok", calls=[Call("exec_command", {"cmd": "ls"})], input_tokens=77))
        _, raw = _post(f"{mock.url}/v1/responses", {"input": [], "stream": True})

    events = _events(raw)
    assert events[0][0] == "response.created" and events[-1][0] == "response.completed"
    done = events[-1][1]["response"]
    assert [o["type"] for o in done["output"]] == ["message", "function_call"]
    assert json.loads(done["output"][1]["arguments"]) == {"cmd": "ls"}
    assert done["usage"]["input_tokens"] == 77
