"""Real pi 0.73.1: a child pi started by the subagent example extension gets the parent's slice.

pi has no built-in subagents; its example extension (shipped in the npm package,
``examples/extensions/subagent``) runs each as ``pi --mode json -p --no-session … "Task: …"``
with the parent's environment. contextfork's project extension is loaded in the child too; the
parent's names its session in ``CONTEXTFORK_PI_PARENT`` and the child injects the slice before
its first model call (docs/slice.md).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.clients import REPO_ROOT
from tests.e2e.mock_anthropic import MockAnthropic, Reply, ToolUse, request_text
from tests.e2e.pi_rig import PiRig

EXAMPLE = Path("node_modules/@mariozechner/pi-coding-agent/examples/extensions/subagent")
FAILING = "cat zorblax-missing.txt"


@pytest.fixture
def pi(tmp_path: Path, client_prefix: Path) -> Iterator[PiRig]:
    with MockAnthropic() as mock:
        rig = PiRig.create(tmp_path, client_prefix, mock)
        rig.env["PYTHONPATH"] = str(REPO_ROOT)  # the extension runs this checkout's contextfork
        yield rig
    assert not mock.errors, mock.errors


def _parent(body: dict[str, Any]) -> bool:
    return "SUBTASK-pi" not in json.dumps(body.get("messages", [])[:1])


def _child_text(pi: PiRig, client_prefix: Path, agent_md: str, agent: str) -> str:
    """Run the parent with the subagent example extension and one project agent; the text of the
    child pi's first request."""
    pi.contextfork("hooks", "install", "--pi")
    ext = pi.repo.path / ".pi" / "extensions" / "subagent"
    ext.mkdir(parents=True)
    for name in ("index.ts", "agents.ts"):
        shutil.copy(client_prefix / EXAMPLE / name, ext / name)
    agents = pi.repo.path / ".pi" / "agents"
    agents.mkdir()
    (agents / f"{agent}.md").write_text(agent_md)
    task = {"agent": agent, "task": "SUBTASK-pi fix the zorblax reader", "agentScope": "project",
            "confirmProjectAgents": False}  # fmt: skip
    pi.mock.script(
        Reply(text="Checking.", tool_uses=[ToolUse("bash", {"command": FAILING})], when=_parent),
        Reply(text="Delegating.", tool_uses=[ToolUse("subagent", task)], when=_parent),
    )
    run = pi.run("Fix the zorblax reader")
    assert run.returncode == 0, run
    bodies = pi.mock.main_requests()
    children = [b for b in bodies if not _parent(b)]
    assert children, "the subagent extension did not start a child pi"
    assert not any("contextfork slice of the parent" in request_text(b) for b in bodies if _parent(b))
    return request_text(children[0])


def test_a_child_pi_gets_the_parents_slice_before_its_first_call(pi: PiRig, client_prefix: Path) -> None:
    text = _child_text(pi, client_prefix, "---\nname: worker\ndescription: does the work\n---\nYou are a worker.\n",
                       "worker")  # fmt: skip
    assert "Task: SUBTASK-pi fix the zorblax reader" in text
    assert "contextfork slice of the parent session" in text and f"$ {FAILING}" in text
    assert "for the default role (agent type worker)" in text
    assert any(e.get("event") == "subagent-start" and e.get("action") == "inject" for e in pi.log())


def test_a_child_pi_started_for_a_scout_agent_gets_the_explorer_slice(pi: PiRig, client_prefix: Path) -> None:
    md = "---\nname: scout\ndescription: recon\ntools: read, grep, find, ls, bash\n---\nYou are a scout.\n"
    text = _child_text(pi, client_prefix, md, "scout")
    assert "for the explorer role (agent type scout)" in text
    assert f"$ {FAILING}" in text
