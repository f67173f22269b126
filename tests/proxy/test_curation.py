"""The agent's curation decisions apply live behind the proxy: a step the model pins (through
the MCP tool or `contextfork context`, in another process) comes back raw on the next call."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest

from contextfork.curate.api import run_verb
from contextfork.proxy import anthropic
from contextfork.proxy.adapt import adapt
from contextfork.proxy.conversation import Registry
from tests.helpers import Repo
from tests.proxy.recorded import body_of


def _history(calls: int, *, same_output: bool = False) -> list[dict[str, Any]]:
    """``calls`` Bash calls of 200 rows each; ``same_output``: every call prints the same rows
    (from the second on, a dedupe stub replaces them)."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
    for i in range(calls):
        k = 0 if same_output else i
        msgs.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Listing {i}."},
            {"type": "tool_use", "id": f"toolu_{i:04d}", "name": "Bash",
             "input": {"command": f"seq {k} 200"}}]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i:04d}",
             "content": "\n".join(f"row_{k}_{n}" for n in range(200))}]})
    return msgs


def test_a_pinned_step_comes_back_raw_on_the_next_call(
        repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTFORK_PROXY_ADAPTIVE", "0")
    monkeypatch.setenv("CONTEXTFORK_PROXY_BUDGET", "1500")
    reg, api = Registry(), anthropic.api()
    headers = {"x-claude-code-session-id": "0b5f7a8e-1111-4222-8333-944455556666"}
    res = None
    for n in range(2, 16):
        res = adapt(api, reg, repo.path, headers, body_of(_history(n)),
                    deadline=time.monotonic() + 60)
    assert res is not None and res.body is not None
    sent = json.loads(res.body)["messages"]
    assert "toolu_0001" not in json.dumps(sent), "step 2 should be folded by now"
    store = res.conv.session.store_session()

    run_verb(repo.path, store, "pin", {"step": 2})  # what the model's tool call does
    again = adapt(api, reg, repo.path, headers, body_of(_history(16)),
                  deadline=time.monotonic() + 60)

    assert again.why is None and again.body is not None
    text = json.dumps(json.loads(again.body)["messages"])
    assert "toolu_0001" in text and "row_1_199" in text, "the pinned step is not raw again"
    assert anthropic.pair_faults(json.loads(again.body)["messages"]) == set()


def test_a_dedupe_stub_names_the_models_own_way_back_not_restore(
        repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTFORK_PROXY_ADAPTIVE", "0")
    reg, api = Registry(), anthropic.api()
    headers = {"x-claude-code-session-id": "0b5f7a8e-1111-4222-8333-944455556666"}
    tools = [{"name": "Bash", "input_schema": {"type": "object"}}]
    bodies = []
    for n in range(2, 9):
        res = adapt(api, reg, repo.path, headers, body_of(_history(n, same_output=True), tools=tools),
                    deadline=time.monotonic() + 60)
        if res.body is not None:
            bodies.append(json.loads(res.body)["messages"])
    assert bodies, "nothing was deduplicated"
    text = json.dumps(bodies[-1])
    assert "already shown in" in text, "no dedupe stub in the last call"
    assert "; restore " not in text
    assert re.search(r"contextfork context peek --session \S+ --step \d+` gives it back", text)
    first = json.dumps(bodies[0])
    stub = re.search(r"\[contextfork: [^\]]*\]", first)
    assert stub and stub.group(0) in text, "an earlier stub changed bytes"
