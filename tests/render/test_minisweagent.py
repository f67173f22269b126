"""mini-swe-agent's own loop with its deterministic model, real shell commands in a temp dir."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def msa(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("MSWEA_SILENT_STARTUP", "1")
    monkeypatch.setenv("MSWEA_GLOBAL_CONFIG_DIR", str(tmp_path / "mswea-config"))
    tm = pytest.importorskip(
        "minisweagent.models.test_models",
        reason="mini-swe-agent is the 'swe' extra: pip install -e '.[dev,swe]'",
    )

    return tm


def _source(n: int) -> str:
    lines = []
    for i in range(1, n + 1):
        lines.append(f"def handler_{i}(request):" if i % 10 == 1 else
                     f"    payload_{i} = transform(request, field_{i})  # line {i}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("render_policy", ["refold", "epoch"])
def test_agent_sends_the_rendered_view_and_answers_restore(
    msa: Any, tmp_path: Path, render_policy: str
) -> None:
    from minisweagent.environments.local import LocalEnvironment

    from contextfork.harness.minisweagent import ContextforkAgent

    work = tmp_path / "work"
    work.mkdir()
    (work / "app.py").write_text(_source(80))
    commands = [
        "cat -n app.py",
        "wc -l app.py",
        "grep -c handler app.py",
        "cat -n app.py | head -60",
        "echo one",
        "echo two",
        "echo three",
        "restore 4",
        "peek 1 --offset 0 --bytes 40",
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    ]
    # The replies keep mentioning handler_21 (first shown by step 1), so step 1 stays live and
    # is not folded; step 4 repeats most of it and gets stubbed instead.
    outputs = [msa.make_output(f"THOUGHT: step {i + 1}, handler_21 matters.\n\n```bash\n{c}\n```",
                               [{"command": c}]) for i, c in enumerate(commands)]

    class Recording(msa.DeterministicModel):  # type: ignore[misc]
        def __init__(self, **kw: Any) -> None:
            super().__init__(**kw)
            self.calls: list[list[dict[str, Any]]] = []

        def query(self, messages: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
            self.calls.append(json.loads(json.dumps(messages)))
            out: dict[str, Any] = super().query(messages, **kw)
            return out

    model = Recording(outputs=outputs)
    env = LocalEnvironment(cwd=str(work))
    agent = ContextforkAgent(
        model, env,
        system_template="You are a test agent.",
        instance_template="Task: {{task}}",
        step_limit=20, cost_limit=0, render_policy=render_policy, render_adaptive=False,
        render_store_dir=str(tmp_path / "cold" / "run-render"),
    )
    result = agent.run("inspect app.py")
    assert result["exit_status"] == "Submitted"
    assert len(model.calls) == len(commands)
    assert model.calls == agent.sent  # what the model got is the rendered view

    # mini-swe-agent's own history stays complete: both full file views are in it, raw.
    history = [m for m in agent.messages if m.get("role") == "user"]
    assert sum("payload_30 = transform" in str(m["content"]) for m in history) >= 3

    # Call 9 (b_9 = 6): step 4's repeated file view is behind the boundary: only step 1's copy
    # is still raw. Both policies stub the repeated lines and keep the signatures; the stubbed
    # step is then smaller than a brief would be, so it is not folded as well.
    view9 = model.calls[8]
    text9 = "\n".join(m["content"] for m in view9[:-1])
    assert text9.count("payload_30 = transform") == 1
    assert "already shown in step 1" in text9 and "restore 4" in text9
    assert text9.count("def handler_21(request):") == 2  # the stub keeps signatures
    assert "[contextfork note:" not in text9

    # restore 4 was answered from the cold store (verified) and appended at the end, not run.
    stored = sorted(p.name for p in (tmp_path / "cold" / "run-render" / "cold_nodes").iterdir())
    assert stored[:9] == [f"step_{i:06d}.json" for i in range(1, 10)]
    obs = [str(m["content"]) for m in agent.messages if "contextfork restore step 4" in
           str(m.get("content", ""))]
    assert len(obs) == 1 and "verified" in obs[0] and "payload_30 = transform" in obs[0]
    assert "contextfork restore step 4" in view9[-1]["content"]
    peeks = [str(m["content"]) for m in agent.messages if "contextfork peek 1" in
             str(m.get("content", ""))]
    assert len(peeks) == 1 and "bytes 0-40" in peeks[0]

    # Between boundary moves, each call extends the previous one (prefix kept).
    for a, b in zip(model.calls[5:7], model.calls[6:8], strict=True):  # b_6 = b_7 = b_8 = 3
        assert b[: len(a) - 1] == a[: len(a) - 1]
