"""A remote's cold refs are untrusted; a local store is pushed only when it verifies and is clean.

Every refused pull must leave the local store exactly as it was (no node file, no index row, no
verified tracking ref) and exit 3; every refused push must leave the remote untouched.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork.cold.node import node_bytes
from contextfork.cold.share import REF_PREFIX, quarantine_ref, tracking_ref
from tests.cold.sharekit import (
    QUESTION,
    SESSION,
    Machines,
    blob,
    fold_scenario,
    forge,
    forge_nodes,
    indexed,
    machines,
    node_file,
    node_line,
    node_of,
    raw_tree,
    rehash,
    remote_tree,
    state_files,
    store,
    subtree,
)
from tests.helpers import cli, git, run_cli


@pytest.fixture
def two(tmp_path: Path) -> Machines:
    """A has folded and pushed the reference scenario; B has its own step 20 of the session."""
    m = machines(tmp_path)
    fold_scenario(m.a)
    assert cli("fold", "push", cwd=m.a.path).returncode == 0
    r = cli("fold", "add", "20", "B's own step", "--session", SESSION, input="b only\n", cwd=m.b.path)
    assert r.returncode == 0
    return m


def _refused_pull(m: Machines, *, code: int = 3, env: dict[str, str] | None = None) -> str:
    before, rows = state_files(m.b), indexed(m.b)
    res = cli("fold", "pull", "--session", SESSION, cwd=m.b.path, env=env)
    assert res.returncode == code, res.stdout + res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert state_files(m.b) == before and indexed(m.b) == rows
    assert m.b.git("for-each-ref", "refs/contextfork/remote-cold", "refs/contextfork/quarantine") == ""
    return res.stderr


def _with_node(m: Machines, step: int, node: dict[str, object]) -> None:
    lines = [ln for ln in remote_tree(m.a) if not ln.endswith(f"step_{step:06d}.json")]
    forge_nodes(m.a, [*lines, node_line(step, node, m.a)])


def test_pull_refuses_a_tampered_node_and_writes_nothing(two: Machines) -> None:
    node = node_of(two.a, 5)
    node["content"] = node["content"].replace("5433", "6543")
    _with_node(two, 5, node)
    assert "payload_sha256 does not match" in _refused_pull(two)
    assert not node_file(two.b, 1).exists()


def test_pull_refuses_a_rehashed_node_of_another_session(two: Machines) -> None:
    node = node_of(two.a, 5)
    node["session_id"] = "someone-else"
    _with_node(two, 5, rehash(node))
    assert "belongs to session 'someone-else'" in _refused_pull(two)


def test_pull_refuses_a_rehashed_node_that_breaks_the_node_schema(two: Machines) -> None:
    node = node_of(two.a, 5)
    node["intents"] = "postgresql.port"  # a string where the index expects a list
    _with_node(two, 5, rehash(node))
    assert "not a valid cold node" in _refused_pull(two)


def test_pull_refuses_an_oversize_object_before_reading_it(two: Machines) -> None:
    big = b"{" + b" " * 300_000  # not even JSON: reading it would fail differently
    lines = [*remote_tree(two.a), f"100644 blob {blob(two.a, big)}\tstep_000009.json"]
    forge_nodes(two.a, lines)
    err = _refused_pull(two, env={"CONTEXTFORK_COLD_PULL_MAX_BYTES": "200000"})
    assert "exceed the pull limit of 200000 bytes" in err and "no object was read" in err


def test_pull_refuses_an_oversize_tree_before_listing_it(two: Machines) -> None:
    b = blob(two.a, b"x")
    junk = [f"100644 blob {b}\tjunk_{i:04d}" for i in range(200)]
    forge(two.a, [f"040000 tree {subtree(two.a, remote_tree(two.a))}\tcold_nodes", *junk])
    err = _refused_pull(two)
    assert "tree '/' holds" in err and "nothing listed" in err


HOSTILE = {
    "dot-dot": ("cold_nodes", "100644 blob {b}\t.."),
    "dot-git": ("cold_nodes", "100644 blob {b}\t.git"),
    "nested-dir": ("cold_nodes", "040000 tree {t}\tdeeper"),
    "stray-name": ("cold_nodes", "100644 blob {b}\tstep_1.json"),
    "step-zero": ("cold_nodes", "100644 blob {b}\tstep_000000.json"),
    "non-ascii-digits": ("cold_nodes", "100644 blob {b}\tstep_\u0660\u0660\u0660\u0660\u0660\u0661.json"),
    "executable": ("cold_nodes", "100755 blob {b}\tstep_000009.json"),
    "symlink": ("cold_nodes", "120000 blob {b}\tstep_000009.json"),
    "gitlink": ("cold_nodes", "160000 commit {c}\tstep_000009.json"),
    "non-utf8": ("cold_nodes", "100644 blob {b}\tstep_\udcff.json"),
    "top-level-file": ("root", "100644 blob {b}\tREADME.md"),
    "top-level-dir": ("root", "040000 tree {t}\tother_nodes"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_pull_refuses_hostile_tree_entries(two: Machines, case: str) -> None:
    where, template = HOSTILE[case]
    b = blob(two.a, node_bytes(node_of(two.a, 1)))
    t = subtree(two.a, [f"100644 blob {b}\tstep_000001.json"])
    line = template.format(b=b, t=t, c=two.a.head)
    nodes = remote_tree(two.a)
    if where == "cold_nodes":
        forge_nodes(two.a, [*nodes, line])
    else:
        forge(two.a, [f"040000 tree {subtree(two.a, nodes)}\tcold_nodes", line])
    err = _refused_pull(two)
    assert "tree entry" in err
    if case == "symlink":
        assert "is a symlink" in err
    if case == "gitlink":
        assert "gitlink" in err


@pytest.mark.parametrize("name", [b"/abs", b"a/../../x", b"step_000001.json"])
def test_pull_refuses_raw_trees_git_mktree_would_not_write(two: Machines, name: bytes) -> None:
    """Slashes inside one entry name, and the same name twice, written as raw tree bytes."""
    b = blob(two.a, node_bytes(node_of(two.a, 1)))
    entries = [(b"100644", b"step_000001.json", b), (b"100644", name, b)]
    inner = raw_tree(two.a, sorted(entries, key=lambda e: e[1]))
    forge(two.a, [f"040000 tree {inner}\tcold_nodes"])
    err = _refused_pull(two)
    assert ("twice" if name == b"step_000001.json" else "tree entry") in err


def test_pull_refuses_a_conflicting_step_and_writes_nothing(two: Machines) -> None:
    cli("fold", "add", "3", "B folded its own step 3", "--session", SESSION, input="other\n", cwd=two.b.path)
    err = _refused_pull(two)
    assert "step 3 conflicts" in err
    assert not node_file(two.b, 1).exists()
    assert json.loads(node_file(two.b, 3).read_bytes())["content"] == "other\n"


def test_pull_refuses_a_node_whose_file_is_gone_but_whose_index_row_differs(two: Machines) -> None:
    cli("fold", "add", "3", "B folded its own step 3", "--session", SESSION, input="other\n", cwd=two.b.path)
    node_file(two.b, 3).unlink()
    assert "local index recorded another identity" in _refused_pull(two)


def test_an_interrupted_pull_publishes_nothing_and_the_next_pull_completes(two: Machines) -> None:
    res = run_cli("fold", "pull", "--session", SESSION, cwd=two.b.path,
                  env={"CONTEXTFORK_TEST_KILL_AT": "cold-pull-between-phases"})  # fmt: skip
    assert res.returncode == -9
    assert node_file(two.b, 7).exists()  # phase 1 ran: the files are there, unindexed
    assert sorted(indexed(two.b)) == [20]
    scan = cli("fold", "scan", QUESTION, "--session", SESSION, "--json", cwd=two.b.path)
    assert scan.json()["data"]["selected"] == []
    hydrate = cli("fold", "hydrate", "7", "--session", SESSION, cwd=two.b.path)
    assert hydrate.returncode == 3 and "orphan" in hydrate.stderr
    assert two.b.git("for-each-ref", "refs/contextfork/remote-cold") == ""
    again = cli("fold", "pull", "--session", SESSION, "--json", cwd=two.b.path)
    assert again.returncode == 0, again.stderr
    assert again.json()["data"]["sessions"][SESSION]["adopted"] == 8
    assert sorted(indexed(two.b)) == [*range(1, 9), 20]
    assert cli("fold", "validate", "--session", SESSION, cwd=two.b.path).returncode == 0
    assert two.b.git("rev-parse", tracking_ref("origin", SESSION))


def test_a_refused_session_does_not_stop_the_others(two: Machines) -> None:
    fold_scenario(two.a, "s2")
    assert cli("fold", "push", "--session", "s2", cwd=two.a.path).returncode == 0
    node = node_of(two.a, 5)
    node["content"] = "tampered"
    _with_node(two, 5, node)
    res = cli("fold", "pull", "--json", cwd=two.b.path)
    assert res.returncode == 3
    assert list(res.json()["data"]["sessions"]) == ["s2"]
    assert [p["path"] for p in res.json()["problems"]] == [SESSION]
    assert sorted(indexed(two.b)) == [20] and len(indexed(two.b, "s2")) == 8
    assert two.b.git("for-each-ref", "--format=%(refname)", "refs/contextfork/quarantine") == ""
    assert quarantine_ref("origin", SESSION).startswith("refs/contextfork/quarantine/")


def _plant_secret(m: Machines, step: int = 6) -> str:
    """A node holding a live token that verifies (folded by an older writer, or edited and
    re-hashed), adopted by the index as ``fold index --rebuild`` would."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    node = node_of(m.a, step)
    node["content"] += f"export GITHUB_TOKEN={token}\n"
    node_file(m.a, step).write_bytes(node_bytes(rehash(node)))
    assert cli("fold", "index", "--rebuild", "--session", SESSION, cwd=m.a.path).returncode == 0
    return token


def test_push_refuses_a_secret_in_a_node_payload_and_sends_nothing(tmp_path: Path) -> None:
    m = machines(tmp_path)
    fold_scenario(m.a)
    _plant_secret(m)
    res = cli("fold", "push", cwd=m.a.path)
    assert res.returncode == 1 and res.stderr.count("\n") == 1
    assert "secret" in res.stderr and "step_000006.json" in res.stderr and "nothing pushed" in res.stderr
    assert git(m.remote, "for-each-ref", "refs/contextfork") == ""
    assert m.a.git("for-each-ref", "refs/contextfork") == ""


def test_push_rescans_a_node_changed_after_the_last_push(two: Machines) -> None:
    _plant_secret(two)
    res = cli("fold", "push", cwd=two.a.path)
    assert res.returncode == 1 and "secret" in res.stderr
    assert git(two.remote, "rev-parse", f"{REF_PREFIX}{SESSION}") == two.a.git("rev-parse", f"{REF_PREFIX}{SESSION}")


def test_push_refuses_a_tampered_or_rewritten_local_node(tmp_path: Path) -> None:
    m = machines(tmp_path)
    fold_scenario(m.a)
    node = node_of(m.a, 2)
    node["content"] = "5435"
    node_file(m.a, 2).write_bytes(node_bytes(node))
    res = cli("fold", "push", cwd=m.a.path)
    assert res.returncode == 3 and "does not match" in res.stderr
    node_file(m.a, 2).write_bytes(node_bytes(rehash(node)))
    res = cli("fold", "push", cwd=m.a.path)
    assert res.returncode == 3 and "recorded at fold time" in res.stderr
    assert git(m.remote, "for-each-ref", "refs/contextfork") == ""


def test_push_refuses_a_symlinked_node_file(tmp_path: Path) -> None:
    m = machines(tmp_path)
    fold_scenario(m.a)
    target = tmp_path / "elsewhere.json"
    target.write_bytes(node_file(m.a, 2).read_bytes())
    node_file(m.a, 2).unlink()
    node_file(m.a, 2).symlink_to(target)
    res = cli("fold", "push", cwd=m.a.path)
    assert res.returncode == 3 and "symlink" in res.stderr
    assert store(m.a).exists()


def test_a_push_killed_before_sending_is_completed_by_the_next_one(tmp_path: Path) -> None:
    m = machines(tmp_path)
    fold_scenario(m.a)
    res = run_cli("fold", "push", cwd=m.a.path, env={"CONTEXTFORK_TEST_KILL_AT": "cold-push-before-send"})
    assert res.returncode == -9
    made = m.a.git("rev-parse", f"{REF_PREFIX}{SESSION}")
    assert git(m.remote, "for-each-ref", "refs/contextfork") == ""
    again = cli("fold", "push", "--json", cwd=m.a.path)
    assert again.returncode == 0, again.stderr
    assert again.json()["data"]["sessions"][SESSION]["new_commit"] is False  # the one made before
    assert git(m.remote, "rev-parse", f"{REF_PREFIX}{SESSION}") == made


def test_pull_refuses_a_session_ref_that_names_a_blob(two: Machines) -> None:
    b = blob(two.a, b"not a commit\n")
    two.a.git("push", "-q", "origin", f"+{b}:{REF_PREFIX}{SESSION}")
    err = _refused_pull(two)
    assert "is not a commit" in err
