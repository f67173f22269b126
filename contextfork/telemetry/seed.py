"""What the handoff export can fill in from a transcript, marked as machine-seeded.

The export (``contextfork.package``) calls ``seed_session``; everything here is derived
deterministically from the transcript, and the agent confirms or corrects it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from contextfork.hashing import sha256_file
from contextfork.telemetry import accounting
from contextfork.telemetry.models import Policy
from contextfork.transcript.model import Session

_GOAL_CHARS = 1000


def _failed_approach(f: dict[str, Any]) -> dict[str, Any]:
    """A part-4 entry (shape of ``package.handoff.FailedApproach``) for one failed call."""
    code = f" (exit {f['exit_code']})" if f.get("exit_code") is not None else ""
    cmd = " ".join(f["command"].split())
    short = cmd if len(cmd) <= 160 else cmd[:159] + "…"
    return {
        "approach": f"step {f['step']}: {f['tool']} `{short}` failed{code}",
        "barred_action": (
            f"Do not re-run `{short}` unchanged; address the error shown first "
            "(machine-seeded: confirm or correct)"
        ),
        "error_excerpt": f["error_excerpt"],
        "step": f["step"],
        "evidence": [
            {"kind": "step", "ref": str(f["step"]), "note": f"tool call {f['call_id']}"},
            {"kind": "command", "ref": cmd[:500]},
        ],
        "machine_seeded": True,
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def goal_candidates(session: Session) -> list[str]:
    """The first and the latest request the user typed (one entry when they are the same)."""
    reqs = accounting.user_requests(session)
    if not reqs:
        return []
    from contextfork.redact import redact_text  # before the cut, so no half secret is kept

    picks = [redact_text(reqs[0][1])[0], redact_text(reqs[-1][1])[0]]
    out: list[str] = []
    for text in picks:
        t = text if len(text) <= _GOAL_CHARS else text[: _GOAL_CHARS - 1] + "…"
        if t not in out:
            out.append(t)
    return out


def seed_session(
    session: Session, *, policy: Policy | None = None, with_hash: bool = True
) -> dict[str, Any]:
    """Everything the export can know from ``session``.

    Keys: ``session_id``, ``harness`` (format), ``transcript`` ({path, sha256, size, format}),
    ``telemetry`` (the status report's session part, JSON-ready), ``touched_files``,
    ``modified_files``, ``goal_candidates``, ``failed_commands`` ([{step, tool, call_id,
    command, exit_code, error_excerpt}]), ``failed_approaches`` (dicts shaped like
    ``FailedApproach`` with evidence and ``machine_seeded: true``).
    """
    from contextfork.telemetry.status import session_telemetry

    telemetry = {
        k: _jsonable(v) for k, v in session_telemetry(session, policy or Policy()).items()
    }
    failures = accounting.failed_commands(session)
    touched, modified = accounting.touched_files(session)
    transcript = None
    if session.path and with_hash and Path(session.path).is_file():
        digest, size = sha256_file(Path(session.path))
        transcript = {"path": session.path, "sha256": digest, "size": size,
                      "format": session.format}
    return {
        "session_id": session.session_id,
        "harness": session.format,
        "transcript": transcript,
        "telemetry": telemetry,
        "touched_files": touched,
        "modified_files": modified,
        "goal_candidates": goal_candidates(session),
        "failed_commands": failures,
        "failed_approaches": [_failed_approach(f) for f in failures],
    }


def seed_from_path(path: Path) -> dict[str, Any]:
    """Convenience for the export: load any supported transcript, then ``seed_session``."""
    from contextfork.transcript import load_session

    return seed_session(load_session(path))
