from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from contextfork.resources import load_schema
from tests.curate.conftest import SESSION
from tests.helpers import cli, run_cli


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
