"""The Responses API (Codex) through the proxy's edit: calls and outputs leave together,
encrypted reasoning is never edited, everything kept is the client's bytes."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from contextfork.proxy import jsonspan, responses
from contextfork.proxy.adapt import adapt
from contextfork.proxy.conversation import Registry
from tests.helpers import Repo


def _session(calls: int) -> list[list[dict[str, Any]]]:
    """The ``input`` of every call of a Codex-like session (reasoning, a call, its output)."""
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list things"}]},
    ]
    out = [list(items)]
    for n in range(calls):
        items.append({"type": "reasoning", "id": f"rs_{n}", "summary": [],
                      "encrypted_content": f"gAAAA{n:04d}" + "\u00e9x" * 30})
        items.append({"type": "function_call", "id": f"fc_{n}", "name": "exec_command",
                      "arguments": json.dumps({"cmd": f"seq {n} 300"}), "call_id": f"call_{n}"})
        items.append({"type": "function_call_output", "call_id": f"call_{n}",
                      "output": "\n".join(f"row_{n}_{k}" for k in range(300))})
        out.append(list(items))
    return out


def _body(items: list[dict[str, Any]]) -> bytes:
    return json.dumps({"model": "gpt-5-codex", "instructions": "", "input": items,
                       "tools": [{"type": "function", "name": "exec_command"}], "store": False,
                       "stream": True, "prompt_cache_key": "thread-1"},
                      ensure_ascii=False, separators=(",", ":")).encode()


def test_a_codex_session_folds_calls_with_their_outputs_and_keeps_reasoning_bytes(
        repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTFORK_PROXY_ADAPTIVE", "0")
    monkeypatch.setenv("CONTEXTFORK_PROXY_BUDGET", "3000")
    reg, api = Registry(), responses.api()
    edited = 0
    for items in _session(30):
        body = _body(items)
        res = adapt(api, reg, repo.path, {}, body, deadline=time.monotonic() + 60)
        assert res.why is None, res.why
        if res.body is None:
            continue
        edited += 1
        text_in, text_out = body.decode(), res.body.decode()
        _, raws_in, _ = jsonspan.document(text_in, "input")
        top, raws_out, _ = jsonspan.document(text_out, "input")
        raw_in = {text_in[a:b] for _, (a, b) in raws_in}
        out_items = [v for v, _ in raws_out]
        assert responses.pair_faults(out_items) == set()
        for (value, (a, b)) in raws_out:
            raw = text_out[a:b]
            if raw in raw_in:
                continue
            if value.get("role") == "user":
                assert value["content"][0]["text"].startswith("[contextfork note: folded")
                continue
            assert value["type"] == "function_call_output", raw[:200]  # only a stub, in place
        calls = {i["call_id"] for i in out_items if i.get("type") == "function_call"}
        outs = {i["call_id"] for i in out_items if i.get("type") == "function_call_output"}
        assert calls == outs
        kept_reasoning = [text_out[a:b] for v, (a, b) in raws_out if v.get("type") == "reasoning"]
        assert all(r in raw_in for r in kept_reasoning)
        assert top["prompt_cache_key"][0] == "thread-1"
    assert edited > 10
