"""Export: capture the exact working state plus the 6-part handoff into a new package.

git runs in parallel (status, the binary diff, and the temp-index tree SHA) while Python reads
the untracked files; everything is written into a private staging directory and published with
one rename, so a crash never leaves a half package visible.
"""

from __future__ import annotations

import os
import stat as stat_mod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork import __version__, atomic, gitstate
from contextfork.envelope import Problem
from contextfork.hashing import canonical_sha256, sha256_bytes
from contextfork.package import handoff as handoff_mod
from contextfork.package.models import (
    GitStatusFile,
    Manifest,
    ManifestEntry,
    ModeChange,
    Rename,
    SessionMetadata,
    Submodule,
    Trigger,
    UntrackedFile,
    UntrackedManifest,
)
from contextfork.package.store import STATE_DIR, new_package_id, packages_dir, utc_now_iso
from contextfork.paths import unsafe_reason

DEFAULT_FILE_CAP = 1 << 20  # 1 MiB per untracked file
DEFAULT_TOTAL_CAP = 64 << 20  # 64 MiB of snapshots per package


@dataclass
class ExportOptions:
    goal: str | None = None
    session_id: str | None = None
    handoff_input: handoff_mod.HandoffInput | None = None
    trigger: Trigger = "cli"
    transcript: Path | None = None
    harness: str | None = None
    file_cap: int = DEFAULT_FILE_CAP
    total_cap: int = DEFAULT_TOTAL_CAP
    seed: dict[str, Any] | None = None  # pre-computed transcript seed (telemetry etc.)
    cold_store_refs: list[str] = field(default_factory=list)


@dataclass
class ExportOutcome:
    package_id: str
    path: Path
    manifest: Manifest
    git_status: GitStatusFile
    untracked: UntrackedManifest
    problems: list[Problem]


def git_status_file(st: gitstate.Status, head: gitstate.Head) -> GitStatusFile:
    """Classify porcelain v2 entries into the IPSF git_status.json lists."""
    gs = GitStatusFile(
        branch=st.branch,
        detached=st.branch is None,
        unborn=st.oid is None,
        head=st.oid,
        upstream=st.upstream,
        ahead=st.ahead,
        behind=st.behind,
        untracked=sorted(st.untracked),
        undecodable_names=sorted(set(st.undecodable)),
    )
    if head.unborn and head.branch:
        gs.branch, gs.detached = head.branch, False
    for e in st.entries:
        x, y = e.xy[0], e.xy[1]
        if e.sub.startswith("S"):
            gs.submodules.append(Submodule(path=e.path, state=e.sub))
            continue
        if e.kind == "u":
            gs.conflicts.append(e.path)
            continue
        if x != ".":
            gs.staged.append(e.path)
        if e.kind == "2":
            gs.renamed.append(Rename(old=e.orig_path or "", new=e.path, score=e.score))
        if x == "A":
            gs.added.append(e.path)
        if "D" in (x, y):
            gs.deleted.append(e.path)
        elif y in "MT" or x in "MT":
            gs.modified.append(e.path)
        old_mode, new_mode = e.mode_head, e.mode_worktree
        if (
            old_mode not in ("", "000000")
            and new_mode not in ("", "000000")
            and old_mode != new_mode
        ):
            gs.mode_changes.append(ModeChange(path=e.path, old_mode=old_mode, new_mode=new_mode))
    for lst in (gs.staged, gs.modified, gs.deleted, gs.added, gs.conflicts):
        lst.sort()
    return gs


def _capture_untracked(
    root: Path, names: list[str], undecodable: set[str], staging: Path, opts: ExportOptions
) -> UntrackedManifest:
    files: list[UntrackedFile] = []
    total = 0
    for rel in sorted(names):
        full = root / rel
        if rel in undecodable:
            files.append(
                UntrackedFile(
                    path=rel, size=0, mode="", sha256=None, captured=False, reason="non_utf8_name"
                )
            )
            continue
        if unsafe_reason(rel):
            continue  # git never reports such names; defensive only
        try:
            st = full.lstat()
        except OSError:
            files.append(
                UntrackedFile(
                    path=rel, size=0, mode="", sha256=None, captured=False, reason="unreadable"
                )
            )
            continue
        if stat_mod.S_ISLNK(st.st_mode):
            target = os.readlink(full)
            files.append(
                UntrackedFile(
                    path=rel, size=len(os.fsencode(target)), mode="120000",
                    sha256=sha256_bytes(os.fsencode(target)), captured=False, reason="symlink",
                    link_target=target,
                )
            )  # fmt: skip
            continue
        if not stat_mod.S_ISREG(st.st_mode):
            files.append(
                UntrackedFile(
                    path=rel, size=0, mode="", sha256=None, captured=False, reason="special"
                )
            )
            continue
        mode = "100755" if st.st_mode & 0o111 else "100644"
        if st.st_size > opts.file_cap:
            files.append(
                UntrackedFile(
                    path=rel,
                    size=st.st_size,
                    mode=mode,
                    sha256=None,
                    captured=False,
                    reason="too_large",
                )
            )
            continue
        if total + st.st_size > opts.total_cap:
            files.append(
                UntrackedFile(
                    path=rel,
                    size=st.st_size,
                    mode=mode,
                    sha256=None,
                    captured=False,
                    reason="total_cap",
                )
            )
            continue
        try:
            data = full.read_bytes()
        except OSError:
            files.append(
                UntrackedFile(
                    path=rel,
                    size=st.st_size,
                    mode=mode,
                    sha256=None,
                    captured=False,
                    reason="unreadable",
                )
            )
            continue
        atomic.write_into(staging, f"untracked/{rel}", data)
        total += len(data)
        files.append(
            UntrackedFile(
                path=rel, size=len(data), mode=mode, sha256=sha256_bytes(data), captured=True
            )
        )
    return UntrackedManifest(
        file_cap_bytes=opts.file_cap,
        total_cap_bytes=opts.total_cap,
        captured_bytes=total,
        files=files,
    )


def _tree_state(
    gs: GitStatusFile, um: UntrackedManifest, tree_sha: str
) -> handoff_mod.WorkingTreeState:
    missing = sum(1 for f in um.files if not f.captured)
    parts = [
        f"{len(gs.staged)} staged",
        f"{len(gs.modified)} modified",
        f"{len(gs.deleted)} deleted",
        f"{len(gs.renamed)} renamed",
        f"{len(um.files)} untracked ({missing} not captured)",
    ]
    if gs.conflicts:
        parts.append(f"{len(gs.conflicts)} CONFLICTED")
    if gs.submodules:
        parts.append(f"{len(gs.submodules)} submodule(s) changed (recorded, not descended)")
    return handoff_mod.WorkingTreeState(
        branch=gs.branch, detached=gs.detached, head=gs.head, worktree_tree_sha=tree_sha,
        staged=len(gs.staged), modified=len(gs.modified), deleted=len(gs.deleted),
        renamed=len(gs.renamed), untracked=len(um.files), untracked_not_captured=missing,
        summary=", ".join(parts) + ".",
    )  # fmt: skip


def _json_bytes(model: Any) -> bytes:
    return atomic.dump_json_bytes(model.model_dump(mode="json"))


def export(root: Path, opts: ExportOptions) -> ExportOutcome:
    """Write a new package for the repository at ``root`` and return what was written."""
    gdir = gitstate.git_dir(root)
    gitstate.ensure_excluded(root)
    head = gitstate.head(root)
    base = head.sha or gitstate.EMPTY_TREE
    # Three independent git questions at once; the untracked copy overlaps with them.
    p_status = gitstate.start(root, gitstate.status_args())
    p_diff = gitstate.start(root, gitstate.diff_args(base))
    p_tree, tmp_index = gitstate.start_worktree_tree(root, gdir)
    try:
        st = gitstate.parse_status(gitstate.finish(p_status, "status"))
        pkg_root = packages_dir(root)
        package_id = new_package_id()
        with atomic.staging_dir(pkg_root) as staging:
            um = _capture_untracked(root, st.untracked, set(st.undecodable), staging, opts)
            patch = gitstate.finish(p_diff, "diff")
            tree_sha = gitstate.finish_worktree_tree(p_tree, tmp_index)
            return _write_package(root, staging, package_id, head, st, um, patch, tree_sha, opts)
    finally:
        for proc in (p_status, p_diff, p_tree):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for p in (tmp_index, tmp_index + ".lock"):
            if os.path.exists(p):
                os.unlink(p)


def _write_package(
    root: Path,
    staging: Path,
    package_id: str,
    head: gitstate.Head,
    st: gitstate.Status,
    um: UntrackedManifest,
    patch: bytes,
    tree_sha: str,
    opts: ExportOptions,
) -> ExportOutcome:
    gs = git_status_file(st, head)
    seed = opts.seed or {}
    tree = _tree_state(gs, um, tree_sha)
    h = handoff_mod.build(
        tree,
        opts.handoff_input,
        goal=opts.goal,
        seeded_failures=seed.get("failed_approaches"),
        goal_candidates=seed.get("goal_candidates"),
        touched_files=seed.get("touched_files"),
    )
    h, redactions = _redact_handoff(h)
    meta = SessionMetadata(
        package_id=package_id,
        created_at=utc_now_iso(),
        contextfork_version=__version__,
        trigger=opts.trigger,
        parent_session_id=opts.session_id or seed.get("session_id"),
        harness=opts.harness or seed.get("harness"),
        repo_name=root.name,
        head=gs.head,
        branch=gs.branch,
        detached=gs.detached,
        unborn=gs.unborn,
        worktree_tree_sha=tree_sha,
        transcript=seed.get("transcript"),
        telemetry=seed.get("telemetry"),
        cold_store_refs=opts.cold_store_refs,
        redactions=redactions,
    )
    files: dict[str, bytes] = {
        "git_diff.patch": patch,
        "git_status.json": _json_bytes(gs),
        "untracked_manifest.json": _json_bytes(um),
        "handoff.json": _json_bytes(h),
        "handoff_summary.md": handoff_mod.render_markdown(h, package_id).encode("utf-8"),
        "session_metadata.json": _json_bytes(meta),
    }
    for rel, data in files.items():
        atomic.write_into(staging, rel, data)
    entries = [
        ManifestEntry(path=rel, sha256=sha256_bytes(data), size=len(data))
        for rel, data in files.items()
    ]
    entries += [
        ManifestEntry(path=f"untracked/{f.path}", sha256=f.sha256 or "", size=f.size)
        for f in um.files
        if f.captured
    ]
    entries.sort(key=lambda e: e.path)
    manifest = Manifest(
        package_id=package_id,
        files=entries,
        package_sha256=canonical_sha256([e.model_dump() for e in entries]),
    )
    atomic.write_into(staging, "manifest.json", _json_bytes(manifest))
    final = packages_dir(root) / package_id
    atomic.publish_dir(staging, final)
    problems = []
    for f in um.files:
        if not f.captured:
            problems.append(
                Problem(
                    "warning",
                    f"untracked_{f.reason}",
                    f"untracked file not captured ({f.reason})",
                    f.path,
                )
            )
    for name in gs.undecodable_names:
        problems.append(Problem("warning", "non_utf8_name", "file name is not valid UTF-8", name))
    return ExportOutcome(package_id, final, manifest, gs, um, problems)


def _redact_handoff(h: handoff_mod.Handoff) -> tuple[handoff_mod.Handoff, int]:
    """Scrub secrets from agent-written handoff text before it is stored."""
    try:
        from contextfork.redact import redact_text
    except ImportError:  # redaction module not installed yet in this build
        return h, 0
    raw = h.model_dump_json()
    clean, found = redact_text(raw)
    if not found:
        return h, 0
    return handoff_mod.Handoff.model_validate_json(clean), len(found)


__all__ = ["STATE_DIR", "ExportOptions", "ExportOutcome", "export", "git_status_file"]
