"""``push|pull --with-cold``: a package carries the cold sessions it references to a teammate,
whose ``resume`` can then page the evidence in, byte-exact and verified."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextfork.cold.share import REF_PREFIX
from contextfork.package.export import ExportOptions, export
from tests.cold.sharekit import (
    QUESTION,
    SESSION,
    Machines,
    fold_scenario,
    indexed,
    node_file,
    node_of,
    rehash,
)
from tests.helpers import cli, git


def _export(m: Machines, sessions: list[str]) -> str:
    opts = ExportOptions(goal="share the evidence", session_id=sessions[0],
                         cold_store_refs=[f".contextfork/cold/{s}" for s in sessions])  # fmt: skip
    return export(m.a.path, opts).package_id


def _json(*args: str, cwd: Path, code: int = 0) -> dict[str, Any]:
    res = cli(*args, "--json", cwd=cwd)
    assert res.returncode == code, res.stdout + res.stderr
    out: dict[str, Any] = res.json()
    return out


def test_a_package_pushed_with_cold_resumes_in_b_and_pages_in_the_same_bytes(two: Machines) -> None:
    fold_scenario(two.a)
    pid = _export(two, [SESSION])
    pushed = _json("push", "origin", "--with-cold", cwd=two.a.path)["data"]
    assert SESSION in pushed["cold"]["sessions"] and pid in pushed["packages"]
    assert git(two.remote, "rev-parse", f"{REF_PREFIX}{SESSION}")
    pulled = _json("pull", "origin", "--with-cold", cwd=two.b.path)["data"]
    assert pulled["pulled"] == [pid] and pulled["cold"]["sessions"][SESSION]["indexed"] == 8
    brief = cli("resume", pid, cwd=two.b.path)
    assert brief.returncode == 0, brief.stdout + brief.stderr
    assert f"--session {SESSION}" in brief.stdout and f".contextfork/cold/{SESSION}" in brief.stdout
    # What the brief tells the new session to run pages in exactly what A would.
    scans = [
        _json("fold", "scan", QUESTION, "--session", SESSION, cwd=r.path)["data"]
        for r in (two.a, two.b)
    ]
    label = scans[1]["pulled"]  # B's blocks are labelled as pulled, never as B's own
    assert label.startswith("[pulled from origin (UNSIGNED") and scans[0]["pulled"] is None
    assert scans[0]["context"] == scans[1]["context"].replace(label + "\n", "") and [
        s["step_id"] for s in scans[1]["selected"]
    ] == [7, 5, 4]
    for step in (7, 5, 4):
        ha, hb = (_json("fold", "hydrate", str(step), "--session", SESSION, cwd=r.path)["data"]
                  for r in (two.a, two.b))  # fmt: skip
        assert hb["verified"] is True and hb["content"] == ha["content"]
        assert (
            hb["payload_sha256"] == ha["payload_sha256"] == node_of(two.a, step)["payload_sha256"]
        )
        assert node_file(two.b, step).read_bytes() == node_file(two.a, step).read_bytes()


def test_push_with_cold_refuses_a_secret_in_a_referenced_session_before_sending_anything(
    two: Machines,
) -> None:
    fold_scenario(two.a)
    node = node_of(two.a, 6)
    node["content"] += "token ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8\n"
    from contextfork.cold.node import node_bytes

    node_file(two.a, 6).write_bytes(node_bytes(rehash(node)))
    assert cli("fold", "index", "--rebuild", "--session", SESSION, cwd=two.a.path).returncode == 0
    _export(two, [SESSION])
    res = cli("push", "origin", "--with-cold", cwd=two.a.path)
    assert res.returncode == 1 and "secret" in res.stderr and res.stderr.count("\n") == 1
    assert git(two.remote, "for-each-ref", "refs/contextfork") == ""
    # Without --with-cold the package alone goes (the cold store is not read).
    assert cli("push", "origin", cwd=two.a.path).returncode == 0


def test_sessions_referenced_but_absent_are_reported_not_fatal(two: Machines) -> None:
    fold_scenario(two.a)
    pid = _export(two, [SESSION, "never-folded"])
    pushed = _json("push", "origin", "--with-cold", cwd=two.a.path)
    assert [p["path"] for p in pushed["problems"] if p["code"] == "cold_session_absent"] == [
        "never-folded"
    ]
    pulled = _json("pull", "origin", "--with-cold", cwd=two.b.path)
    assert pulled["data"]["pulled"] == [pid]
    assert [p["path"] for p in pulled["problems"] if p["code"] == "cold_session_absent"] == [
        "never-folded"
    ]
    assert len(indexed(two.b)) == 8
    again = _json("pull", "origin", "--with-cold", cwd=two.b.path)["data"]
    assert again["already_present"] == [pid] and again["cold"]["sessions"][SESSION]["indexed"] == 0
