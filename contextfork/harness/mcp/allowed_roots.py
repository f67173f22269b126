"""Which directories an MCP client may make us read or write (``CONTEXTFORK_ALLOWED_ROOTS``).

An MCP server runs with the user's rights but takes paths from a model, so every workspace path
is checked here. The variable is ``;``-separated absolute, existing directories. It fails
closed: one bad entry (relative, ``..``, a filesystem or drive root, the home directory itself,
a symlink anywhere in it, missing, not a directory) rejects the whole variable, because a
half-understood allow-list is worse than none. Paths handed in by a client are refused when
they contain ``..`` or pass through a symlink, whatever they resolve to.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from contextfork.errors import UsageError

ENV_VAR = "CONTEXTFORK_ALLOWED_ROOTS"
_DRIVE_ROOT = re.compile(r"^[A-Za-z]:[\\/]*$")


class RootsError(UsageError):
    """The allow-list itself is invalid: nothing is allowed until it is fixed."""


class PathRefused(UsageError):
    """A client-supplied path is outside the allowed roots, or tries to get out of them."""


def _home() -> str | None:
    try:
        return os.path.realpath(Path.home())
    except (RuntimeError, KeyError, OSError):
        return None


def entry_problem(entry: str) -> str | None:
    """Why one allow-list entry is unacceptable, or None when it is a plain existing directory."""
    if not entry:
        return "empty entry"
    if "\x00" in entry:
        return "NUL byte"
    if _DRIVE_ROOT.match(entry):
        return "a drive root"
    if not os.path.isabs(entry):
        return "not an absolute path"
    parts = entry.replace("\\", "/").split("/")
    if ".." in parts:
        return "contains '..'"
    if "." in parts:
        return "contains '.'"
    norm = os.path.normpath(entry)
    if norm in ("/", "//") or os.path.dirname(norm) == norm:
        return "a filesystem root"
    if not os.path.lexists(norm):
        return "does not exist"
    if os.path.realpath(norm) != norm:
        return "is or passes through a symlink"
    if not os.path.isdir(norm):
        return "not a directory"
    if norm == _home():
        return "the home directory itself (name a project directory instead)"
    return None


def parse_roots(value: str) -> tuple[Path, ...]:
    """Parse the variable's value; RootsError names the first bad entry and rejects them all."""
    raw = value.split(";")
    entries = [e.strip() for e in raw]
    if not any(entries):
        raise RootsError(f"{ENV_VAR} is set but names no directory", hint="unset it or list dirs")
    roots: list[Path] = []
    for entry in entries:
        problem = entry_problem(entry)
        if problem:
            raise RootsError(
                f"{ENV_VAR} entry {entry!r} is {problem}; the whole variable is rejected",
                hint="use ';'-separated absolute, existing, non-symlinked project directories",
            )
        p = Path(os.path.normpath(entry))
        if p not in roots:
            roots.append(p)
    return tuple(roots)


@dataclass(frozen=True)
class AllowedRoots:
    roots: tuple[Path, ...]
    source: str  # "env" | "cwd"

    def to_json(self) -> dict[str, object]:
        return {"roots": [str(r) for r in self.roots], "source": self.source}

    def default_workspace(self) -> Path:
        """The cwd when it lies inside a root, else the only root; ambiguous otherwise."""
        cwd = Path(os.path.realpath(Path.cwd()))
        for root in self.roots:
            if cwd == root or root in cwd.parents:
                return cwd
        if len(self.roots) == 1:
            return self.roots[0]
        raise PathRefused(
            "no workspace given and the current directory is outside every allowed root",
            hint="pass the workspace path explicitly",
        )

    def contains(self, real: Path) -> bool:
        return any(real == r or r in real.parents for r in self.roots)

    def check(self, path: str | os.PathLike[str] | None, *, what: str = "workspace") -> Path:
        """The real path of a client-supplied path, or PathRefused with the reason."""
        if path is None or str(path) == "":
            return self.default_workspace()
        text = os.fspath(path)
        if "\x00" in text:
            raise PathRefused(f"{what} path contains a NUL byte")
        if ".." in text.replace("\\", "/").split("/"):
            raise PathRefused(f"{what} path {text!r} contains '..' (path traversal refused)")
        candidate = Path(text).expanduser()
        if not candidate.is_absolute():
            candidate = self.default_workspace() / candidate
        norm = os.path.normpath(candidate)
        real = os.path.realpath(norm)
        if real != norm:
            raise PathRefused(f"{what} path {text!r} passes through a symlink (refused)")
        if not self.contains(Path(real)):
            raise PathRefused(
                f"{what} path {text!r} is outside the allowed roots",
                hint=f"allowed: {', '.join(str(r) for r in self.roots)} (set {ENV_VAR})",
            )
        return Path(real)

    def check_transcript(self, path: str) -> Path:
        """Transcripts may also live in the harness's own session folders (read-only use)."""
        extra = tuple(p for p in _harness_session_dirs() if p.is_dir())
        widened = AllowedRoots(self.roots + extra, self.source)
        real = widened.check(path, what="transcript")
        if not real.is_file():
            raise PathRefused(f"transcript {path!r} is not a file")
        return real


def _harness_session_dirs() -> list[Path]:
    out = []
    claude = os.environ.get("CLAUDE_CONFIG_DIR")
    out.append(Path(claude).expanduser() if claude else Path.home() / ".claude")
    codex = os.environ.get("CODEX_HOME")
    out.append(Path(codex).expanduser() if codex else Path.home() / ".codex")
    subs = [out[0] / "projects", out[1] / "sessions"]
    return [Path(os.path.realpath(p)) for p in subs]


def _cwd_root() -> tuple[Path, ...]:
    cwd = os.path.realpath(Path.cwd())
    problem = entry_problem(cwd)
    if problem:
        raise RootsError(
            f"{ENV_VAR} is unset and the current directory {cwd} cannot be the root ({problem})",
            hint=f"set {ENV_VAR} to your project directories",
        )
    return (Path(cwd),)


def load(env: Mapping[str, str] | None = None) -> AllowedRoots:
    """The allow-list from the environment; without the variable, only the current directory."""
    env = os.environ if env is None else env
    value = env.get(ENV_VAR)
    if value is None:
        return AllowedRoots(_cwd_root(), "cwd")
    return AllowedRoots(parse_roots(value), "env")


__all__ = [
    "ENV_VAR",
    "AllowedRoots",
    "PathRefused",
    "RootsError",
    "entry_problem",
    "load",
    "parse_roots",
]
