"""``resume --apply``: put the exported working state onto a clean checkout, and prove it.

Everything that could stop the restore is checked before the first byte changes (HEAD, a dirty
tree, files in the way, the patch itself), so a refusal leaves the checkout untouched. Then every
path about to change is journaled (``resume.journal``), so a kill half-way is undone by the next
run, which then restores completely. The work tree gets ``git_diff.patch`` and the index
``git_index.patch``: what was staged at export is staged again, and nothing else. The proof is
the tree SHA of the restored work tree, recomputed and compared with the one recorded.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from contextfork import atomic, gitstate, layout
from contextfork.errors import (
    CheckFailed,
    ContextforkError,
    DriftError,
    IntegrityError,
    NotFoundError,
)
from contextfork.hashing import sha256_bytes
from contextfork.package.models import SessionMetadata, UntrackedManifest
from contextfork.paths import safe_join, symlink_in_parents
from contextfork.resume import journal
from contextfork.testhooks import kill_point


@dataclass
class ApplyOutcome:
    already: bool = False
    patched: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    identical: list[str] = field(default_factory=list)
    overwritten: list[str] = field(default_factory=list)
    not_restored: list[str] = field(default_factory=list)
    tree_after: str = ""
    recorded_tree: str = ""
    recovered: bool = False  # an interrupted restore of this package was undone and redone
    notes: list[str] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return self.tree_after == self.recorded_tree

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "exact": self.exact}


def _check_head(root: Path, meta: SessionMetadata, allow_different_head: bool) -> None:
    live = gitstate.head(root).sha
    if live == meta.head or allow_different_head:
        return
    want = meta.head or "(unborn: no commits)"
    raise DriftError(
        f"live HEAD {live or '(unborn)'} is not the recorded HEAD {want}",
        hint=f"check it out first (git checkout --detach {meta.head}) "
        "or pass --allow-different-head"
        if meta.head
        else "apply it in a repository with no commits, or pass --allow-different-head",
    )


def _link_stays_inside(root: Path, rel: str, link_target: str) -> bool:
    """A restored link may only point inside the repository (a package is untrusted input)."""
    if os.path.isabs(link_target):
        return False
    joined = os.path.normpath(os.path.join(root, os.path.dirname(rel), link_target))
    return joined == str(root) or joined.startswith(str(root) + os.sep)


def _planned_link(
    root: Path, f: Any, force: bool, out: ApplyOutcome, in_the_way: list[str]
) -> tuple[Path, str] | None:
    target_text: str = f.link_target
    if f.sha256 != sha256_bytes(os.fsencode(target_text)):
        raise IntegrityError(f"symlink record {f.path} does not match its hash")
    if not _link_stays_inside(root, f.path, target_text):
        out.not_restored.append(
            f"{f.path} (symlink -> {target_text}: points outside the repository)"
        )
        return None
    try:
        link = safe_join(root, f.path)
    except ValueError as exc:
        raise IntegrityError(f"refusing symlink path: {exc}") from exc
    if os.path.lexists(link):
        if link.is_symlink() and os.readlink(link) == target_text:
            out.identical.append(f.path)
            return None
        if not force:
            in_the_way.append(f.path)
            return None
        out.overwritten.append(f.path)
    return link, target_text


def _through_patch_link(rel: str, patch_links: set[str]) -> str | None:
    """The parent of ``rel`` that the patch itself creates as a symlink, if any."""
    parts = rel.split("/")
    for i in range(1, len(parts)):
        parent = "/".join(parts[:i])
        if parent in patch_links:
            return parent
    return None


def _planned_writes(
    root: Path, pkg_dir: Path, um: UntrackedManifest, force: bool, out: ApplyOutcome,
    patch_links: set[str],
) -> tuple[list[tuple[Path, bytes, int]], list[tuple[Path, str]]]:  # fmt: skip
    """Read and re-verify every snapshot, and decide per target before anything is written."""
    plan: list[tuple[Path, bytes, int]] = []
    links: list[tuple[Path, str]] = []
    in_the_way: list[str] = []
    for f in um.files:
        link_parent = _through_patch_link(f.path, patch_links)
        if link_parent:
            raise IntegrityError(
                f"refusing {f.path!r}: it would be written through the symlink {link_parent!r} "
                "that the package's patch creates"
            )
        if f.reason == "symlink" and f.link_target is not None:
            planned = _planned_link(root, f, force, out, in_the_way)
            if planned:
                links.append(planned)
            continue
        if not f.captured:
            out.not_restored.append(f"{f.path} ({f.reason})")
            continue
        try:
            target = safe_join(root, f.path)
        except ValueError as exc:
            raise IntegrityError(f"refusing snapshot path: {exc}") from exc
        data = (pkg_dir / "untracked" / f.path).read_bytes()
        if sha256_bytes(data) != f.sha256:
            raise IntegrityError(f"snapshot {f.path} changed since validation")
        if os.path.lexists(target):
            if target.is_file() and not target.is_symlink() and target.read_bytes() == data:
                out.identical.append(f.path)
                continue
            if not force:
                in_the_way.append(f.path)
                continue
            out.overwritten.append(f.path)
        plan.append((target, data, 0o755 if f.mode == "100755" else 0o644))
    if in_the_way:
        shown = ", ".join(in_the_way[:5]) + (" …" if len(in_the_way) > 5 else "")
        raise DriftError(
            f"{len(in_the_way)} file(s) already exist with other content and were not created "
            f"by this package: {shown}",
            hint="move them away, or pass --force to overwrite them (they are listed)",
        )
    return plan, links


def _resume_journal(root: Path, meta: SessionMetadata) -> dict[str, object] | None:
    """Undo an interrupted restore of this package before redoing it; refuse another's."""
    pending = journal.load(root)
    if pending is None:
        return None
    if pending.get("package_id") != meta.package_id:
        other = pending.get("package_id")
        raise DriftError(
            f"an interrupted `resume --apply` of package {other} is pending "
            f"(journal in {layout.JOURNAL_REL})",
            hint=f"finish it with `contextfork resume {other} --apply`, "
            "or undo it with `contextfork resume --rollback`",
        )
    journal.rollback(root)
    return pending


def apply_package(
    root: Path,
    pkg_dir: Path,
    meta: SessionMetadata,
    um: UntrackedManifest,
    *,
    force: bool = False,
    allow_different_head: bool = False,
) -> ApplyOutcome:
    out = ApplyOutcome(recorded_tree=meta.worktree_tree_sha)
    pending = _resume_journal(root, meta)
    if pending is not None:
        out.recovered = True
        force = force or bool(pending.get("force"))
        allow_different_head = allow_different_head or bool(pending.get("allow_different_head"))
    _check_head(root, meta, allow_different_head)
    before = gitstate.worktree_tree_sha(root)
    if before == meta.worktree_tree_sha:
        out.already, out.tree_after = True, before
        return out
    # Untracked files the package itself restores are judged one by one below (identical, or
    # in the way); anything else uncommitted makes the checkout unclean.
    ours = {f.path for f in um.files if f.captured or f.reason == "symlink"}
    dirty = [p for p in gitstate.is_dirty(root) if p not in ours]
    if dirty and not force:
        shown = ", ".join(dirty[:5]) + (" …" if len(dirty) > 5 else "")
        raise DriftError(
            f"work tree is not clean ({len(dirty)} path(s): {shown})",
            hint="commit or stash first, or pass --force to apply on top",
        )
    patch = (pkg_dir / "git_diff.patch").read_bytes()
    staged_file = pkg_dir / "git_index.patch"
    # Packages from before git_index.patch existed: everything is restored as staged.
    staged = staged_file.read_bytes() if staged_file.is_file() else None
    if staged is None:
        out.notes.append("the package has no git_index.patch (older export): all changes "
                         "are restored as staged")  # fmt: skip
    paths, patch_links, _perr = gitstate.patch_paths(root, patch)
    plan, links = _planned_writes(root, pkg_dir, um, force, out, set(patch_links))
    err = gitstate.apply_to_worktree(root, patch, check_only=True, target="worktree")
    if not err:
        err = gitstate.apply_to_worktree(root, patch if staged is None else staged,
                                         check_only=True, target="index")  # fmt: skip
    if err:
        raise CheckFailed(f"the package's patch does not apply here: {err}")
    targets = [t for t, _d, _m in plan] + [lk for lk, _t in links]
    touched = paths + [t.relative_to(root).as_posix() for t in targets]
    info = {"package_id": meta.package_id, "package_path": str(pkg_dir), "head": meta.head,
            "force": force, "allow_different_head": allow_different_head}  # fmt: skip
    journal.begin(root, touched, info)
    kill_point("apply:journaled")
    try:
        _restore(root, patch, staged, plan, links, out)
    except ContextforkError:
        journal.rollback(root)  # a refusal half-way leaves the checkout as it was
        raise
    out.patched = sorted(set(paths))
    out.tree_after = gitstate.worktree_tree_sha(root)
    journal.finish(root)
    return out


def _restore(
    root: Path, patch: bytes, staged: bytes | None, plan: list[tuple[Path, bytes, int]],
    links: list[tuple[Path, str]], out: ApplyOutcome,
) -> None:  # fmt: skip
    """The writes themselves, after the journal: patch, index, snapshots, links."""
    err = gitstate.apply_to_worktree(root, patch, target="worktree")
    if not err:
        err = gitstate.apply_to_worktree(root, patch if staged is None else staged, target="index")
    if err:
        raise CheckFailed(f"git apply failed: {err}")
    gitstate.refresh_index(root)
    kill_point("apply:patched")
    for target in [t for t, _d, _m in plan] + [lk for lk, _t in links]:
        # The patch has changed the tree since the plan was made: never write through a link.
        rel = target.relative_to(root).as_posix()
        through = symlink_in_parents(root, rel)
        if through:
            raise IntegrityError(f"refusing {rel!r}: it would be written through symlink {through!r}")
    for target, data, mode in plan:
        atomic.write_bytes(target, data, mode=mode)
        out.written.append(target.relative_to(root).as_posix())
        kill_point("apply:files")
    for link, text in links:
        atomic.write_symlink(link, text)
        out.written.append(link.relative_to(root).as_posix())


def rollback(root: Path) -> dict[str, object]:
    """``resume --rollback``: undo an interrupted restore (NotFoundError when there is none)."""
    done = journal.rollback(root)
    if done is None:
        raise NotFoundError("no interrupted `resume --apply` to roll back",
                            hint=f"the journal would be in {layout.JOURNAL_REL}")  # fmt: skip
    return done
