"""Real Codex 0.169.0: a subagent spawned from `codex exec` gets its slice; SubagentStop folds it.

Codex runs subagents when ``[features] multi_agent = true``; the model calls ``spawn_agent`` in
the ``multi_agent_v1`` namespace and must ``wait_agent`` for the child (``codex exec`` ends with
the parent's turn). The mock here adds the namespace to those calls, answers the parent's
``wait_agent`` with the id ``spawn_agent`` returned, and answers every child request itself.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.clients import REPO_ROOT
from tests.e2e.mock_openai import Call, MockOpenAI, OAReply, input_text
from tests.e2e.mockserver import Request, Response
from tests.e2e.rigs import CodexRig

NAMESPACED = ("spawn_agent", "wait_agent")
FAILING = "cat zorblax-missing.txt"


def _meta(req: Request) -> dict[str, Any]:
    try:
        data = json.loads(req.headers.get("x-codex-turn-metadata") or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


class SubagentMock(MockOpenAI):
    def __init__(self) -> None:
        super().__init__()
        self.child_requests: list[dict[str, Any]] = []

    def _stream(self, reply: OAReply) -> Response:
        resp = super()._stream(reply)
        for name in NAMESPACED:
            resp.body = resp.body.replace(f'"name": "{name}"'.encode(),
                                          f'"name": "{name}", "namespace": "multi_agent_v1"'.encode())  # fmt: skip
        return resp

    def handle(self, req: Request) -> Response:
        if not req.path.split("?", 1)[0].endswith("/responses"):
            return super().handle(req)
        body = req.body if isinstance(req.body, dict) else {}
        if _meta(req).get("thread_source") == "subagent":
            self.child_requests.append(body)
            reply = OAReply(text="Child done.")
            self.answered.append((req, reply))
            return self._stream(reply)
        items = body.get("input") or []
        last = json.dumps(items[-1]) if items else ""
        if '"function_call_output"' in last and "agent_id" in last:
            ids = re.findall(r'agent_id\\\\?"\s*:\s*\\\\?"([0-9a-f-]{20,})', last)
            reply = OAReply(text="Waiting.", calls=[Call("wait_agent", {"targets": ids, "timeout_ms": 30000})])
            self.answered.append((req, reply))
            return self._stream(reply)
        return super().handle(req)


@pytest.fixture
def rig(tmp_path: Path, client_prefix: Path) -> Iterator[CodexRig]:
    with SubagentMock() as mock:
        rig = CodexRig.create(tmp_path, client_prefix, mock)
        rig.env["PYTHONPATH"] = str(REPO_ROOT)  # the hooks run this checkout's contextfork
        with (rig.codex_home / "config.toml").open("a") as f:
            f.write(f'\n[features]\nmulti_agent = true\n\n[projects."{rig.repo.path.resolve()}"]\n'
                    'trust_level = "trusted"\n')  # fmt: skip
        yield rig
    assert not mock.errors, mock.errors


def test_a_codex_subagent_gets_its_slice_and_is_folded_back(rig: CodexRig) -> None:
    rig.contextfork("hooks", "install", "--codex")
    rig.mock.script(
        OAReply(text="Checking.", calls=[Call("exec_command", {"cmd": FAILING})]),
        OAReply(text="Delegating.", calls=[Call("spawn_agent", {"message": "SUBTASK-cx: fix the zorblax reader"})]),
    )  # fmt: skip
    run = rig.run("exec", "--dangerously-bypass-hook-trust", "Fix the zorblax reader", timeout=150)
    assert run.returncode == 0, run
    mock: SubagentMock = rig.mock
    assert mock.child_requests, "the child never called the model"
    text = input_text(mock.child_requests[0])
    assert "contextfork slice of the parent session" in text and "for the default role (agent type default)" in text
    assert "Task: SUBTASK-cx: fix the zorblax reader" in text
    assert FAILING in text  # the parent's failed command
    log = rig.hooks_log()
    starts = [e for e in log if e.get("event") == "subagent-start"]
    stops = [e for e in log if e.get("event") == "subagent-stop"]
    assert starts and starts[0]["action"] == "inject", log
    assert stops and stops[0]["action"] == "fold", log
    sid, aid = stops[0]["session_id"], stops[0]["agent_id"]
    record = json.loads((rig.repo.path / ".contextfork" / "harness" / "subagents" / sid / f"{aid}.json").read_text())
    unit = json.loads(rig.contextfork("fold", "show", str(record["unit"]["step"]), "--session",
                                      record["unit"]["session"], "--json").stdout)["data"]["node"]  # fmt: skip
    assert hashlib.sha256(unit["content"].encode("utf-8")).hexdigest() == record["transcript_sha256"]
    [child] = (rig.codex_home / "sessions").rglob(f"rollout-*{aid}.jsonl")
    assert child.read_bytes().startswith(unit["content"].encode("utf-8"))
    assert record["steps"] >= 1
