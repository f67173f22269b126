from __future__ import annotations

from pathlib import Path

from contextfork.cold.api import fold_session
from contextfork.curate.api import run_verb
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
