"""contextfork.layout owns repo discovery and every name under ``.contextfork/``."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

import contextfork
from contextfork import layout
from contextfork.errors import NotFoundError, UnsafeStateDir, UsageError
from tests.helpers import Repo, clean_env, git, make_repo

PKG = Path(contextfork.__file__).parent


def _git_toplevel(where: Path) -> Path | None:
    proc = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=where, env=clean_env(),
                          capture_output=True, text=True, check=False)  # fmt: skip
    top = proc.stdout.strip()
    return Path(top) if proc.returncode == 0 and top else None


def test_find_repo_agrees_with_git_for_repos_worktrees_submodules_and_symlinks(
    tmp_path: Path,
) -> None:
    main = make_repo(tmp_path / "main")
    main.write("src/deep/x.txt", "x\n")
    main.git("worktree", "add", "-q", str(tmp_path / "linked"), "-b", "side")
    sub = make_repo(tmp_path / "subsrc")
    main.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub.path), "mod")
    inner = make_repo(main.path / "nested")  # an untracked repository inside another
    (tmp_path / "plain").mkdir()
    (tmp_path / "link").symlink_to(main.path / "src", target_is_directory=True)
    starts = [
        main.path, main.path / "src" / "deep", tmp_path / "linked", main.path / "mod",
        inner.path, tmp_path / "link", tmp_path / "plain", main.path / ".git",
        main.path / ".git" / "refs",
    ]  # fmt: skip
    assert (main.path / "mod" / ".git").is_file() and (tmp_path / "linked" / ".git").is_file()
    for start in starts:
        assert layout.find_repo(start) == _git_toplevel(start), start
    assert layout.find_repo(main.path / "src" / "deep" / "x.txt") == main.path.resolve()


def test_a_dot_git_that_is_no_repository_does_not_make_a_work_tree(tmp_path: Path) -> None:
    (tmp_path / "fake" / ".git").mkdir(parents=True)  # no HEAD: git walks past it too
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / ".git").write_text("not a gitdir line\n")
    assert layout.find_repo(tmp_path / "fake") is None
    assert layout.find_repo(tmp_path / "odd") is None


def test_repo_root_names_a_missing_or_non_repository_start(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no such directory"):
        layout.repo_root(tmp_path / "missing")
    with pytest.raises(NotFoundError, match="not a git repository"):
        layout.repo_root(tmp_path)
    assert layout.optional_repo(None, tmp_path) is None
    with pytest.raises(NotFoundError):
        layout.optional_repo(tmp_path, tmp_path)


def test_every_state_location_refuses_a_symlinked_state_dir(repo: Repo, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo.path / layout.STATE_DIR).symlink_to(outside, target_is_directory=True)
    where = [
        layout.packages_dir, layout.cold_root, layout.hooks_log, layout.fork_records_dir,
        layout.policy_file, layout.view_dir, layout.journal_dir, layout.git_hooks_config,
        layout.pending_note, layout.pending_note_key,
        lambda r: layout.cold_store(r, "s"), lambda r: layout.fork_record(r, "s"),
        lambda r: layout.footprint_file(r, "s"), lambda r: layout.install_record(r, "k"),
    ]  # fmt: skip
    for name in where:
        with pytest.raises(UnsafeStateDir):
            name(repo.path)


def test_session_named_locations_refuse_a_hostile_session_id(repo: Repo) -> None:
    for name in (layout.cold_store, layout.fork_record, layout.footprint_file):
        with pytest.raises(UsageError):
            name(repo.path, "../escape")


def test_the_cache_dir_follows_xdg_cache_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "c"))
    assert layout.cache_dir("statusline") == tmp_path / "c" / "contextfork" / "statusline"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert layout.cache_dir() == tmp_path / "home" / ".cache" / "contextfork"


def test_the_state_dir_is_excluded_from_git_status_on_first_write(repo: Repo) -> None:
    layout.ensure_state_dir(repo.path)
    layout.hooks_log(repo.path).parent.mkdir(parents=True)
    layout.hooks_log(repo.path).write_text("x\n")
    assert git(repo.path, "status", "--porcelain") == ""


# A path literal: no whitespace (prose such as help text mentions the directory in words) and
# the state dir as a whole path component.
_STATE_PATH = re.compile(r"(^|/)\.contextfork(/|$)")


def _hand_written_state_paths(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }  # fmt: skip
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
            if not any(c.isspace() for c in text) and _STATE_PATH.search(text):
                found.append(f"{path.name}:{node.lineno}: {text!r}")
    return found


def test_no_module_but_layout_writes_a_state_dir_path_by_hand() -> None:
    found = [
        hit
        for path in sorted(PKG.rglob("*.py"))
        if path != PKG / "layout.py"
        for hit in _hand_written_state_paths(path)
    ]
    assert found == [], "name these locations in contextfork/layout.py:\n" + "\n".join(found)


def test_the_state_path_check_catches_the_forms_it_is_for(tmp_path: Path) -> None:
    # The check above must be able to fail: each of these is how a copy used to be written.
    sample = tmp_path / "sample.py"
    sample.write_text(
        'from pathlib import Path\n'
        'A = Path(".contextfork") / "policy.json"\n'
        'B = lambda root: root / ".contextfork" / "cold"\n'
        'C = lambda sid: f".contextfork/cold/{sid}"\n'
        'D = "/.contextfork/"\n'
        'E = "help text naming .contextfork/view/ in words"\n'
    )
    hits = _hand_written_state_paths(sample)
    assert sorted(h.split(":")[1] for h in hits) == ["2", "3", "4", "5"]


def test_git_common_dir_agrees_with_git_for_repos_worktrees_and_submodules(tmp_path: Path) -> None:
    """Provenance records live there: every work tree of a repository must find the same one."""
    main = make_repo(tmp_path / "main")
    main.git("worktree", "add", "-q", str(tmp_path / "linked"), "-b", "side")
    sub = make_repo(tmp_path / "subsrc")
    main.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub.path), "mod")
    for top in (main.path, tmp_path / "linked", main.path / "mod"):
        want = Path(git(top, "rev-parse", "--path-format=absolute", "--git-common-dir"))
        found = layout.git_common_dir(top)
        assert found is not None and found.resolve() == want.resolve(), top
    assert layout.provenance_file(main.path, "packages", "../x") is None
    assert layout.git_common_dir(tmp_path / "nowhere") is None
