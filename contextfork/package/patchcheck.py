"""Validate's checks of the two patches: paths, symlinks on the way, and that each applies.

``git_diff.patch`` (HEAD to the working tree) and ``git_index.patch`` (HEAD to the index; absent
in packages from before it existed) are each checked: git must parse them, no path they touch
may be unsafe, nothing may be written through a symlink (one at HEAD, one the patch or an
untracked snapshot creates, or one a rename turns a name into), and each must apply to the
recorded HEAD, not to the live work tree.

All git questions run in parallel (``gitstate.checks``); the apply checks use ``--check``
against one temporary index of HEAD. Only when a path the main patch touches is itself the
parent of another target is the patch really applied (``gitstate.apply_check``), to read the
modes it leaves: otherwise every parent keeps its HEAD mode, which ``ls-tree`` already gave.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from contextfork import gitstate
from contextfork.envelope import Problem
from contextfork.gitstate import checks
from contextfork.paths import unsafe_reason

MAIN = "git_diff.patch"
INDEX = "git_index.patch"


def _err(code: str, msg: str, path: str | None = None) -> Problem:
    return Problem("error", code, msg, path)


def _ancestors(rel: str) -> list[str]:
    """The parent directories of ``rel``, outermost first, as PurePosixPath names them."""
    split = rel.split("/")
    if all(p and p != "." for p in split):  # a plain relative path: the common case, by strings
        return ["/".join(split[:i]) for i in range(1, len(split))]
    parts = PurePosixPath(rel).parts
    return [str(PurePosixPath(*parts[:i])) for i in range(1, len(parts))]


def _parents(targets: list[str]) -> list[str]:
    return sorted({a for t in targets if not unsafe_reason(t) for a in _ancestors(t)})


def _patch_file(pkg: Path, rel: str) -> Path | None:
    f = pkg / rel
    return f if f.is_file() else None


def check_patches(
    root: Path | None,
    pkg: Path,
    meta: dict[str, Any] | None,
    um: dict[str, Any] | None,
    problems: list[Problem],
    meanwhile: Callable[[], None] | None = None,
) -> None:
    """Append the patch problems of package ``pkg`` to ``problems`` (read: earlier unsafe-path
    reports are not repeated). ``meanwhile`` is called once, while git works on the questions
    (its CPU then overlaps with git's instead of following it)."""
    main_file, index_file = _patch_file(pkg, MAIN), _patch_file(pkg, INDEX)
    if main_file is None and index_file is None:
        if meanwhile is not None:
            meanwhile()
        return
    where = root or pkg
    data = {f.name: f.read_bytes() for f in (main_file, index_file) if f is not None}
    files = [f for f in (main_file, index_file) if f is not None and data[f.name].strip()]
    infos = {f.name: checks.patch_info(where, f, data[f.name]) for f in files}
    head: str | None = meta["head"] if meta is not None else None
    exists_proc = checks.commit_exists_start(root, head) if root is not None and head else None
    gdir = gitstate.git_dir(root) if root is not None and files else None
    speculative = head if head is not None and checks.is_full_sha(head) else None
    with _maybe_index(root, gdir, speculative, meta) as idx:
        if meanwhile is not None:
            meanwhile()
        result = {name: pending.result() for name, pending in infos.items()}
        head_ok = checks.commit_exists_finish(exists_proc) if exists_proc is not None else None
        applies: dict[str, str | None] = {}
        if idx is not None and (not head or head_ok):
            ok = [f for f in files if not result[f.name].error]
            applies = dict(zip([f.name for f in ok], checks.apply_checks(idx, ok), strict=True))
        if main_file is not None:
            _check_main(root, main_file, result.get(MAIN), meta, um, head_ok, applies, problems)
        if index_file is not None:
            _check_index(root, index_file, result.get(INDEX), meta, head_ok, applies, problems)


def _maybe_index(
    root: Path | None, gdir: Path | None, head: str | None, meta: dict[str, Any] | None
) -> Any:
    """A temporary index of HEAD (read while the other questions run), when one can be used:
    a full SHA as HEAD, or an unborn HEAD (the empty index)."""
    if root is None or gdir is None or meta is None:
        return contextlib.nullcontext()
    if meta["head"] and head is None:
        return contextlib.nullcontext()  # not a full SHA: checked (and refused) before any read-tree
    return checks.base_index(root, gdir, head)


def _apply_error(
    root: Path, head: str | None, patch_file: Path, applies: dict[str, str | None]
) -> str | None:
    """The ``--check`` verdict run above, or (HEAD named by something other than a full SHA)
    a real apply to a temporary index of it."""
    if patch_file.name in applies:
        return applies[patch_file.name]
    return gitstate.apply_check(root, head, patch_file.read_bytes())[0]


def _check_main(  # noqa: C901 - complexity 16, over the cap when it came (issue 27)
    root: Path | None,
    patch_file: Path,
    info: checks.PatchInfo | None,
    meta: dict[str, Any] | None,
    um: dict[str, Any] | None,
    head_ok: bool | None,
    applies: dict[str, str | None],
    problems: list[Problem],
) -> None:
    info = info or checks.PatchInfo([], [], None)  # an empty patch touches nothing
    if info.error:
        problems.append(
            _err("patch_invalid", f"git cannot parse the patch: {info.error}", MAIN)
        )
    for p in info.paths:
        reason = unsafe_reason(p)
        if reason:
            problems.append(_err("unsafe_path", f"patch path refused: {reason}", p))
    snapshots = um["files"] if um else []
    all_targets = info.paths + [f["path"] for f in snapshots if f["captured"]]
    symlinks = set(info.links) | {f["path"] for f in snapshots if f["reason"] == "symlink"}
    head = meta["head"] if meta is not None else None
    parents = _parents(all_targets)
    if root is not None and head and head_ok:
        modes = gitstate.ls_tree_modes(root, head, parents)
        symlinks |= {p for p, m in modes.items() if m == "120000"}
    for t in all_targets:
        for parent in _ancestors(t):
            if parent in symlinks:
                problems.append(
                    _err("unsafe_path", f"would be written through symlink {parent!r}", t)
                )
                break
    if root is None or meta is None:
        return
    if head and not head_ok:
        problems.append(
            _err(
                "head_missing",
                f"recorded HEAD {head[:12]} does not exist in this repository (fetch it, or this package is from another repository)",
                "session_metadata.json",
            )
        )
        return
    if info.error:
        return
    touched = set(info.paths)
    if not info.paths:
        apply_err = None  # an empty patch applies; every parent keeps its HEAD mode
        after: dict[str, str] = {}
    elif touched.isdisjoint(parents):
        apply_err, after = _apply_error(root, head, patch_file, applies), {}
    else:  # the patch may turn a parent into a symlink: apply it for real and look
        apply_err, after = gitstate.apply_check(root, head, patch_file.read_bytes(), parents)
    # A rename or copy of a committed symlink carries no symlink mode in the patch text: look at
    # what each parent *is* once the patch is applied (resume --apply would refuse it there).
    reported = {p.path for p in problems if p.code == "unsafe_path"}
    for t in all_targets:
        through = next((q for q in _ancestors(t) if after.get(q) == "120000"), None)
        if through and t not in reported:
            problems.append(_err("unsafe_path", f"would be written through symlink {through!r}", t))
    if apply_err:
        problems.append(
            _err("patch_does_not_apply", f"patch does not apply to recorded HEAD: {apply_err}", MAIN)
        )


def _check_index(
    root: Path | None,
    patch_file: Path,
    info: checks.PatchInfo | None,
    meta: dict[str, Any] | None,
    head_ok: bool | None,
    applies: dict[str, str | None],
    problems: list[Problem],
) -> None:
    if info is None:
        return  # empty: nothing staged
    if info.error:
        problems.append(_err("patch_invalid", f"git cannot parse the patch: {info.error}", INDEX))
        return
    for p in info.paths:
        reason = unsafe_reason(p)
        if reason:
            problems.append(_err("unsafe_path", f"patch path refused: {reason}", p))
    if root is None or meta is None or (meta["head"] and not head_ok):
        return
    apply_err = _apply_error(root, meta["head"], patch_file, applies)
    if apply_err:
        problems.append(
            _err("patch_does_not_apply", f"staged patch does not apply to recorded HEAD: {apply_err}", INDEX)
        )
