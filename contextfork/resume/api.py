"""``contextfork resume``: validate, measure drift, optionally apply, brief, mark consumed.

One function shared by the CLI, the harness hooks (SessionStart) and the MCP server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextfork import provenance, signing
from contextfork.envelope import Problem, Result
from contextfork.errors import ExitCode, NotProvenanced
from contextfork.package import store
from contextfork.package.models import Handoff, SessionMetadata, UntrackedManifest
from contextfork.package.validate import INTEGRITY_CODES, validate_package
from contextfork.resume import apply as apply_mod
from contextfork.resume import brief, drift, journal, state

# Validation findings that describe the repository rather than a broken package: resume goes on
# and reports them as drift instead of refusing.
_REPO_CODES = frozenset({"head_missing", "unfilled_placeholder"})


def _load(pkg: Path) -> tuple[SessionMetadata, UntrackedManifest, Handoff]:
    def read(name: str) -> Any:
        return json.loads((pkg / name).read_text(encoding="utf-8"))

    return (
        SessionMetadata.model_validate(read("session_metadata.json")),
        UntrackedManifest.model_validate(read("untracked_manifest.json")),
        Handoff.model_validate(read("handoff.json")),
    )


def resume(
    root: Path,
    spec: str | None,
    *,
    apply: bool = False,
    strict: bool = False,
    force: bool = False,
    allow_different_head: bool = False,
    session_id: str | None = None,
    mark: bool = True,
    trust: bool = False,
    shown_summary: str | None = None,
) -> Result:
    """``trust``: accept a package that has no provenance record here (the user inspected it);
    without it such a package is refused (``NotProvenanced``), and ``spec=None`` takes the
    newest package that is offered. ``shown_summary``: SHA-256 of the compaction summary the
    reading session already carries (a fork): parts harvested from it are not repeated."""
    ref = store.resolve(root, spec) if spec else store.latest_offered(root)
    standing = provenance.standing(root, ref.package_id, ref.path)
    if trust and not standing.offered and signing.required(root):
        raise NotProvenanced(f"{standing.problem}; --trust cannot stand in for a signature while "
                             "contextfork.requireSignedPackages is true")  # fmt: skip
    if trust and not standing.offered:
        # the user vouches for these bytes after inspecting them: checked below like any other
        prior = provenance.package_record(root, ref.package_id)  # kept for the audit trail
        provenance.record_package(root, ref.package_id, ref.path, "trust", replaced=prior)
        standing = provenance.standing(root, ref.package_id, ref.path)
    if not standing.offered:
        raise NotProvenanced(
            f"{standing.problem}; refusing to resume it",
            hint=f"inspect it (`contextfork validate {ref.package_id}`, `contextfork packages "
            f"show {ref.package_id}`); `contextfork resume {ref.package_id} --trust` accepts it",
        )
    v = validate_package(ref.path, root)
    problems = [
        Problem("warning", p.code, p.message, p.path) if p.code in _REPO_CODES else p
        for p in v.problems
    ]
    # its own signature, from its provenance record (never a ref that can be moved)
    problems += signing.local_problems(standing.home or root, ref.package_id, ref.path,
                                       standing.record)  # fmt: skip
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        tampered = any(p.code in INTEGRITY_CODES or p.code in signing.CODES for p in errors)
        what = "fails its integrity check (tampered or truncated)" if tampered else "is invalid"
        return Result(
            "resume",
            data={"package_id": ref.package_id, "path": str(ref.path), "valid": False},
            problems=problems,
            exit_code=int(ExitCode.INTEGRITY if tampered else ExitCode.CHECK_FAILED),
            text=f"Package {ref.package_id} {what}; refusing to resume it.",
        )
    meta, um, handoff = _load(ref.path)
    if not apply:
        pending = journal.load(root)
        if pending is not None:
            problems.append(Problem(
                "warning", "apply_interrupted",
                f"an interrupted `resume --apply` of package {pending.get('package_id')} left this "
                "checkout half-restored: finish it with `resume --apply` or undo it with "
                "`resume --rollback`",
            ))  # fmt: skip
    applied = None
    if apply:
        applied = apply_mod.apply_package(
            root, ref.path, meta, um, force=force, allow_different_head=allow_different_head
        )
    report = drift.compute(root, ref.path, meta, um, applied.tree_after if applied else None)
    before = state.load(ref.path, ref.package_id)
    # A shell's `resume --apply` restored files but gave the brief to no session: not a reader.
    read = before.model_copy(
        update={"consumptions": [c for c in before.consumptions if c.session_id or not c.applied]}
    )
    if read.consumptions:
        last = read.consumptions[-1]
        problems.append(
            Problem(
                "warning",
                "already_consumed",
                f"package was already resumed {len(read.consumptions)} time(s), last at "
                f"{last.at} by session {last.session_id or '(unknown)'}",
            )
        )
    exit_code = 0
    if applied is not None and applied.recovered:
        problems.append(Problem("warning", "apply_recovered", "an interrupted `resume --apply` "
                                "of this package was rolled back from its journal and redone"))  # fmt: skip
    for note in applied.notes if applied is not None else []:
        problems.append(Problem("warning", "apply_note", note))
    if applied is not None and not applied.exact:
        # Not exact is a failed restore (exit 1), whatever the reason; the reason is listed.
        why = f"{len(applied.not_restored)} file(s) could not be restored"
        problems.append(
            Problem("error", "apply_not_exact",
                    f"restored tree differs from the recorded tree ({why})")
        )  # fmt: skip
        exit_code = int(ExitCode.CHECK_FAILED)
    if strict and report.drifted and not exit_code:
        exit_code = int(ExitCode.DRIFT)
        problems.append(Problem("error", "drift", "the live repository drifted from the package"))
    text = brief.render(ref.package_id, meta, handoff, report, read, applied, root,
                        _claims_record(ref.path), standing.record, shown_summary)
    if mark:
        state.mark_consumed(
            ref.path, ref.package_id, session_id=session_id, applied=applied is not None,
            drift=report.drifted,
        )  # fmt: skip
    data = {
        "package_id": ref.package_id,
        "path": str(ref.path),
        "valid": True,
        "provenance": standing.record,
        "drift": report.to_json(),
        "applied": applied.to_json() if applied else None,
        "consumed_before": [c.model_dump() for c in before.consumptions],
        "state_file": str(state.state_path(ref.path)) if mark else None,
        "brief": text,
    }
    return Result("resume", data=data, problems=problems, exit_code=exit_code, text=text)


def _claims_record(pkg: Path) -> dict[str, Any] | None:
    """``handoff_claims.json`` when the package has one (hashed by its manifest like the rest)."""
    try:
        data = json.loads((pkg / "handoff_claims.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def rollback(root: Path) -> Result:
    """``resume --rollback``: put back the checkout an interrupted ``--apply`` was working on."""
    done = apply_mod.rollback(root)
    text = (f"Rolled back the interrupted apply of package {done['package_id']} "
            f"({done['restored']} path(s) and the index restored).")  # fmt: skip
    return Result("resume", data={"rolled_back": True, **done}, text=text)
