"""What one pre-commit checkpoint costs (issue 27: <= +120 ms per commit on the 5,000-file bench
repo, bench/commit_bench.py): the git processes it starts and the heavy modules it imports,
counted on the real hook process, plus the checkpoint an edit still gets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import contextfork
from contextfork import layout
from contextfork.lifecycle import githooks
from contextfork.package import store
from tests.helpers import Repo, clean_env

SOURCE = str(Path(contextfork.__file__).resolve().parents[1])


def _hook(repo: Repo, tmp_path: Path, **extra: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    trace = tmp_path / "git-trace.txt"
    env = clean_env({"CONTEXTFORK_SERVER": "off", "PYTHONPATH": SOURCE, "GIT_TRACE": str(trace),
                     "GIT_INDEX_FILE": ".git/index", **extra})  # fmt: skip
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.run([sys.executable, "-m", "contextfork.lifecycle.gitrun", "pre-commit"],
                          cwd=repo.path, env=env, capture_output=True, text=True, check=False)  # fmt: skip
    return proc, trace


def _state(repo: Repo) -> None:
    repo.write("README.md", "# staged\n")
    repo.git("add", "README.md")
    repo.write("src/app.py", "def main():\n    return 2\n")  # unstaged
    for i in range(5):
        repo.write(f"notes/n{i}.txt", f"untracked {i}\n")


def test_a_checkpoint_starts_six_git_processes_and_never_asks_where_the_repository_is(
    repo: Repo, tmp_path: Path
) -> None:
    # Was 9: the repository was located twice and the git dir asked a third time, and the
    # tree id went through add -A (a loose blob per changed file; now update-index --info-only).
    # Then 7, one rev-parse: the early start already knows the top and the git dir (issue 27).
    _state(repo)
    proc, trace = _hook(repo, tmp_path)
    assert proc.returncode == 0 and "checkpoint" in proc.stderr, proc.stderr
    calls = [ln.split("built-in: git ", 1)[1] for ln in trace.read_text().splitlines() if "built-in: git " in ln]
    assert len(calls) <= 6, calls
    assert not [c for c in calls if c.startswith(("rev-parse", "add "))], calls


def test_a_repository_whose_work_tree_is_configured_elsewhere_is_located_by_git(
    repo: Repo, tmp_path: Path
) -> None:
    _state(repo)
    repo.git("config", "include.path", "no-such-file")  # could set core.worktree: ask git
    proc, trace = _hook(repo, tmp_path)
    assert proc.returncode == 0 and "checkpoint" in proc.stderr, proc.stderr
    calls = [ln.split("built-in: git ", 1)[1] for ln in trace.read_text().splitlines() if "built-in: git " in ln]
    assert sum(c.startswith("rev-parse") for c in calls) == 1, calls


def test_the_hook_process_imports_no_template_engine_model_library_or_cli(
    repo: Repo, tmp_path: Path
) -> None:
    _state(repo)
    proc, _trace = _hook(repo, tmp_path, PYTHONPROFILEIMPORTTIME="1")
    assert proc.returncode == 0, proc.stderr
    loaded = {ln.split("|")[-1].strip() for ln in proc.stderr.splitlines() if ln.startswith("import time:")}
    assert "contextfork.package.export" in loaded  # the import report is the hook's own
    assert not {"jinja2", "pydantic", "typer", "click", "rich"} & loaded
    # Nothing new to write (the untracked files are linked from the first checkpoint): no
    # thread pool (concurrent.futures, ~9 ms) and no syncfs decision (ctypes) either.
    again, _trace = _hook(repo, tmp_path, PYTHONPROFILEIMPORTTIME="1")
    assert again.returncode == 0, again.stderr
    loaded = {ln.split("|")[-1].strip() for ln in again.stderr.splitlines() if ln.startswith("import time:")}
    assert "contextfork.package.export" in loaded
    assert not {"concurrent.futures", "ctypes", "logging"} & loaded


def test_the_hook_process_loads_none_of_the_modules_a_checkpoint_does_without(
    repo: Repo, tmp_path: Path
) -> None:
    # issue 27, CPU of every cold checkpoint: dataclasses (with inspect, ast, dis, tokenize)
    # ~7 ms (contextfork.records instead); tempfile and shutil (random, bz2, lzma) ~4 ms
    # (atomic's own temp names); OpenSSL through hashlib ~3.5 ms for small files (the
    # interpreter's SHA-256); typing ~2 ms (annotations only); datetime ~1.4 ms (time); and a
    # checkpoint has no handoff input: no package.claims.
    _state(repo)
    proc, _trace = _hook(repo, tmp_path, PYTHONPROFILEIMPORTTIME="1")
    assert proc.returncode == 0 and "checkpoint" in proc.stderr, proc.stderr
    loaded = {ln.split("|")[-1].strip() for ln in proc.stderr.splitlines() if ln.startswith("import time:")}
    assert "contextfork.package.export" in loaded
    unneeded = {"dataclasses", "inspect", "typing", "datetime", "tempfile", "shutil", "random",
                "hashlib", "_hashlib", "contextfork.package.claims"}  # fmt: skip
    assert not unneeded & loaded, unneeded & loaded


def test_an_edit_between_two_commits_gets_its_own_checkpoint_with_the_new_bytes(repo: Repo) -> None:
    githooks.install(repo.path)
    env = clean_env({"CONTEXTFORK_SERVER": "off", "PYTHONPATH": SOURCE})
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    repo.write("kept.txt", "unchanged untracked\n")
    repo.write("edited.txt", "first\n")
    repo.write("a.txt", "a\n")
    repo.git("add", "a.txt")
    subprocess.run(["git", "commit", "-qm", "one"], cwd=repo.path, env=env, check=True)
    repo.write("edited.txt", "second, longer\n")
    repo.write("b.txt", "b\n")
    repo.git("add", "b.txt")
    subprocess.run(["git", "commit", "-qm", "two"], cwd=repo.path, env=env, check=True)
    first, second = store.list_packages(repo.path)
    assert (second.path / "untracked" / "edited.txt").read_text() == "second, longer\n"
    assert (first.path / "untracked" / "edited.txt").read_text() == "first\n"
    same = [os.lstat(p / "untracked" / "kept.txt").st_ino for p in (first.path, second.path)]
    assert same[0] == same[1]  # unchanged: linked, not copied
    meta = json.loads((second.path / "session_metadata.json").read_text())
    assert meta["trigger"] == "pre-commit" and meta["head"] == repo.git("rev-parse", "HEAD~1")
    note = repo.git("notes", "--ref=contextfork", "show", "HEAD")
    assert f"contextfork-checkpoint: {second.package_id}" in note


def test_the_hook_starts_status_first_and_diffs_only_the_paths_it_listed(repo: Repo, tmp_path: Path) -> None:
    # gitstate.early: status runs while the hook imports the export (~45 ms of a cold start);
    # the work-tree diff then names status's paths instead of stat'ing every tracked file again.
    _state(repo)
    proc, trace = _hook(repo, tmp_path)
    assert proc.returncode == 0, proc.stderr
    calls = [ln.split("built-in: git ", 1)[1] for ln in trace.read_text().splitlines() if "built-in: git " in ln]
    assert calls[0].startswith("status --porcelain=v2 "), calls
    diffs = [c for c in calls if c.startswith("diff HEAD ")]
    assert len(diffs) == 1 and diffs[0].endswith(" -- README.md src/app.py"), calls


def test_a_checkpoint_of_a_clean_tree_runs_no_diff(repo: Repo, tmp_path: Path) -> None:
    repo.write("notes/n.txt", "untracked only\n")
    proc, trace = _hook(repo, tmp_path)
    assert proc.returncode == 0 and "checkpoint" in proc.stderr, proc.stderr
    calls = [ln.split("built-in: git ", 1)[1] for ln in trace.read_text().splitlines() if "built-in: git " in ln]
    assert not [c for c in calls if c.startswith("diff")], calls
    (package,) = store.list_packages(repo.path)
    assert (package.path / "git_diff.patch").read_bytes() == b""


def test_the_early_start_loads_no_more_than_os_and_threading() -> None:
    code = ("import sys; import contextfork.gitstate.early;"
            "print(' '.join(m for m in ('subprocess', 'dataclasses', 'pathlib', 'json', 'struct',"
            " 'contextfork.gitstate.core', 'contextfork.errors') if m in sys.modules))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], env={**clean_env(), "PYTHONPATH": SOURCE},
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == ""


def test_a_package_from_the_early_reads_is_the_package_of_the_usual_ones(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextfork.gitstate import early
    from contextfork.package.export import ExportOptions, export

    _state(repo)
    monkeypatch.chdir(repo.path)
    started = early.start_reads()
    assert started is not None
    with_early = export(repo.path, ExportOptions(), reads=started)
    usual = export(repo.path, ExportOptions())
    for name in ("git_diff.patch", "git_index.patch", "git_status.json", "untracked_manifest.json"):
        assert (with_early.path / name).read_bytes() == (usual.path / name).read_bytes(), name


def test_a_linked_worktree_or_a_subdirectory_still_gets_its_checkpoint(repo: Repo, tmp_path: Path) -> None:
    # .git is a file there: the early start declines and the export starts git itself.
    linked = tmp_path / "linked"
    repo.git("worktree", "add", "-q", str(linked))
    (linked / "new.txt").write_text("x\n")
    proc, _trace = _hook(Repo(linked), tmp_path)
    assert proc.returncode == 0 and "checkpoint" in proc.stderr, proc.stderr
    assert len(store.list_packages(linked)) == 1


def test_a_checkpoint_flushes_each_file_and_directory_once(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 27: the note and its key share one flush of their directory (it was flushed after
    # each), and the package's directories and the provenance record's are flushed with the
    # package's files. Every fsync waits on the journal: under load each cost milliseconds.
    _state(repo)
    githooks.install(repo.path)  # its own writes happen before counting
    flushed: list[str] = []
    real = os.fsync

    def counting(fd: int) -> None:
        flushed.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    package_id = githooks.pre_commit(repo.path)
    hooks_dir = str(layout.pending_note(repo.path).parent)
    assert flushed.count(hooks_dir) == 1, flushed
    assert len(flushed) == len(set(flushed)), flushed
    assert str(layout.packages_dir(repo.path)) in flushed
    note = layout.pending_note(repo.path).read_text()
    assert package_id in note
