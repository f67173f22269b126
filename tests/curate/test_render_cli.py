from __future__ import annotations

from pathlib import Path

from contextfork.cold.api import fold_session
from contextfork.curate.api import run_verb
from tests.curate.conftest import SESSION, synthetic_records
from tests.helpers import Repo, cli
from tests.transcript.builders import write_jsonl


def _folded_steps(repo: Repo, transcript: Path) -> set[int]:
    res = cli("render", "--transcript", str(transcript), "--policy", "epoch", "--json",
              cwd=repo.path)
    assert res.returncode == 0, res.stderr
    return {r["step"] for r in res.json()["data"]["removals"] if r["kind"] == "fold"}


def test_render_honours_the_sessions_pins_and_briefs(repo: Repo, tmp_path: Path) -> None:
    t = write_jsonl(tmp_path / f"{SESSION}.jsonl", synthetic_records(40))
    plain = _folded_steps(repo, t)
    assert {5, 6, 7} <= plain
    fold_session(t, repo=repo.path, session=SESSION)
    run_verb(repo.path, SESSION, "pin", {"step": 5})
    run_verb(repo.path, SESSION, "brief", {"steps": [6, 7], "text": "parts 6 and 7: all zeros"})
    res = cli("render", "--transcript", str(t), "--policy", "epoch", "--json", cwd=repo.path)
    data = res.json()["data"]
    folded = {r["step"] for r in data["removals"] if r["kind"] == "fold"}
    assert 5 not in folded and plain - {5} == folded
    notes = [m["content"] for m in data["messages"] if m["kind"] == "note"]
    assert any("s6 (agent brief): parts 6 and 7: all zeros" in n for n in notes)
    assert data["decisions_revision"] == 2


def _epoch_bill(repo: Repo, transcript: Path, *extra: str) -> dict[str, object]:
    res = cli("replay", "--transcript", str(transcript), "--policy", "epoch", "--json", *extra,
              cwd=repo.path)
    assert res.returncode == 0, res.stderr
    data: dict[str, object] = res.json()["data"]
    return data


def test_replay_bills_the_session_with_its_curation_honoured(repo: Repo, tmp_path: Path) -> None:
    t = write_jsonl(tmp_path / f"{SESSION}.jsonl", synthetic_records(40))
    plain = _epoch_bill(repo, t)
    assert plain["decisions_revision"] is None
    fold_session(t, repo=repo.path, session=SESSION)
    run_verb(repo.path, SESSION, "pin", {"steps": [2, 30]})  # held raw: the prompt grows
    pinned = _epoch_bill(repo, t)
    assert pinned["decisions_revision"] == 1

    def prompt(d: dict[str, object]) -> int:
        (p,) = d["policies"]  # type: ignore[misc]
        return int(p["prompt_tokens"])

    assert prompt(pinned) > prompt(plain)
    # another session's name: its (absent) curation, so the plain bill
    other = _epoch_bill(repo, t, "--session", "someone-else")
    assert other["decisions_revision"] is None and prompt(other) == prompt(plain)
