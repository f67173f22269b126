"""Where packages live and how an id or a path names one."""

from __future__ import annotations

import os
import time
from pathlib import Path

from contextfork.errors import NotFoundError, UsageError
from contextfork.layout import packages_dir
from contextfork.records import FrozenRecord

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's path)
if TYPE_CHECKING:
    from typing import Final

DEFAULT_FILE_CAP = 1 << 20  # 1 MiB per untracked file (export; here so the CLI need not import it)


def _utc_ms() -> tuple[time.struct_time, int]:
    """Now in UTC: the second and the millisecond (``time``, not ``datetime``: one module less
    on the pre-commit hook's path)."""
    seconds, ms = divmod(time.time_ns() // 1_000_000, 1000)
    return time.gmtime(seconds), ms


def new_package_id() -> str:
    """Sortable by creation time; the random tail keeps two exports in one second apart (the
    bytes of ``secrets.token_hex``, without importing it on the pre-commit hook's path)."""
    when, ms = _utc_ms()
    return f"{time.strftime('%Y%m%dT%H%M%S', when)}{ms:03d}Z-{os.urandom(3).hex()}"


def utc_now_iso() -> str:
    """``2026-12-02T09:04:45.986Z``: UTC to the millisecond."""
    when, ms = _utc_ms()
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', when)}.{ms:03d}Z"


class PackageRef(FrozenRecord):
    __match_args__ = ("package_id", "path")
    package_id: Final[str]
    path: Final[Path]

    def __init__(self, package_id: str, path: Path) -> None:
        self.package_id = package_id
        self.path = path


def list_packages(root: Path) -> list[PackageRef]:
    """Published packages, oldest first (staging and trash directories are never listed)."""
    base = packages_dir(root)
    if not base.is_dir():
        return []
    refs = [
        PackageRef(e.name, Path(e.path))
        for e in os.scandir(base)
        if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")
    ]
    return sorted(refs, key=lambda r: r.package_id)


class PreviousSnapshots:
    """The untracked snapshots of the previous package, for the files that have not changed
    since: export links them (``atomic.BackgroundWriter.link``, bytes compared) instead of
    writing them again (a hundred unchanged files were two thirds of a pre-commit checkpoint's
    writes). Only a file reached without a symlink on the way: a link never names a file
    outside a package."""

    def __init__(self, previous: Path | None) -> None:
        self.top = os.path.realpath(previous / "untracked") if previous is not None else None
        self._dirs: dict[str, bool] = {}

    def source(self, rel: str) -> Path | None:
        """Where ``rel`` would be in the previous package (it may not be there), or None."""
        if self.top is None:
            return None
        parent = os.path.dirname(rel)
        ok = self._dirs.get(parent)
        if ok is None:
            want = os.path.join(self.top, parent) if parent else self.top
            ok = self._dirs[parent] = os.path.realpath(want) == want
        return Path(self.top, rel) if ok else None


def latest_offered(root: Path) -> PackageRef:
    """The newest package this user exported, pulled or trusted here (``contextfork.provenance``):
    what ``resume`` and the MCP tools take when no package is named."""
    from contextfork import provenance, signing

    refs = list_packages(root)
    for ref in reversed(refs):
        st = provenance.standing(root, ref.package_id, ref.path)
        if st.offered and signing.unsigned_refusal(root, st) is None:
            return ref
    if not refs:
        return resolve_in(root, None)  # the usual "no packages" error
    signed = ", with a verified signature (contextfork.requireSignedPackages)" if signing.required(root) else ""
    raise NotFoundError(
        f"none of the {len(refs)} package(s) in {packages_dir(root)} was exported, pulled or "
        f"trusted here{signed}",
        hint="`contextfork packages list` shows them; inspect one, then "
        "`contextfork resume ID --trust` accepts it",
    )


def is_bare_id(spec: str) -> bool:
    """An id or id prefix, not a path: no separator, not '.' or '..'."""
    return "/" not in spec and "\\" not in spec and os.sep not in spec and spec not in (".", "..")


def resolve(root: Path | None, spec: str | None) -> PackageRef:
    """A package directory path, a full id, a unique id prefix, or (None) the latest one.

    A bare id is looked up in ``root``'s packages first; only when none matches is it tried as
    a directory of the working directory (the CLI's ``validate mypkg``)."""
    if spec and root is not None and is_bare_id(spec):
        found = _by_id(root, spec, list_packages(root))
        if found is not None:
            return found
    if spec:
        p = Path(spec)
        if p.is_dir() and (p / "manifest.json").exists():
            return PackageRef(p.resolve().name, p.resolve())
        if p.is_dir():
            raise NotFoundError(f"{spec} is a directory but holds no manifest.json")
    if root is None:
        raise NotFoundError(f"no package {spec!r} (not a directory, and no repository to look in)")
    return resolve_in(root, spec)


def resolve_in(root: Path, spec: str | None) -> PackageRef:
    """A full id or unique id prefix among ``root``'s packages only (never a path)."""
    refs = list_packages(root)
    if not spec:
        if not refs:
            raise NotFoundError(
                f"no packages in {packages_dir(root)}", hint="run `contextfork export` first"
            )
        return refs[-1]
    found = _by_id(root, spec, refs)
    if found is None:
        raise NotFoundError(f"no package {spec!r} in {packages_dir(root)}")
    return found


def _by_id(root: Path, spec: str, refs: list[PackageRef]) -> PackageRef | None:
    matches = [r for r in refs if r.package_id == spec] or [
        r for r in refs if r.package_id.startswith(spec)
    ]
    if len(matches) > 1:
        raise UsageError(f"package id prefix {spec!r} is ambiguous ({len(matches)} packages)")
    return matches[0] if matches else None
