"""In another clone the resume brief, ``fold scan`` and ``fold hydrate`` say the package's cold
store is not here and give the command that brings it (``fold pull``), instead of
"(no cold store)" with exit 0 or a hint to "fold add"."""

from __future__ import annotations

import json
from pathlib import Path

from tests.harness import cc_fixture
from tests.helpers import Repo, cli, clones_of_one_remote, run_cli

SID = cc_fixture.SESSION


def _compacted_in_a_pulled_in_b(tmp_path: Path) -> tuple[Repo, Repo, str]:
    _remote, a, b = clones_of_one_remote(tmp_path)
    transcript = cc_fixture.write(tmp_path / "t" / f"{SID}.jsonl", a.path)
    payload = {"session_id": SID, "transcript_path": str(transcript), "cwd": str(a.path),
               "hook_event_name": "PreCompact", "trigger": "auto"}  # fmt: skip
    res = run_cli("hook", "pre-compact", cwd=a.path, input=json.dumps(payload))
    assert res.returncode == 0, res.stderr
    assert (a.path / ".contextfork" / "cold" / SID).is_dir()
    # packages only, not the store (as before the store went with them by default)
    assert cli("push", "origin", "--without-cold", cwd=a.path).returncode == 0
    assert cli("pull", cwd=b.path).returncode == 0
    pid = sorted((b.path / ".contextfork" / "packages").iterdir())[0].name
    return a, b, pid


def test_resume_brief_in_another_clone_says_the_cold_store_is_absent_and_how_to_fetch_it(
    tmp_path: Path,
) -> None:
    a, b, pid = _compacted_in_a_pulled_in_b(tmp_path)
    brief = cli("resume", pid, cwd=b.path)
    assert brief.returncode == 0, brief.stderr
    assert "is NOT in this checkout" in brief.stdout
    assert f"contextfork fold pull origin --session {SID}" in brief.stdout
    # Once the store is pushed and pulled, the brief names it as present.
    assert cli("fold", "push", "origin", "--session", SID, cwd=a.path).returncode == 0
    assert cli("fold", "pull", "origin", "--session", SID, cwd=b.path).returncode == 0
    brief = cli("resume", pid, cwd=b.path)
    assert "NOT in this checkout" not in brief.stdout
    assert "(here): `contextfork fold scan" in brief.stdout


def test_fold_scan_and_hydrate_without_the_named_store_exit_4_naming_fold_pull(
    tmp_path: Path,
) -> None:
    _a, b, pid = _compacted_in_a_pulled_in_b(tmp_path)
    scan = cli("fold", "scan", "which port", "--session", SID, cwd=b.path)
    assert scan.returncode == 4, scan.stdout
    assert "(no cold store)" not in scan.stdout
    assert pid in scan.stderr and f"fold pull origin --session {SID}" in scan.stderr
    hydrate = cli("fold", "hydrate", "1", "--session", SID, cwd=b.path)
    assert hydrate.returncode == 4
    assert f"fold pull origin --session {SID}" in hydrate.stderr
    assert "fold add" not in hydrate.stderr


def test_fold_scan_with_no_store_and_no_package_naming_one_stays_quiet(repo: Repo) -> None:
    scan = cli("fold", "scan", "which port", "--session", "never-folded", cwd=repo.path)
    assert scan.returncode == 0 and "(no cold store)" in scan.stdout


def test_export_of_a_folded_session_names_its_cold_store(repo: Repo, tmp_path: Path) -> None:
    transcript = cc_fixture.write(tmp_path / "t" / f"{SID}.jsonl", repo.path)
    assert cli("fold", "session", "--transcript", str(transcript), "--session", SID,
               cwd=repo.path).returncode == 0  # fmt: skip
    out = cli("export", "--transcript", str(transcript), "--json", cwd=repo.path).json()["data"]
    meta = json.loads((Path(out["path"]) / "session_metadata.json").read_text())
    assert meta["cold_store_refs"] == [f".contextfork/cold/{SID}"]


def test_push_and_pull_carry_the_cold_store_a_package_names_by_default(tmp_path: Path) -> None:
    _remote, a, b = clones_of_one_remote(tmp_path)
    transcript = cc_fixture.write(tmp_path / "t" / f"{SID}.jsonl", a.path)
    payload = {"session_id": SID, "transcript_path": str(transcript), "cwd": str(a.path),
               "hook_event_name": "PreCompact", "trigger": "auto"}  # fmt: skip
    assert run_cli("hook", "pre-compact", cwd=a.path, input=json.dumps(payload)).returncode == 0
    pushed = cli("push", "origin", "--json", cwd=a.path)
    assert pushed.returncode == 0, pushed.stderr
    assert pushed.json()["data"]["cold"]  # the store went with the package
    pulled = cli("pull", "--json", cwd=b.path)
    assert pulled.returncode == 0, pulled.stderr
    assert (b.path / ".contextfork" / "cold" / SID).is_dir()
    hydrate = cli("fold", "hydrate", "2", "--session", SID, cwd=b.path)
    assert hydrate.returncode == 0, hydrate.stderr
