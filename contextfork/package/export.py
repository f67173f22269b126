"""Export: capture the exact working state plus the 6-part handoff into a new package.

git runs in parallel (status, the binary diff, and the temp-index tree SHA) while Python reads
the untracked files; everything is written into a private staging directory and published with
one rename, so a crash never leaves a half package visible.

This is the pre-commit hook's path, so it builds plain dicts (no pydantic: ~90 ms of model
construction); Python's own work (imports, reading untracked files) overlaps with git's. The file formats are
defined by ``package.models``; tests validate every export against those models and schemas.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_mod
from collections.abc import Callable
from pathlib import Path

from contextfork import __version__, atomic, gitstate, provenance, scratch
from contextfork.envelope import Problem
from contextfork.errors import GitError, RedactionUnavailable
from contextfork.gitstate import pipes
from contextfork.gitstate import staged as staged_mod
from contextfork.hashing import canonical_sha256, sha256_bytes
from contextfork.layout import exclude_state_dir, packages_dir
from contextfork.package import handoff as handoff_mod
from contextfork.package import secrets as secrets_mod
from contextfork.package.store import (
    DEFAULT_FILE_CAP,
    PreviousSnapshots,
    list_packages,
    new_package_id,
    utc_now_iso,
)
from contextfork.paths import unsafe_reason
from contextfork.records import Record
from contextfork.testhooks import kill_point, pause_point

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's path)
if TYPE_CHECKING:
    from typing import Any

    from contextfork.gitstate.reads import Reads

MANIFEST_VERSION = "1.2"
DEFAULT_TOTAL_CAP = 64 << 20  # 64 MiB of snapshots per package


class ExportOptions(Record):
    __match_args__ = ("goal", "session_id", "handoff_input", "trigger", "transcript", "harness",
                      "file_cap", "total_cap", "seed", "cold_store_refs", "claims", "extra_files")  # fmt: skip

    def __init__(
        self, goal: str | None = None, session_id: str | None = None,
        handoff_input: dict[str, Any] | None = None, trigger: str = "cli",
        transcript: Path | None = None, harness: str | None = None,
        file_cap: int = DEFAULT_FILE_CAP, total_cap: int = DEFAULT_TOTAL_CAP,
        seed: dict[str, Any] | None = None, cold_store_refs: list[str] | None = None,
        claims: list[dict[str, Any]] | None = None, extra_files: dict[str, bytes] | None = None,
    ) -> None:  # fmt: skip
        self.goal = goal
        self.session_id = session_id
        self.handoff_input = handoff_input  # validated by handoff_input.parse_input
        self.trigger = trigger
        self.transcript = transcript
        self.harness = harness
        self.file_cap = file_cap
        self.total_cap = total_cap
        self.seed = seed  # from package.seeding (telemetry, failures, goals)
        self.cold_store_refs: list[str] = cold_store_refs if cold_store_refs is not None else []
        self.claims = claims  # the model's citations, checked (package.claims)
        self.extra_files = extra_files  # e.g. the conversation (package.conversation)


class ExportOutcome(Record):
    __match_args__ = ("package_id", "path", "manifest", "git_status", "untracked", "problems")

    def __init__(
        self, package_id: str, path: Path, manifest: dict[str, Any], git_status: dict[str, Any],
        untracked: dict[str, Any], problems: list[Problem],
    ) -> None:  # fmt: skip
        self.package_id = package_id
        self.path = path
        self.manifest = manifest
        self.git_status = git_status
        self.untracked = untracked
        self.problems = problems


def git_status_file(st: gitstate.Status) -> dict[str, Any]:
    """Classify porcelain v2 entries into the IPSF git_status.json lists."""
    gs: dict[str, Any] = {
        "branch": st.branch,
        "detached": st.branch is None,
        "unborn": st.oid is None,
        "head": st.oid,
        "upstream": st.upstream,
        "ahead": st.ahead,
        "behind": st.behind,
        "staged": [], "modified": [], "deleted": [], "added": [], "renamed": [],
        "mode_changes": [], "untracked": sorted(st.untracked), "conflicts": [], "submodules": [],
        "undecodable_names": sorted(set(st.undecodable)),
        "operation": None,
    }  # fmt: skip
    for e in st.entries:
        x, y = e.xy[0], e.xy[1]
        if e.sub.startswith("S"):
            gs["submodules"].append({"path": e.path, "state": e.sub})
            continue
        if e.kind == "u":
            gs["conflicts"].append(e.path)
            continue
        if x != ".":
            gs["staged"].append(e.path)
        if e.kind == "2":
            gs["renamed"].append(
                {"old": e.orig_path or "", "new": e.path, "score": e.score, "staged": True}
            )
        if x == "A":
            gs["added"].append(e.path)
        if "D" in (x, y):
            gs["deleted"].append(e.path)
        elif y in "MT" or x in "MT":
            gs["modified"].append(e.path)
        old, new = e.mode_head, e.mode_worktree
        if old not in ("", "000000") and new not in ("", "000000") and old != new:
            gs["mode_changes"].append({"path": e.path, "old_mode": old, "new_mode": new})
    for key in ("staged", "modified", "deleted", "added", "conflicts"):
        gs[key].sort()
    return gs


def _untracked_entry(
    path: str,
    size: int,
    mode: str,
    sha: str | None,
    reason: str | None,
    target: str | None = None,
    secrets: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "path": path, "size": size, "mode": mode, "sha256": sha, "captured": reason is None,
        "reason": reason, "link_target": target, "secrets": secrets or [],
    }  # fmt: skip


class _UntrackedPlan:
    """What export does with each untracked name, decided from ``lstat`` alone (before git
    starts on the tree): ``files`` has an entry per name, None where the bytes are to be read
    (``to_read``: index, name, mode, size); ``held`` are the raw names of regular files the package
    does not capture, which the tree job hashes without storing (``gitstate.worktree``)."""

    def __init__(self) -> None:
        self.files: list[dict[str, Any] | None] = []
        self.to_read: list[tuple[int, str, str, int]] = []
        self.held: list[bytes] = []


def _plan_untracked(root: Path, st: gitstate.Status, opts: ExportOptions) -> _UntrackedPlan:
    plan = _UntrackedPlan()
    files = plan.files
    raw_of = dict(zip(st.untracked, st.untracked_raw, strict=False))
    undecodable = set(st.undecodable)
    total = 0
    for rel in sorted(st.untracked):
        raw = raw_of.get(rel) or rel.encode("utf-8", "surrogateescape")
        full = root / rel
        if rel in undecodable:
            files.append(_untracked_entry(rel, 0, "", None, "non_utf8_name"))
            with contextlib.suppress(OSError):
                if stat_mod.S_ISREG(os.lstat(os.path.join(os.fsencode(root), raw)).st_mode):
                    plan.held.append(raw)
            continue
        if unsafe_reason(rel):
            continue  # git never reports such names; defensive only
        try:
            st_ = full.lstat()
        except OSError:
            files.append(_untracked_entry(rel, 0, "", None, "unreadable"))
            continue
        if stat_mod.S_ISLNK(st_.st_mode):
            target = os.fsencode(os.readlink(full))
            files.append(
                _untracked_entry(
                    rel, len(target), "120000", sha256_bytes(target), "symlink", os.fsdecode(target)
                )
            )
            continue
        if not stat_mod.S_ISREG(st_.st_mode):
            files.append(_untracked_entry(rel, 0, "", None, "special"))
            continue
        mode = "100755" if st_.st_mode & 0o111 else "100644"
        reason = "too_large" if st_.st_size > opts.file_cap else (
            "total_cap" if total + st_.st_size > opts.total_cap else None)  # fmt: skip
        if reason is not None:
            files.append(_untracked_entry(rel, st_.st_size, mode, None, reason))
            plan.held.append(raw)
            continue
        total += st_.st_size
        plan.to_read.append((len(files), rel, mode, st_.st_size))
        files.append(None)
    return plan


def _capture_untracked(
    root: Path, plan: _UntrackedPlan, writer: atomic.BackgroundWriter, opts: ExportOptions,
    previous: Path | None = None,
) -> dict[str, Any]:  # fmt: skip
    files = plan.files
    captured: list[tuple[int, bytes]] = []
    total = 0
    reuse = PreviousSnapshots(previous)
    for i, rel, mode, size in plan.to_read:
        try:
            data = (root / rel).read_bytes()
        except OSError:
            files[i] = _untracked_entry(rel, size, mode, None, "unreadable")
            continue
        # it may have grown since lstat: the caps hold for what would be stored
        reason = "too_large" if len(data) > opts.file_cap else (
            "total_cap" if total + len(data) > opts.total_cap else None)  # fmt: skip
        if reason is not None:
            files[i] = _untracked_entry(rel, len(data), mode, None, reason)
            continue
        src = reuse.source(rel)
        if src is None or not writer.link(f"untracked/{rel}", src, data):
            writer.write(f"untracked/{rel}", data)  # created and fsynced while we go on
        total += len(data)
        captured.append((i, data))
        files[i] = _untracked_entry(rel, len(data), mode, sha256_bytes(data), None)
    # Secret kinds are recorded, never removed (the bytes stay exact); one keyword pass for all.
    found = secrets_mod.kinds_in_many([data for _i, data in captured])
    for (i, _data), kinds in zip(captured, found, strict=True):
        entry = files[i]
        assert entry is not None
        entry["secrets"] = kinds
    return {
        "manifest_version": MANIFEST_VERSION,
        "file_cap_bytes": opts.file_cap,
        "total_cap_bytes": opts.total_cap,
        "captured_bytes": total,
        "files": [f for f in files if f is not None],
    }


def _tree_state(gs: dict[str, Any], um: dict[str, Any], tree_sha: str) -> dict[str, Any]:
    missing = sum(1 for f in um["files"] if not f["captured"])
    n = {k: len(gs[k]) for k in ("staged", "modified", "deleted", "renamed")}
    parts = [f"{v} {k}" for k, v in n.items()] + [
        f"{len(um['files'])} untracked ({missing} not captured)"
    ]
    if gs["conflicts"]:
        parts.append(f"{len(gs['conflicts'])} CONFLICTED")
    if gs["submodules"]:
        parts.append(f"{len(gs['submodules'])} submodule(s) changed (recorded, not descended)")
    return {
        "branch": gs["branch"], "detached": gs["detached"], "head": gs["head"],
        "worktree_tree_sha": tree_sha, **n, "untracked": len(um["files"]),
        "untracked_not_captured": missing, "summary": ", ".join(parts) + ".",
    }  # fmt: skip


def export(
    root: Path, opts: ExportOptions, loc: gitstate.Location | None = None,
    reads: Reads | None = None,
) -> ExportOutcome:  # fmt: skip
    """Write a new package for the repository at ``root`` and return what was written.
    ``reads``: status and the diff against HEAD, started by the caller (the git hook:
    ``gitstate.early`` or ``start_export_reads``); export finishes or stops them whatever
    happens."""
    try:
        loc = loc or gitstate.locate(root)
        base = packages_dir(root)  # refuses a symlinked .contextfork before anything is written
        exclude_state_dir(root, common=loc.common_dir)
        # HEAD comes from status (branch.oid / branch.head); the work-tree diff follows status
        # (gitstate.reads), against the empty tree on an unborn HEAD. Outputs are read as git
        # writes them, so status and the diffs run to the end while Python works below
        # instead of waiting on a full pipe.
        reads = reads or gitstate.start_export_reads(root, loc.git_dir)
    except BaseException:
        if reads is not None:
            reads.discard()
        raise
    d_status = reads.status
    d_diff: pipes.Drained | None = None
    d_staged: pipes.Drained | None = None
    tree: gitstate.TreeJob | None = None
    try:
        # While git works on the other core: the imports the package needs later (the secret
        # rules cost more CPU than anything else export does).
        _redactor()  # refuses here, before anything is staged, when it cannot load
        # Leftovers of killed exports (their owner is dead, or they are old): never a live one's.
        scratch.sweep_stale(packages_dir(root), (".staging-", ".trash-"))
        gitstate.sweep_stale_temps(loc.git_dir)
        st = gitstate.parse_status(d_status.finish("status"))
        if st.oid is not None:
            d_diff = gitstate.start_worktree_diff(root, st)
        plan_u = _plan_untracked(root, st, opts)
        # The tree: just what status found changed, hashed into a temporary index while the
        # diffs still run; no blob is stored (gitstate.worktree).
        objects = loc.common_dir / "objects"
        tree = gitstate.start_worktree_tree(root, loc.git_dir, st.worktree_paths, plan_u.held, objects)
        # The staged patch: sections of the work-tree patch where index and work tree agree,
        # plus --cached for the paths where they do not (gitstate.staged).
        plan = staged_mod.plan(st) if st.oid is not None else None
        if plan is not None:
            asking = plan.start(root)
            d_staged = pipes.drain(asking) if asking is not None else None
        elif st.oid is not None:
            d_staged = pipes.drain(gitstate.start(root, gitstate.diff_args("HEAD", cached=True)))
        refs = list_packages(root) if plan_u.to_read else []
        previous = refs[-1].path if refs else None
        with atomic.staging_dir(base) as staging, atomic.BackgroundWriter(staging) as writer:
            package_id = new_package_id()
            um = _capture_untracked(root, plan_u, writer, opts, previous)
            kill_point("export:staged")
            pause_point("export:staged")
            if st.oid is None:
                patch = gitstate.diff_patch(root, gitstate.EMPTY_TREE)
                staged = gitstate.diff_patch(root, gitstate.EMPTY_TREE, cached=True)
            else:
                patch = d_diff.finish("diff") if d_diff is not None else b""
                asked = d_staged.finish("diff --cached") if d_staged is not None else b""
                cut = staged_mod.assemble(plan, patch, asked) if plan is not None else asked
                # a section it could not vouch for: git's own --cached diff, whole
                staged = cut if cut is not None else gitstate.diff_patch(root, "HEAD", cached=True)
            try:
                tree_sha = tree.result()
            except GitError:  # a name git refused since status (edited meanwhile), or an old git
                tree_sha = gitstate.worktree_tree_sha(root, plan_u.held, scratch=True)
            op = gitstate.operation_in_progress(loc.git_dir)
            return _write_package(root, writer, package_id, st, um, (patch, staged), tree_sha,
                                  opts, op)  # fmt: skip
    finally:
        if tree is not None:
            tree.cancel()
        d_status.discard()
        if d_diff is not None:
            d_diff.discard()
        if d_staged is not None:
            d_staged.discard()


def _write_package(
    root: Path, writer: atomic.BackgroundWriter, package_id: str, st: gitstate.Status,
    um: dict[str, Any], patches: tuple[bytes, bytes], tree_sha: str, opts: ExportOptions,
    operation: str | None = None,
) -> ExportOutcome:  # fmt: skip
    patch, staged = patches
    gs = git_status_file(st)
    gs["operation"] = operation
    seed = opts.seed or {}
    given = bool(opts.handoff_input or seed.get("harvested"))
    parts: dict[str, Any] = {}
    part_sources: dict[str, Any] = {}
    if given:  # a checkpoint has neither: claims stays unloaded (the hook's path, issue 27)
        from contextfork.package import claims as claims_mod  # lazy: hot path

        parts, part_sources = claims_mod.merge_harvest(opts.handoff_input, seed.get("harvested"))
    h = handoff_mod.build(
        _tree_state(gs, um, tree_sha),
        parts,
        goal=opts.goal,
        seeded_failures=seed.get("failed_approaches"),
        goal_candidates=seed.get("goal_candidates"),
        touched_files=seed.get("touched_files"),
    )
    h, redactions = _redact(h)
    record = None
    if given:
        record = claims_mod.record(opts.claims, part_sources, len(seed.get("failed_approaches") or []))
        record, n = _redact(record)
        redactions += n
    meta = {
        "manifest_version": MANIFEST_VERSION,
        "package_id": package_id,
        "created_at": utc_now_iso(),
        "contextfork_version": __version__,
        "trigger": opts.trigger,
        "parent_session_id": opts.session_id or seed.get("session_id"),
        "child_session_id": None,
        "harness": opts.harness or seed.get("harness"),
        "repo_name": root.name,
        "head": gs["head"],
        "branch": gs["branch"],
        "detached": gs["detached"],
        "unborn": gs["unborn"],
        "worktree_tree_sha": tree_sha,
        "transcript": seed.get("transcript"),
        "telemetry": seed.get("telemetry"),
        "cold_store_refs": list(opts.cold_store_refs),
        "redactions": 0,
    }
    # The metadata carries transcript-derived text too (the failed-commands seed in telemetry,
    # the transcript path): every string goes through the scrubber, like the handoff.
    meta, meta_redactions = _redact(meta)
    meta["redactions"] = redactions + meta_redactions
    files: dict[str, bytes] = {
        "git_diff.patch": patch,
        # The staged part alone, so `resume --apply` can put the index back as it was (staged
        # stays staged, unstaged stays unstaged, a partly staged file keeps both versions).
        "git_index.patch": staged,
        "git_status.json": atomic.dump_json_bytes(gs),
        "untracked_manifest.json": atomic.dump_json_bytes(um),
        "handoff.json": atomic.dump_json_bytes(h),
        "handoff_summary.md": handoff_mod.render_markdown(h, package_id, record).encode("utf-8"),
        "session_metadata.json": atomic.dump_json_bytes(meta),
    }
    if record is not None:
        files["handoff_claims.json"] = atomic.dump_json_bytes(record)
    files.update(opts.extra_files or {})
    staging = writer.directory
    for rel, data in files.items():
        atomic.write_into(staging, rel, data)
    entries = [
        {"path": rel, "sha256": sha256_bytes(data), "size": len(data)}
        for rel, data in files.items()
    ]
    entries += [
        {"path": f"untracked/{f['path']}", "sha256": f["sha256"], "size": f["size"]}
        for f in um["files"]
        if f["captured"]
    ]
    entries.sort(key=lambda e: str(e["path"]))
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "package_id": package_id,
        "files": entries,
        "package_sha256": canonical_sha256(entries),
    }
    manifest_bytes = atomic.dump_json_bytes(manifest)
    atomic.write_into(staging, "manifest.json", manifest_bytes)
    # made here: recorded in the git dir before it is published (contextfork.provenance)
    # its directory is flushed with the package's files: one fsync round
    record_dir = provenance.record_export_manifest(root, package_id, manifest_bytes)
    final = packages_dir(root) / package_id
    atomic.publish_dir(staging, final, writer=writer, also_flush=[record_dir])
    problems = [
        Problem(
            "warning",
            f"untracked_{f['reason']}",
            f"untracked file not captured ({f['reason']})",
            f["path"],
        )
        for f in um["files"]
        if not f["captured"]
    ]
    problems += [
        Problem("warning", "non_utf8_name", "file name is not valid UTF-8", n)
        for n in gs["undecodable_names"]
    ]
    if gs["operation"]:
        problems.append(
            Problem(
                "warning",
                "operation_in_progress",
                f"a {gs['operation']} is in progress: its conflicts and working state are captured, "
                f"but not git's own {gs['operation']} state (finish or redo it after resume)",
            )
        )
    problems += secrets_mod.problems({f["path"]: f["secrets"] for f in um["files"] if f["secrets"]})
    return ExportOutcome(package_id, final, manifest, gs, um, problems)


def _redactor() -> Callable[[str], tuple[str, list[Any]]]:
    """``redact.redact_text``; RedactionUnavailable (exit 3) when it cannot be imported: the
    package would otherwise carry the handoff and metadata unscrubbed."""
    try:
        from contextfork.redact import redact_text  # lazy: imported while git works
    except ImportError as exc:
        raise RedactionUnavailable(
            f"secret redaction cannot load ({exc}): export refused, no package written",
            hint="reinstall contextfork",
        ) from exc
    return redact_text


def _redact(obj: Any) -> tuple[Any, int]:
    """Scrub secrets from every string of agent/transcript-derived text before it is stored."""
    if isinstance(obj, str):
        clean, found = _redactor()(obj)
        return clean, len(found)
    if isinstance(obj, list):
        pairs = [_redact(v) for v in obj]
        return [p[0] for p in pairs], sum(p[1] for p in pairs)
    if isinstance(obj, dict):
        total = 0
        out = {}
        for k, v in obj.items():
            out[k], n = _redact(v)
            total += n
        return out, total
    return obj, 0
