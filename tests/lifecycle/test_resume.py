from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from contextfork.errors import DriftError
from contextfork.package.export import ExportOptions, export
from contextfork.resume.api import resume
from contextfork.resume.state import state_path
from tests.helpers import Repo, cli, git, make_repo
from tests.lifecycle.conftest import meta_of, reseal
from tests.package.conftest import tree_sha_of


def _pkg(repo: Repo) -> Path:
    return export(repo.path, ExportOptions(goal="ship it")).path


def test_resume_in_place_reports_no_drift_and_prints_the_six_part_brief(exact_repo: Repo) -> None:
    pkg = _pkg(exact_repo)
    res = resume(exact_repo.path, None)
    assert res.exit_code == 0
    d = res.data["drift"]
    assert d["head"]["relation"] == "same" and d["tree_equal"] and not d["drifted"]
    for part in ("1. Active Goal", "2. Settled", "3. Working Tree", "4. Failed Approaches",
                 "5. Open Risks", "6. Immediate Next Action", "Drift report",
                 "No cold store was recorded with this package"):  # no fold scan that finds nothing
        assert part in res.text, part
    assert "ship it" in res.text
    assert state_path(pkg).is_file() and not (pkg / "state.json").exists()


def test_resume_reports_head_drift_when_branch_moved_ahead(history_repo: Repo) -> None:
    _pkg(history_repo)
    base = history_repo.head
    for i in (4, 5):
        history_repo.write("a.txt", f"{i}\n")
        history_repo.commit_all(f"c{i}")
    h = resume(history_repo.path, None, mark=False).data["drift"]["head"]
    assert (h["relation"], h["ahead"], h["behind"], h["merge_base"]) == ("ahead", 2, 0, base)


def test_resume_reports_head_drift_when_branch_moved_behind(history_repo: Repo) -> None:
    _pkg(history_repo)
    history_repo.git("reset", "-q", "--hard", "HEAD~2")
    h = resume(history_repo.path, None, mark=False).data["drift"]["head"]
    assert (h["relation"], h["ahead"], h["behind"]) == ("behind", 0, 2)
    assert h["merge_base"] == history_repo.head


def test_resume_reports_diverged_head_with_counts_merge_base_and_branch_change(
    history_repo: Repo,
) -> None:
    _pkg(history_repo)
    base = history_repo.git("rev-parse", "HEAD~1")
    history_repo.git("checkout", "-q", "-b", "other", "HEAD~1")
    for i in (7, 8):
        history_repo.write("b.txt", f"{i}\n")
        history_repo.commit_all(f"o{i}")
    d = resume(history_repo.path, None, mark=False).data["drift"]
    h = d["head"]
    assert (h["relation"], h["ahead"], h["behind"], h["merge_base"]) == ("diverged", 2, 1, base)
    assert d["branch_changed"] and d["branch_exported"] == "main" and d["branch_live"] == "other"


def test_resume_reports_files_changed_missing_and_new_since_export(exact_repo: Repo) -> None:
    _pkg(exact_repo)
    exact_repo.write("crlf.txt", b"edited after export\n")
    (exact_repo.path / "new" / "untracked.txt").unlink()
    exact_repo.write("later.txt", "new after export\n")
    d = resume(exact_repo.path, None, mark=False).data["drift"]
    assert d["changed"] == ["crlf.txt"]
    assert d["missing"] == ["new/untracked.txt"]
    assert d["new"] == ["later.txt"]
    assert d["head"]["relation"] == "same" and d["drifted"] and not d["tree_equal"]


def test_resume_strict_exits_5_on_drift_and_0_without(exact_repo: Repo) -> None:
    _pkg(exact_repo)
    assert cli("resume", "--strict", "--json", cwd=exact_repo.path).returncode == 0
    exact_repo.write("later.txt", "drift\n")
    res = cli("resume", "--strict", "--json", cwd=exact_repo.path)
    assert res.returncode == 5
    env = res.json()
    assert env["exit_code"] == 5 and env["data"]["drift"]["new"] == ["later.txt"]


def test_resume_warns_when_the_package_was_already_consumed(exact_repo: Repo) -> None:
    pkg = _pkg(exact_repo)
    first = resume(exact_repo.path, None, session_id="sess-1")
    assert "already_consumed" not in {p.code for p in first.problems}
    second = resume(exact_repo.path, None, session_id="sess-2")
    warn = [p for p in second.problems if p.code == "already_consumed"]
    assert warn and "sess-1" in warn[0].message and "already resumed" in second.text
    state = json.loads(state_path(pkg).read_text())
    assert [c["session_id"] for c in state["consumptions"]] == ["sess-1", "sess-2"]


def test_resume_refuses_a_tampered_package_with_exit_3(exact_repo: Repo) -> None:
    pkg = _pkg(exact_repo)
    f = pkg / "handoff.json"
    f.write_bytes(f.read_bytes().replace(b"ship it", b"ship IT"))
    res = cli("resume", "--json", cwd=exact_repo.path)
    assert res.returncode == 3 and res.json()["data"]["valid"] is False
    assert not state_path(pkg).exists()


def test_resume_refuses_a_truncated_package(exact_repo: Repo) -> None:
    pkg = _pkg(exact_repo)
    patch = pkg / "git_diff.patch"
    patch.write_bytes(patch.read_bytes()[: patch.stat().st_size // 2])
    res = resume(exact_repo.path, None, apply=True)
    assert res.exit_code == 3
    assert {"hash_mismatch", "size_mismatch"} <= {p.code for p in res.problems}


def test_resume_refuses_a_patch_that_targets_git_hooks(exact_repo: Repo, tmp_path: Path) -> None:
    pkg = _pkg(exact_repo)
    evil = (
        b"diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout\n"
        b"new file mode 100755\n--- /dev/null\n+++ b/.git/hooks/post-checkout\n"
        b"@@ -0,0 +1,2 @@\n+#!/bin/sh\n+touch /tmp/pwned\n"
    )
    (pkg / "git_diff.patch").write_bytes(evil)
    reseal(pkg)
    clone = tmp_path / "victim"
    git(tmp_path, "clone", "-q", str(exact_repo.path), str(clone))
    res = cli("resume", str(pkg), "--apply", "--json", cwd=clone)
    assert res.returncode == 3  # changed since export: refused before anything else
    assert "changed since it was exported" in res.stdout
    res = cli("resume", str(pkg), "--apply", "--trust", "--json", cwd=clone)  # accepted by hand
    assert res.returncode == 3
    assert any(p["code"] == "unsafe_path" and ".git" in p["message"] for p in res.json()["problems"])
    assert not (clone / ".git" / "hooks" / "post-checkout").exists()


def test_resume_refuses_a_symlink_planted_in_untracked(exact_repo: Repo) -> None:
    pkg = _pkg(exact_repo)
    snap = pkg / "untracked" / "new" / "untracked.txt"
    snap.unlink()
    os.symlink("/etc/passwd", snap)
    res = resume(exact_repo.path, None, apply=True)
    assert res.exit_code == 3
    assert "symlink_in_package" in {p.code for p in res.problems}


def test_resume_of_a_package_from_another_repository_reports_unknown_head(
    exact_repo: Repo, tmp_path: Path
) -> None:
    pkg = _pkg(exact_repo)
    other = make_repo(tmp_path / "other")
    res = resume(other.path, str(pkg), mark=False)
    assert res.exit_code == 0
    assert res.data["drift"]["head"]["relation"] == "unknown"
    assert "does not exist here" in res.text
    assert "head_missing" in {p.code for p in res.problems if p.severity == "warning"}
    out = cli("resume", str(pkg), "--apply", cwd=other.path)
    assert out.returncode == 5 and "is not the recorded HEAD" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_resume_apply_reproduces_the_exported_tree_on_a_clean_checkout(
    exact_repo: Repo, tmp_path: Path
) -> None:
    pkg = _pkg(exact_repo)
    meta = meta_of(pkg)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(exact_repo.path), str(clone))
    git(clone, "checkout", "-q", "--detach", meta["head"])
    res = resume(Path(clone), str(pkg), apply=True)
    assert res.exit_code == 0, res.problems
    assert res.data["applied"]["exact"] and res.data["applied"]["written"]
    assert tree_sha_of(clone) == meta["worktree_tree_sha"]
    assert (clone / "crlf.txt").read_bytes() == b"one\r\ntwo changed\r\nthree\r\n"
    assert os.access(clone / "script.sh", os.X_OK)
    assert res.data["drift"]["files_drifted"] is False
    again = resume(Path(clone), str(pkg), apply=True, mark=False)
    assert again.data["applied"]["already"] is True


def test_resume_apply_refuses_a_dirty_tree_and_a_different_head(
    exact_repo: Repo, tmp_path: Path
) -> None:
    pkg = _pkg(exact_repo)
    clone = Repo(tmp_path / "clone")
    git(tmp_path, "clone", "-q", str(exact_repo.path), str(clone.path))
    clone.write("gone.txt", "local edit\n")
    with pytest.raises(DriftError, match="not clean"):
        resume(clone.path, str(pkg), apply=True)
    clone.git("checkout", "-q", "--", "gone.txt")
    clone.write("x.txt", "x\n")
    clone.commit_all("moved on")
    with pytest.raises(DriftError, match="not the recorded HEAD"):
        resume(clone.path, str(pkg), apply=True)
    assert clone.git("status", "--porcelain") == ""


def test_resume_apply_never_overwrites_a_file_it_did_not_create_without_force(
    exact_repo: Repo, tmp_path: Path
) -> None:
    pkg = _pkg(exact_repo)
    meta = meta_of(pkg)
    clone = Repo(tmp_path / "clone")
    git(tmp_path, "clone", "-q", str(exact_repo.path), str(clone.path))
    clone.git("checkout", "-q", "--detach", meta["head"])
    clone.write("new/untracked.txt", "mine, not the package's\n")
    with pytest.raises(DriftError, match="not created"):
        resume(clone.path, str(pkg), apply=True)
    assert (clone.path / "new/untracked.txt").read_text() == "mine, not the package's\n"
    assert clone.git("diff", "--stat") == ""  # nothing applied before the refusal
    res = resume(clone.path, str(pkg), apply=True, force=True)
    assert res.data["applied"]["overwritten"] == ["new/untracked.txt"]
    assert "OVERWRITTEN" in res.text and res.data["applied"]["exact"]


def test_resume_brief_turns_failed_approaches_into_do_not_retry_lines(repo: Repo, tmp_path: Path) -> None:
    handoff = tmp_path / "h.json"
    handoff.write_text(json.dumps({"failed_approaches": [
        {"approach": "pin numpy 1.x", "barred_action": "downgrade numpy",
         "error_excerpt": "ImportError: numpy.core"}]}))
    assert cli("export", "--handoff", str(handoff), cwd=repo.path).returncode == 0
    res = cli("resume", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert "DO NOT RETRY: downgrade numpy — it failed before: pin numpy 1.x" in res.stdout


def test_resume_detects_a_same_size_edit_made_in_the_same_second_as_the_index(repo: Repo) -> None:
    """Racy git: the temp index must keep the real index's mtime or the edit looks clean."""
    import time

    _pkg(repo)
    repo.write("src/app.py", "def main():\n    return 2\n")  # same size as the committed file
    time.sleep(1.1)
    d = resume(repo.path, None, mark=False).data["drift"]
    assert d["changed"] == ["src/app.py"] and not d["tree_equal"]


def test_resume_apply_restores_untracked_symlinks_inside_the_repo_and_refuses_escaping_ones(
    repo: Repo, tmp_path: Path
) -> None:
    repo.write("docs/real.md", "# real\n")
    os.symlink("real.md", repo.path / "docs" / "alias.md")
    os.symlink("/etc/passwd", repo.path / "escape-link")
    pkg = _pkg(repo)
    meta = meta_of(pkg)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo.path), str(clone))
    res = resume(Path(clone), str(pkg), apply=True)
    applied = res.data["applied"]
    assert os.readlink(clone / "docs" / "alias.md") == "real.md"
    assert not os.path.lexists(clone / "escape-link")
    assert any("escape-link" in n and "outside" in n for n in applied["not_restored"])
    # the exported tree includes the escaping link, so the proof says "not exact" and why
    assert applied["exact"] is False
    os.symlink("/etc/passwd", clone / "escape-link")
    assert tree_sha_of(clone) == meta["worktree_tree_sha"]
