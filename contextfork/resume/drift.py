"""Drift: how far the live repository has moved from the state a package recorded.

The exported working state is rebuilt from the package alone (recorded HEAD + patch + snapshots,
in a temporary index) and compared tree-to-tree with the live work tree, so per-file drift is
exact and no work tree or user index is touched.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from contextfork import gitstate
from contextfork.errors import GitError
from contextfork.package.models import SessionMetadata, UntrackedManifest

Relation = Literal["same", "ahead", "behind", "diverged", "unknown"]


@dataclass
class HeadDrift:
    relation: Relation
    exported: str | None
    live: str | None
    ahead: int = 0  # commits on the live HEAD that the exported HEAD does not have
    behind: int = 0  # commits of the exported HEAD that the live HEAD does not have
    merge_base: str | None = None


@dataclass
class DriftReport:
    branch_exported: str | None
    branch_live: str | None
    head: HeadDrift
    exported_tree: str
    live_tree: str
    rebuilt_tree: str | None = None
    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    not_captured: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def branch_changed(self) -> bool:
        return self.branch_exported != self.branch_live

    @property
    def tree_equal(self) -> bool:
        return self.exported_tree == self.live_tree

    @property
    def files_drifted(self) -> bool:
        if self.rebuilt_tree is None:
            return not self.tree_equal
        return bool(self.changed or self.missing or self.new)

    @property
    def drifted(self) -> bool:
        return self.branch_changed or self.head.relation != "same" or self.files_drifted

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            branch_changed=self.branch_changed,
            tree_equal=self.tree_equal,
            files_drifted=self.files_drifted,
            drifted=self.drifted,
        )
        return data

    def summary_lines(self) -> list[str]:
        """Plain sentences for people and for the brief (no markup)."""
        h = self.head
        lines = []
        if self.branch_changed:
            lines.append(
                f"Branch changed: exported on {self.branch_exported or '(detached)'}, "
                f"now on {self.branch_live or '(detached)'}."
            )
        else:
            lines.append(f"Branch unchanged: {self.branch_live or '(detached)'}.")
        short = _short(h.exported)
        if h.relation == "same":
            lines.append(f"HEAD unchanged: {short}.")
        elif h.relation == "unknown":
            lines.append(
                f"HEAD unknown: the recorded HEAD {short} does not exist here "
                "(fetch it, or the package comes from another repository)."
            )
        else:
            detail = {
                "ahead": f"ahead of the exported HEAD by {h.ahead} commit(s)",
                "behind": f"behind the exported HEAD by {h.behind} commit(s)",
                "diverged": f"diverged: {h.ahead} commit(s) ahead, {h.behind} behind",
            }[h.relation]
            base = f", merge base {_short(h.merge_base)}" if h.merge_base else ""
            lines.append(f"HEAD moved: live {_short(h.live)} is {detail}{base}.")
        if self.tree_equal:
            lines.append(f"Working tree equals the exported tree {self.exported_tree[:12]}.")
        elif self.rebuilt_tree is None:
            lines.append("Working tree differs from the exported tree (per-file drift unavailable).")
        else:
            lines.append(
                f"Working tree differs: {len(self.changed)} changed since export, "
                f"{len(self.missing)} missing, {len(self.new)} new."
            )
        lines += self.notes
        return lines


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "(unborn)"


def head_drift(root: Path, exported: str | None, live: str | None) -> HeadDrift:
    if exported is not None and not gitstate.commit_exists(root, exported):
        return HeadDrift("unknown", exported, live)
    if exported == live:
        return HeadDrift("same", exported, live)
    if exported is None:  # exported on an unborn HEAD: everything live is new
        assert live is not None
        return HeadDrift("ahead", None, live, ahead=gitstate.count_commits(root, live))
    if live is None:
        return HeadDrift("behind", exported, None, behind=gitstate.count_commits(root, exported))
    behind, ahead = gitstate.left_right_count(root, exported, live)
    base = gitstate.merge_base(root, exported, live)
    relation: Relation = "diverged"
    if behind == 0:
        relation = "ahead"
    elif ahead == 0:
        relation = "behind"
    return HeadDrift(relation, exported, live, ahead=ahead, behind=behind, merge_base=base)


def snapshot_blobs(pkg_dir: Path, um: UntrackedManifest) -> list[tuple[str, str, Path | bytes]]:
    """The untracked part of the exported state: captured snapshots and recorded symlinks."""
    blobs: list[tuple[str, str, Path | bytes]] = []
    for f in um.files:
        if f.captured:
            blobs.append((f.mode or "100644", f.path, pkg_dir / "untracked" / f.path))
        elif f.reason == "symlink" and f.link_target is not None:
            blobs.append(("120000", f.path, f.link_target.encode("utf-8", "surrogateescape")))
    return blobs


def rebuild_exported_tree(
    root: Path, pkg_dir: Path, meta: SessionMetadata, um: UntrackedManifest
) -> str:
    patch = (pkg_dir / "git_diff.patch").read_bytes()
    return gitstate.build_tree(
        root, meta.head, patch, snapshot_blobs(pkg_dir, um), snapshot_root=pkg_dir / "untracked"
    )


def compute(
    root: Path,
    pkg_dir: Path,
    meta: SessionMetadata,
    um: UntrackedManifest,
    live_tree: str | None = None,
) -> DriftReport:
    live = gitstate.head(root)
    report = DriftReport(
        branch_exported=meta.branch,
        branch_live=live.branch,
        head=head_drift(root, meta.head, live.sha),
        exported_tree=meta.worktree_tree_sha,
        live_tree=live_tree or gitstate.worktree_tree_sha(root),
    )
    report.not_captured = sorted(f.path for f in um.files if not f.captured and
                                 f.reason != "symlink")  # fmt: skip
    if report.head.relation == "unknown":
        report.notes.append("Per-file drift unavailable: the recorded HEAD is not in this repository.")
        return report
    try:
        report.rebuilt_tree = rebuild_exported_tree(root, pkg_dir, meta, um)
    except GitError as exc:
        report.notes.append(f"Per-file drift unavailable: {exc.message}.")
        return report
    skip = set(report.not_captured)
    for status, path in gitstate.diff_trees(root, report.rebuilt_tree, report.live_tree):
        if path in skip:
            continue
        {"A": report.new, "D": report.missing}.get(status, report.changed).append(path)
    if report.not_captured:
        report.notes.append(
            f"{len(report.not_captured)} untracked file(s) were not captured at export "
            "(too large or unreadable); they cannot be compared or restored."
        )
    return report
