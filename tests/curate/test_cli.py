from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from contextfork.cold.api import fold_session
from contextfork.resources import load_schema
from tests.curate.conftest import SESSION, synthetic_records
from tests.helpers import Repo, cli, run_cli
from tests.transcript.builders import write_jsonl


def test_context_cli_pins_a_span_and_status_shows_it(folded: Path) -> None:
    res = cli("context", "pin", "--steps", "2-3", "--session", SESSION, "--json", cwd=folded)
    assert res.returncode == 0, res.stderr
    env = res.json()
    jsonschema.validate(env, load_schema("envelope.schema.json"))
    assert env["command"] == "context pin" and env["data"]["steps"] == [2, 3]
    st = cli("context", "status", "--session", SESSION, "--json", cwd=folded).json()["data"]
    assert [s["step"] for s in st["steps"] if s["pinned"]] == [2, 3]
    human = cli("context", "status", "--session", SESSION, cwd=folded)
    assert "2 pinned" in human.stdout


def test_context_cli_takes_the_tools_argument_object(folded: Path) -> None:
    args = json.dumps({"steps": [4, 5], "text": "four and five: nothing new"})
    res = cli("context", "brief", "--args", args, "--session", SESSION, "--json", cwd=folded)
    assert res.returncode == 0, res.stderr
    assert res.json()["data"]["decisions"]["briefs"][0]["steps"] == [4, 5]


def test_context_cli_errors_are_one_line_with_exit_codes(folded: Path) -> None:
    res = run_cli("context", "pin", "--step", "99", "--session", SESSION, cwd=folded)
    assert res.returncode == 4 and len(res.stderr.strip().splitlines()) == 1
    res = run_cli("context", "pin", "--session", SESSION, cwd=folded)
    assert res.returncode == 2 and "name a step" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    res = run_cli("context", "pin", "--args", "[1]", "--session", SESSION, "--json", cwd=folded)
    assert res.returncode == 2 and res.json()["ok"] is False
    path = folded / ".contextfork" / "cold" / SESSION / "curation.json"
    run_cli("context", "pin", "--step", "2", "--session", SESSION, cwd=folded)
    path.write_text(path.read_text().replace('"revision": 1', '"revision": 7'))
    res = run_cli("context", "status", "--session", SESSION, cwd=folded)
    assert res.returncode == 3 and "does not verify" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_context_cli_peek_prints_the_verified_slice(folded: Path) -> None:
    res = cli("context", "peek", "--step", "3", "--max-chars", "60", "--session", SESSION,
              cwd=folded)
    assert res.returncode == 0
    head, body = res.stdout.split("\n", 1)
    assert "verified" in head and len(body.rstrip("\n")) <= 60


def test_status_with_the_transcript_lists_the_folds_of_the_live_view(
    repo: Repo, tmp_path: Path
) -> None:
    t = write_jsonl(tmp_path / f"{SESSION}.jsonl", synthetic_records(40))
    fold_session(t, repo=repo.path, session=SESSION)
    base = ["context", "status", "--session", SESSION, "--transcript", str(t), "--json"]
    view = cli(*base, cwd=repo.path).json()["data"]["view"]
    assert view["folds"] and view["at_step"] == 42
    folded = {p for f in view["folds"] for p in range(f["positions"][0], f["positions"][1] + 1)}
    assert 5 in folded
    cli("context", "pin", "--step", "5", "--session", SESSION, cwd=repo.path)
    cli("context", "brief", "--steps", "6-7", "--text", "six, seven: fine", "--session", SESSION,
        cwd=repo.path)
    after = cli(*base, cwd=repo.path).json()["data"]["view"]
    folded = {p for f in after["folds"] for p in range(f["positions"][0], f["positions"][1] + 1)}
    assert 5 not in folded
    briefed = [f for f in after["folds"] if f["brief"]]
    assert len(briefed) == 1 and briefed[0]["positions"][0] == 6
    human = cli("context", "status", "--session", SESSION, "--transcript", str(t), cwd=repo.path)
    assert "agent brief" in human.stdout and "folds" in human.stdout
    assert cli(*base, cwd=repo.path).json()["data"]["view"] == after  # deterministic
    bad = cli("context", "status", "--session", SESSION, "--policy", "epoch", cwd=repo.path)
    assert bad.returncode == 2 and "need a transcript" in bad.stderr
