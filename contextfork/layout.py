"""Where things live: repo discovery, the repository's ``.contextfork/`` tree, the user cache.

The one owner of these names (a test fails on a hand-written ``.contextfork`` path elsewhere).
Stdlib only (and ``errors``/``sessionids``), no git process: the hot paths (``statusline``, ``hooks run``) import it.

Repo discovery walks up the file system the way git does: the nearest directory whose ``.git``
is a git directory (it has ``HEAD``) or a ``gitdir:`` file (linked worktrees, submodules) is the
work tree; a start inside a ``.git`` directory has none. Symlinks are resolved first, as
``git rev-parse --show-toplevel`` does. ``contextfork.gitstate`` asks git itself where it also
needs the git dir (export, the git hooks).

Every path below the state dir goes through ``state_path``: a repository can commit
``.contextfork`` (or a directory below it) as a symlink, and nothing may read or write through it.
Before the first write into the state dir, ``ensure_state_dir`` keeps it out of ``git status``.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path

from contextfork.errors import NotFoundError, UnsafeStateDir
from contextfork.sessionids import check_session_id

STATE_DIR = ".contextfork"
EXCLUDE_PATTERN = f"/{STATE_DIR}/"  # the line in .git/info/exclude
PACKAGES = "packages"
COLD = "cold"
_GIT_HOOKS_CONFIG = "git-hooks.json"
_PENDING_NOTE = ("hooks", "pending-note.txt")  # the note text itself; post-commit attaches it
# Which commit attempt the pending note belongs to (see lifecycle.githooks).
_PENDING_KEY = ("hooks", "pending-note.key")
_JOURNAL = "apply-journal"
_POLICY = "policy.json"
JOURNAL_REL = f"{STATE_DIR}/{_JOURNAL}"


# --- repo discovery -----------------------------------------------------------------------------


def _is_work_tree_top(cand: Path) -> bool:
    dotgit = cand / ".git"
    try:
        st = os.stat(dotgit)
    except OSError:
        return False
    if stat.S_ISDIR(st.st_mode):
        return os.path.isfile(dotgit / "HEAD")
    try:
        with open(dotgit, "rb") as fh:
            return fh.read(8) == b"gitdir: "
    except OSError:
        return False


def find_repo(start: Path | str) -> Path | None:
    """The work tree containing ``start`` (a file or a directory), or None."""
    try:
        cur = Path(os.path.realpath(start))
    except (OSError, ValueError):
        return None
    if not cur.is_dir():
        cur = cur.parent
    if ".git" in cur.parts:
        return None  # inside a git dir: no work tree, as for git
    for cand in (cur, *cur.parents):
        if _is_work_tree_top(cand):
            return cand
    return None


def repo_root(repo: Path | str | None = None) -> Path:
    """The repository a command works on: ``--repo`` or the work tree of the cwd."""
    where = Path(repo) if repo is not None else Path.cwd()
    if not where.exists():
        raise NotFoundError(f"no such directory: {where}", hint="pass --repo PATH")
    found = find_repo(where)
    if found is None:
        raise NotFoundError(
            f"not a git repository: {where}", hint="run inside a repository or pass --repo PATH"
        )
    return found


def optional_repo(repo: Path | None, cwd: Path) -> Path | None:
    """An explicit ``--repo`` must be a repository; the cwd may simply not be one."""
    return repo_root(repo) if repo is not None else find_repo(cwd)


# --- the state dir ------------------------------------------------------------------------------


def state_path(root: Path, *parts: str) -> Path:
    """``<root>/.contextfork/<parts…>``, the one way to name anything under a repo's state dir.

    A repository can commit ``.contextfork`` (or ``packages``, ``cold``, ``logs`` below it) as a
    symlink or a file; writing, reading or deleting through it would touch a directory outside
    the repo. Every component that exists is ``lstat``-ed: each must be a real directory (the
    last may be a regular file), or ``UnsafeStateDir`` (exit 3) names it. Missing components are
    fine: they are created below a checked real directory.
    """
    path = Path(root)
    chain = (STATE_DIR, *parts)
    for i, name in enumerate(chain):
        path = path / name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            break
        except OSError as exc:
            raise UnsafeStateDir(f"{_rel(root, path)} cannot be inspected: {exc.strerror}") from exc
        if stat.S_ISDIR(st.st_mode) or (i == len(chain) - 1 and i > 0 and stat.S_ISREG(st.st_mode)):
            continue
        what = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a directory"
        raise UnsafeStateDir(
            f"{_rel(root, path)} is {what}, not a real directory inside the repository; "
            "contextfork refuses to read or write through it",
            hint=f"remove it; if it is committed: git rm --cached -r {STATE_DIR}",
        )
    return Path(root).joinpath(*chain)


def _rel(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def rel(*parts: str) -> str:
    """``.contextfork/<parts…>`` relative to the work tree (shell scripts, references in packages)."""
    return "/".join((STATE_DIR, *parts))


def exclude_state_dir(root: Path, *, common: Path | None = None) -> bool:
    """Add the state dir to ``.git/info/exclude`` once; True when it was added now."""
    from contextfork import gitstate  # lazy: hot path (only when the state dir is new)

    return gitstate.ensure_excluded(root, EXCLUDE_PATTERN, common=common)


def ensure_state_dir(root: Path) -> None:
    """Before the first write into ``root/.contextfork/``, add it to ``.git/info/exclude``.

    Any entry point may be the first to write there (an export, a fold, ``render --repo``'s cold
    store, a hook's log line, a policy file); no git process once the directory exists.
    """
    if (root / STATE_DIR).exists():
        return
    with contextlib.suppress(Exception):  # an unexcluded state dir is cosmetic, never fatal
        exclude_state_dir(root)


def ensure_for_store(store_root: Path) -> None:
    """``ensure_state_dir`` for a cold store root ``<repo>/.contextfork/cold`` (else nothing)."""
    if store_root.name == COLD and store_root.parent.name == STATE_DIR:
        ensure_state_dir(store_root.parent.parent)


# --- named locations ----------------------------------------------------------------------------


def packages_dir(root: Path) -> Path:
    """Exported packages, one directory each (``<id>.state.json`` beside them)."""
    return state_path(root, PACKAGES)


def cold_root(root: Path) -> Path:
    """The cold stores, one directory per session."""
    return state_path(root, COLD)


def cold_store(root: Path, session_id: str) -> Path:
    """One session's cold store; a hostile id (``../x``) is a ``UsageError``."""
    return state_path(root, COLD, check_session_id(session_id))


def cold_store_rel(session_id: str) -> str:
    """How a package names a cold store it refers to (relative to the work tree)."""
    return rel(COLD, session_id)


def hooks_log(root: Path) -> Path:
    """One line per harness hook failure (hooks exit 0 and never print errors)."""
    return state_path(root, "logs", "hooks.log")


def proxy_log(root: Path) -> Path:
    """One line per request the model-API proxy forwarded for this project (never a secret)."""
    return state_path(root, "logs", "proxy.log")


def proxy_stats(root: Path, session_id: str) -> Path:
    """What the proxy really sent for one conversation (``status`` reads it)."""
    return state_path(root, "proxy", f"{session_id}.json")


def proxy_default(root: Path) -> Path:
    """Which clients go through the proxy in this project (``hooks install … --proxy``)."""
    return state_path(root, "proxy-default.json")


def fork_records_dir(root: Path) -> Path:
    return state_path(root, "harness", "forks")


def fork_record(root: Path, session_id: str) -> Path:
    """Which session the fork ``session_id`` continues (written by ``contextfork fork``)."""
    return state_path(root, "harness", "forks", f"{check_session_id(session_id)}.json")


def footprint_file(root: Path, session_id: str) -> Path:
    """The per-session hook state (context footprint, warnings given)."""
    return state_path(root, "harness", f"{check_session_id(session_id)}.json")


def subagents_dir(root: Path, session_id: str) -> Path:
    """The records of the subagents a session started (their slice, their folded store)."""
    return state_path(root, "harness", "subagents", check_session_id(session_id))


def subagent_record(root: Path, session_id: str, agent_id: str) -> Path:
    return state_path(
        root, "harness", "subagents", check_session_id(session_id), f"{check_session_id(agent_id)}.json"
    )


def install_record(root: Path, key: str) -> Path:
    """What ``hooks install`` changed in a file inside the repository."""
    return state_path(root, "harness", "installs", f"{key}.json")


INSTALLS_BESIDE = f"{STATE_DIR}-install"


def install_record_beside(target: Path, key: str) -> Path:
    """The same for a file outside any repository (``~/.claude/settings.json``): beside it, so
    the record follows ``CLAUDE_CONFIG_DIR``/``CODEX_HOME``."""
    return target.parent / INSTALLS_BESIDE / f"{target.name}.{key}.json"


def policy_file(root: Path) -> Path:
    return state_path(root, _POLICY)


def has_policy(root: Path) -> bool:
    """A policy file in ``root`` (an unchecked probe for the status line's ancestor walk)."""
    return os.path.isfile(os.path.join(root, STATE_DIR, _POLICY))


def view_dir(root: Path) -> Path:
    """The inspector's default output directory."""
    return state_path(root, "view")


def journal_dir(root: Path) -> Path:
    """``resume --apply``'s undo journal."""
    return state_path(root, _JOURNAL)


def git_hooks_config(root: Path) -> Path:
    return state_path(root, _GIT_HOOKS_CONFIG)


def pending_note(root: Path) -> Path:
    """The checkpoint note pre-commit leaves for post-commit."""
    return state_path(root, *_PENDING_NOTE)


def pending_note_key(root: Path) -> Path:
    return state_path(root, *_PENDING_KEY)


def pending_note_rel() -> str:
    return rel(*_PENDING_NOTE)


def pending_note_key_rel() -> str:
    return rel(*_PENDING_KEY)


# --- the git dir: what a clone's files cannot write ---------------------------------------------

_PROVENANCE = ("contextfork", "provenance")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def git_common_dir(root: Path) -> Path | None:
    """The repository's git dir shared by all its work trees (``git rev-parse --git-common-dir``),
    found without a git process: ``.git`` itself, or the ``gitdir:`` file's target and its
    ``commondir``. None when neither reads."""
    dotgit = Path(root) / ".git"
    try:
        if dotgit.is_dir():
            return dotgit
        with open(dotgit, "rb") as fh:
            line = fh.read(4096).split(b"\n", 1)[0].decode("utf-8", "surrogateescape").strip()
    except OSError:
        return None
    if not line.startswith("gitdir: "):
        return None
    gdir = Path(root, line[len("gitdir: "):].strip())
    try:
        common = (gdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return gdir  # a submodule's or the main git dir: its own common dir
    return Path(gdir, common) if common else gdir


def provenance_dir(root: Path, kind: str) -> Path | None:
    """``<git common dir>/contextfork/provenance/<kind>``: who made or verified each package
    (``packages``), pulled cold session (``cold``) and what each remote delivered (``remotes``).
    In the git dir because nothing a repository commits can land there."""
    common = git_common_dir(root)
    return None if common is None else common.joinpath(*_PROVENANCE, kind)


def provenance_file(root: Path, kind: str, name: str) -> Path | None:
    """One record (``<name>.json``); None for a name that could not be a file name of ours."""
    base = provenance_dir(root, kind)
    if base is None or not _SAFE_NAME.match(name):
        return None
    return base / f"{name}.json"


# --- the user cache -----------------------------------------------------------------------------


def cache_dir(*parts: str) -> Path:
    """``$XDG_CACHE_HOME/contextfork/<parts…>`` (``~/.cache`` by default); not created here."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "contextfork", *parts)
