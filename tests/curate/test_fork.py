from __future__ import annotations

import json
from pathlib import Path

from contextfork.cold.api import fold_session
from contextfork.curate.api import run_verb
from contextfork.forkstub import STUB_PREFIX
from tests.curate.conftest import SESSION, synthetic_records
from tests.helpers import Repo, run_cli
from tests.transcript.builders import write_jsonl


def _fork(repo: Repo, t: Path) -> dict[str, object]:
    res = run_cli("fork", "--transcript", str(t), "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr + res.stdout
    env = res.json()
    env["data"]["problems"] = env["problems"]
    data: dict[str, object] = env["data"]
    return data


def test_fork_keeps_a_pinned_steps_results_raw(repo: Repo, tmp_path: Path) -> None:
    t = write_jsonl(tmp_path / "proj" / f"{SESSION}.jsonl", synthetic_records(4, lines=80))
    plain = _fork(repo, t)
    assert plain["stubbed"] == 4
    fold_session(t, repo=repo.path, session=SESSION)
    run_verb(repo.path, SESSION, "pin", {"step": 3})
    pinned = _fork(repo, t)
    assert pinned["stubbed"] == 3
    kept = [p["message"] for p in pinned["problems"] if p["code"] == "kept_large_result"]  # type: ignore[attr-defined]
    assert kept == ["step 3: held raw by the agent (pin or expand)"]
    fork = Path(str(pinned["fork"])).read_text(encoding="utf-8")
    assert "part 3 line 79: value_3_79" in fork and "part 2 line 79: value_2_79" not in fork


def test_fork_stubs_carry_the_agents_brief_of_their_steps(repo: Repo, tmp_path: Path) -> None:
    t = write_jsonl(tmp_path / "proj" / f"{SESSION}.jsonl", synthetic_records(4, lines=80))
    fold_session(t, repo=repo.path, session=SESSION)
    run_verb(repo.path, SESSION, "brief", {"steps": [2, 3], "text": "parts 2-3: the 0 rows"})
    data = _fork(repo, t)
    assert data["stubbed"] == 4  # a brief folds, it does not hold raw
    stubs = {}
    for line in Path(str(data["fork"])).read_text(encoding="utf-8").splitlines():
        content = json.loads(line).get("message", {}).get("content")
        for b in content if isinstance(content, list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                stubs[b["tool_use_id"]] = str(b["content"])
    said = "The agent's brief of this step: parts 2-3: the 0 rows"
    assert said in stubs["t2"]  # on the first step of the span, once
    assert all("brief" not in stubs[t] for t in ("t1", "t3", "t4"))
    assert all(s.startswith(STUB_PREFIX) for s in stubs.values())
