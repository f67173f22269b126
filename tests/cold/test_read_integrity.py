"""Reads check what validate checks: a node re-hashed after an edit, a garbage index, an edited
policy, and the CONF-12 states (a node file not in the index, an index entry without a file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork.cold.layout import DEFAULT_POLICY
from contextfork.cold.node import artifact_sha256_of, node_bytes, projection_of
from contextfork.hashing import canonical_sha256, sha256_bytes
from tests.helpers import Repo, cli

SESSION = "s1"


def _store(repo: Repo) -> Path:
    return repo.path / ".contextfork" / "cold" / SESSION


def _fold(repo: Repo, step: int, summary: str, payload: str) -> None:
    r = cli("fold", "add", str(step), summary, "--session", SESSION, input=payload, cwd=repo.path)
    assert r.returncode == 0, r.stderr


def _node_path(repo: Repo, step: int) -> Path:
    return _store(repo) / "cold_nodes" / f"step_{step:06d}.json"


def _rehash(node: dict[str, object]) -> dict[str, object]:
    """Recompute all three identities after an edit, like an attacker who knows the format."""
    content = str(node["content"]).encode()
    node["payload_sha256"], node["payload_bytes"] = sha256_bytes(content), len(content)
    node["projection_sha256"] = canonical_sha256(projection_of(node))
    node["artifact_sha256"] = artifact_sha256_of(node)
    return node


def _cli(repo: Repo, *args: str) -> tuple[int, str, str]:
    r = cli("fold", *args, "--session", SESSION, cwd=repo.path)
    return r.returncode, r.stdout, r.stderr


@pytest.fixture
def folded(repo: Repo) -> Repo:
    _fold(repo, 1, "Set the PostgreSQL port to 5433", "port: 5433\n")
    _fold(repo, 2, "Applied migration V12", "CREATE TABLE billing (id int);\n")
    return repo


def test_a_node_rehashed_after_an_edit_is_refused_by_show_hydrate_and_scan(folded: Repo) -> None:
    p = _node_path(folded, 1)
    node = json.loads(p.read_bytes())
    node["content"] = "port: 6666\n"
    p.write_bytes(node_bytes(_rehash(node)))
    code, _out, err = _cli(folded, "validate")
    assert code == 3
    for args in (("show", "1"), ("hydrate", "1"), ("scan", "PostgreSQL port")):
        code, out, err = _cli(folded, *args)
        assert code == 3, (args, out, err)
        assert "6666" not in out
        assert len(err.strip().splitlines()) == 1 and "index" in err


def test_conf12_a_node_file_not_in_the_index_is_an_orphan_and_refused(folded: Repo) -> None:
    """Scenario A of the IPCF reference conformance suite: hydrate raises OrphanedNodeError."""
    import sqlite3

    conn = sqlite3.connect(_store(folded) / "index.sqlite3")
    conn.execute("DELETE FROM nodes WHERE step_id=2")
    conn.commit()
    conn.close()
    code, out, err = _cli(folded, "hydrate", "2")
    assert code == 3 and "orphan" in err and "CREATE TABLE billing" not in out
    res = cli("fold", "validate", "--json", "--session", SESSION, cwd=folded.path).json()
    assert "orphan_node" in {p["code"] for p in res["problems"]}
    assert _cli(folded, "index", "--rebuild")[0] == 0  # adopts the verified file
    code, out, _err = _cli(folded, "hydrate", "2")
    assert code == 0 and "CREATE TABLE billing" in out


def test_conf12_an_index_entry_whose_node_file_is_missing_is_a_broken_reference(
    folded: Repo,
) -> None:
    """Scenario B: hydrate raises BrokenReferenceError; a step nobody knows stays not found."""
    _node_path(folded, 2).unlink()
    for args in (("hydrate", "2"), ("show", "2")):
        code, _out, err = _cli(folded, *args)
        assert code == 3 and "broken reference" in err, err
    assert _cli(folded, "hydrate", "999")[0] == 4  # CONF-10
    res = cli("fold", "validate", "--json", "--session", SESSION, cwd=folded.path).json()
    assert "missing_node" in {p["code"] for p in res["problems"]}


def test_a_garbage_index_is_one_clear_line_and_fold_index_rebuild_recovers(folded: Repo) -> None:
    sqlite = _store(folded) / "index.sqlite3"
    for extra in ("-wal", "-shm"):
        Path(str(sqlite) + extra).unlink(missing_ok=True)
    sqlite.write_bytes(b"this is not a database" * 100)
    for args in (("hydrate", "1"), ("scan", "port"), ("status",), ("recall", "port")):
        code, out, err = _cli(folded, *args)
        assert code == 3, (args, out, err)
        assert "internal error" not in err and "fold index --rebuild" in err
        assert len(err.strip().splitlines()) == 1
    code, out, err = _cli(folded, "index")
    assert code == 3 and "--rebuild" in err  # plain `fold index` does not discard it silently
    code, out, err = _cli(folded, "index", "--rebuild")
    assert code == 0, err
    assert "rebuilt" in out and "2 nodes" in out
    code, out, _err = _cli(folded, "hydrate", "1")
    assert code == 0 and "port: 5433" in out
    assert _cli(folded, "validate")[0] == 0


def test_fold_index_does_not_launder_a_rehashed_node_into_the_index(folded: Repo) -> None:
    p = _node_path(folded, 1)
    node = json.loads(p.read_bytes())
    node["content"] = "port: 6666\n"
    p.write_bytes(node_bytes(_rehash(node)))
    code, _out, _err = _cli(folded, "index")
    assert code == 3
    assert _cli(folded, "hydrate", "1")[0] == 3


def test_fold_index_reports_a_node_file_that_does_not_verify_as_damage(folded: Repo) -> None:
    """A truncated node file is skipped, named, and the command exits 3, not 0."""
    p = _node_path(folded, 1)
    p.write_bytes(p.read_bytes()[:20])
    for args in (("index",), ("index", "--rebuild")):
        code, out, err = _cli(folded, *args)
        assert code == 3, (args, out, err)
        assert "indexed 1 nodes; skipped 1 (step_000001.json)" in out
        assert "Traceback" not in err


def test_fold_index_refuses_to_drop_a_step_whose_node_file_is_gone(folded: Repo) -> None:
    """Dropping the index entry of a lost node file would make the damaged store validate as
    ok: a plain `fold index` refuses (exit 3, nothing changes); `--rebuild` accepts the loss."""
    _node_path(folded, 2).unlink()
    code, out, err = _cli(folded, "index")
    assert code == 3 and out == ""
    assert err.strip().splitlines() == [
        "contextfork fold index: error: 1 node file(s) the index recorded are missing: "
        "step_000002.json; nothing rebuilt (`contextfork fold index --rebuild` drops them "
        "from the index)"
    ]
    assert "broken reference" in _cli(folded, "hydrate", "2")[2]  # the index still lists it
    assert _cli(folded, "validate")[0] != 0
    code, out, _err = _cli(folded, "index", "--rebuild")
    assert code == 0 and "indexed 1 nodes; skipped 0" in out
    assert _cli(folded, "hydrate", "2")[0] == 4


def _write_policy(repo: Repo, **changes: object) -> None:
    policy = {**DEFAULT_POLICY, **changes}
    (_store(repo) / "hydration_policy.json").write_text(json.dumps(policy))


def test_a_policy_beyond_the_schema_maxima_is_refused(folded: Repo) -> None:
    big = "word " * 12000
    _fold(folded, 3, "a huge log", big)
    _write_policy(folded, per_call_token_cap=100000, per_turn_token_cap=100000)
    code, out, err = _cli(folded, "hydrate", "3")
    assert code == 3 and len(out) < 1000
    assert "per_call_token_cap" in err and "maximum" in err
    assert _cli(folded, "validate")[0] != 0


def test_a_policy_that_differs_from_the_default_is_announced(folded: Repo) -> None:
    _write_policy(folded, per_call_token_cap=6000)
    code, out, _err = _cli(folded, "hydrate", "1")
    assert code == 0 and "differs from the default" in out and "per_call_token_cap 6000" in out
    res = cli("fold", "hydrate", "2", "--json", "--session", SESSION, cwd=folded.path).json()
    assert any(p["code"] == "policy_not_default" for p in res["problems"])
    code, out, _err = _cli(folded, "status")
    assert code == 0 and "differs from the default" in out
    _write_policy(folded)
    code, out, _err = _cli(folded, "status")
    assert "differs from the default" not in out


def test_the_next_fold_session_adopts_the_orphan_a_killed_fold_left(repo: Repo, tmp_path: Path) -> None:
    """A fold killed between writing a node and indexing it leaves an orphan: the next fold of
    the same session verifies it and indexes it instead of refusing (CONF-12 is about serving)."""
    import sqlite3

    from tests.harness import cc_fixture

    transcript = cc_fixture.write(tmp_path / "s.jsonl", repo.path)
    args = ("fold", "session", "--transcript", str(transcript), "--session", SESSION)
    assert cli(*args, cwd=repo.path).returncode == 0
    conn = sqlite3.connect(_store(repo) / "index.sqlite3")
    conn.execute("DELETE FROM nodes WHERE step_id=1")
    conn.execute("DELETE FROM step_keys WHERE step_id=1")
    conn.commit()
    conn.close()
    res = cli(*args, cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert cli("fold", "validate", "--session", SESSION, cwd=repo.path).returncode == 0
    assert _cli(repo, "hydrate", "1")[0] == 0
