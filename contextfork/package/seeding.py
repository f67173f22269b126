"""What the export can know from a transcript: telemetry, failed commands, touched files, goals.

``seed_session`` derives everything deterministically from the transcript and marks it as
machine-seeded (the agent confirms or corrects it); ``seed_from_transcript`` resolves which
transcript to read (``--transcript PATH`` or ``--transcript auto``: the Claude Code session that
did the work in the repository, see ``pick_session``). ``check_trigger`` validates the trigger
name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from contextfork.errors import UsageError
from contextfork.hashing import sha256_file
from contextfork.inputfile import require_regular
from contextfork.package.harvest import harvest
from contextfork.telemetry import accounting
from contextfork.telemetry.models import Policy
from contextfork.telemetry.status import session_telemetry
from contextfork.transcript.model import Session

TRIGGERS = ("cli", "pre-commit", "pre-compact", "mcp", "fork", "demo")


def check_trigger(value: str) -> str:
    if value not in TRIGGERS:
        raise UsageError(f"unknown trigger {value!r}; one of {', '.join(TRIGGERS)}")
    return value


def resolve_transcript(spec: Path, root: Path) -> Path:
    if str(spec) == "auto":
        from contextfork.package.pick_session import choose

        return choose(root).chosen.path
    return require_regular(spec, "transcript")


def seed_from_transcript(spec: Path, root: Path) -> dict[str, Any]:
    """Seed dict for ``ExportOptions.seed`` (see ``seed_session`` for keys)."""
    return seed_from_path(resolve_transcript(spec, root))


_GOAL_CHARS = 1000


# How the harnesses word a tool call the user declined or interrupted. It comes back as an error
# result, but it is the user's decision, not an approach that failed: never a barred action.
_REFUSALS = (
    "The user doesn't want to proceed with this tool use",  # Claude Code: permission denied
    "The user doesn't want to take this action",  # Claude Code, older wording
    "[Request interrupted by user",  # Claude Code: Esc during a tool call
    "exec command rejected by user",  # Codex: command approval declined
    "patch rejected by user",  # Codex: apply_patch approval declined
)
_EVIDENCE_STEPS = 10  # the latest failures of one command cited as evidence


def is_user_refusal(output: str) -> bool:
    return output.lstrip().startswith(_REFUSALS)


def _failed_approach(fs: list[dict[str, Any]]) -> dict[str, Any]:
    """A part-4 entry (shape of ``package.handoff.FailedApproach``) for one command's failures.

    The approach names the call once; the step, the error and the exit codes are the latest
    failure's (the one the next session would repeat); each failure's step is evidence. The
    barred action is the action itself — every brief prefixes its own "do not".
    """
    last = fs[-1]
    codes = list(dict.fromkeys(str(f["exit_code"]) for f in fs if f.get("exit_code") is not None))
    code = f" (exit {', '.join(codes)})" if codes else ""
    times = f" {len(fs)} times" if len(fs) > 1 else ""
    cmd = " ".join(last["command"].split())
    short = cmd if len(cmd) <= 160 else cmd[:159] + "…"
    tool = str(last["tool"])
    # describe_call names non-shell calls "Read /path": say the tool once ("Read `/path`")
    what = short[len(tool) + 1 :] if short.startswith(f"{tool} ") else short
    steps = [
        {"kind": "step", "ref": str(f["step"]), "note": f"tool call {f['call_id']}"}
        for f in fs[-_EVIDENCE_STEPS:]
    ]
    return {
        "approach": f"{tool} `{what}` failed{times}{code}",
        "barred_action": (
            f"re-run `{short}` unchanged; address the error shown first "
            "(machine-seeded: confirm or correct)"
        ),
        "error_excerpt": last["error_excerpt"],
        "step": last["step"],
        "evidence": [*steps, {"kind": "command", "ref": cmd[:500]}],
        "machine_seeded": True,
    }


def failed_approaches(failures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per failing command (tool + command), in order of first failure; tool calls
    the user declined or interrupted are left out."""
    by_call: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for f in failures:
        if is_user_refusal(str(f.get("error_excerpt") or "")):
            continue
        by_call.setdefault((f["tool"], " ".join(f["command"].split())), []).append(f)
    return [_failed_approach(fs) for fs in by_call.values()]


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
    command, exit_code, error_excerpt}]: every error result, as recorded),
    ``failed_approaches`` (dicts shaped like ``FailedApproach`` with evidence and
    ``machine_seeded: true``: one per failing command, user refusals left out), ``harvested``
    (the parts the harness's last compaction summary answers, with provenance, or None).
    """
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
        "failed_approaches": failed_approaches(failures),
        "harvested": harvest(session),
    }


def seed_from_path(path: Path) -> dict[str, Any]:
    """Load any supported transcript, then ``seed_session``."""
    from contextfork.transcript import load_session

    return seed_session(load_session(path))
