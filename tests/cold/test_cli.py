"""The `contextfork fold` commands as real subprocesses: envelopes, exit codes, stdin."""

from __future__ import annotations

import json
from pathlib import Path

from contextfork.resources import validate_against_schema
from tests.helpers import Repo, cli


def _ok(res_json: dict[str, object]) -> None:
    assert validate_against_schema("envelope.schema.json", res_json) == []


def test_fold_add_scan_hydrate_evict_show_status_validate_via_cli(repo: Repo) -> None:
    r = cli("fold", "add", "1", "Set the PostgreSQL port to 5433", "--json", input="port: 5433\n", cwd=repo.path)
    assert r.returncode == 0, r.stderr
    env = r.json()
    _ok(env)
    assert env["data"]["status"] == "written"
    assert (repo.path / ".contextfork" / "cold" / "default" / "cold_nodes" / "step_000001.json").is_file()
    payload = repo.write("out.txt", "ERROR KeyError: 'billing'\n")
    r = cli("fold", "add", "2", "loader crashed", "--file", str(payload), "--json", cwd=repo.path)
    assert r.returncode == 0, r.stderr
    r = cli("fold", "scan", "which postgres port?", "--json", cwd=repo.path)
    env = r.json()
    _ok(env)
    assert [p["step_id"] for p in env["data"]["selected"]] == [1]
    r = cli("fold", "scan", "KeyError", "--context", cwd=repo.path)
    assert "<cold-step step=\"2\"" in r.stdout
    r = cli("fold", "hydrate", "step_000001", "--json", cwd=repo.path)
    assert r.json()["data"]["content"] == "port: 5433\n"
    r = cli("fold", "evict", "1", "--json", cwd=repo.path)
    assert r.json()["data"]["status"] == "evicted"
    r = cli("fold", "show", "2", cwd=repo.path)
    assert "KeyError" in r.stdout
    r = cli("fold", "recall", "port", "--json", cwd=repo.path)
    assert r.json()["data"]["hits"][0]["step_id"] == 1
    r = cli("fold", "status", "--json", cwd=repo.path)
    assert r.json()["data"]["nodes"] == 2
    r = cli("fold", "validate", "--json", cwd=repo.path)
    assert r.returncode == 0 and r.json()["ok"] is True
    r = cli("fold", "index", "--json", cwd=repo.path)
    assert r.returncode == 0 and r.json()["data"]["nodes"] == 2


def test_cli_exit_codes_and_one_line_errors(repo: Repo, tmp_path: Path) -> None:
    cli("fold", "add", "1", "first", input="a", cwd=repo.path)
    r = cli("fold", "show", "7", cwd=repo.path)
    assert r.returncode == 4 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    r = cli("fold", "show", "../../etc/passwd", cwd=repo.path)
    assert r.returncode == 2
    r = cli("fold", "add", "1", "first", input="different", cwd=repo.path)
    assert r.returncode == 1 and "immutable" in r.stderr
    r = cli("fold", "add", "2", "x", "--session", "../evil", input="a", cwd=repo.path)
    assert r.returncode == 2
    node = repo.path / ".contextfork" / "cold" / "default" / "cold_nodes" / "step_000001.json"
    data = json.loads(node.read_bytes())
    data["content"] = "tampered"
    node.write_text(json.dumps(data))
    r = cli("fold", "hydrate", "1", "--json", cwd=repo.path)
    assert r.returncode == 3 and r.json()["exit_code"] == 3
    r = cli("fold", "validate", cwd=repo.path)
    assert r.returncode == 3
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    r = cli("fold", "status", cwd=outside)
    assert r.returncode == 4


def test_session_from_option_and_environment(repo: Repo) -> None:
    cli("fold", "add", "1", "a", "--session", "alpha", input="x", cwd=repo.path)
    cli("fold", "add", "1", "b", input="y", cwd=repo.path, env={"CONTEXTFORK_SESSION": "beta"})
    base = repo.path / ".contextfork" / "cold"
    assert (base / "alpha" / "cold_nodes" / "step_000001.json").is_file()
    assert (base / "beta" / "cold_nodes" / "step_000001.json").is_file()
    r = cli("fold", "scan", "anything", "--repo", str(repo.path), "--session", "missing", "--json")
    assert r.returncode == 0 and r.json()["data"]["store"] == "absent"


def test_a_session_id_with_a_trailing_newline_is_refused(repo: Repo) -> None:
    r = cli("fold", "add", "1", "x", "--session", "alpha\n", input="a", cwd=repo.path)
    assert r.returncode == 2, r.stdout
    assert "not a plain name" in r.stderr
    cold = repo.path / ".contextfork" / "cold"
    assert not cold.exists() or all("\n" not in p.name for p in cold.iterdir())
