"""The session half of ``contextfork status``: the IPSF context metrics of one transcript.

The whole report (these figures, the repository's state and its latest package) is assembled in
``contextfork.status``, above both this package and ``contextfork.package`` (whose export records
``session_telemetry`` too).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextfork import layout
from contextfork.telemetry import accounting, policy
from contextfork.telemetry.models import (
    Billing,
    Breakdown,
    CompactionInfo,
    FailedCommand,
    Policy,
    PolicyInfo,
    RiskInfo,
    SessionInfo,
    StepStats,
    Tokens,
    load_policy_file,
)

if TYPE_CHECKING:
    from contextfork.transcript.model import Session


def _parse_ts(ts: str | None) -> datetime | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def load_policy(root: Path | None) -> PolicyInfo:
    """The repository's policy.json (strictly validated) or the IPSF defaults."""
    if root is not None:
        path = layout.policy_file(root)
        if path.exists():
            return PolicyInfo(source=str(path), policy=load_policy_file(path))
    return PolicyInfo(source="defaults", policy=Policy())


def billing(session: Session) -> Billing:
    """ccusage's totals for Claude Code files; the sum of recorded step usage elsewhere."""
    if session.format == "claude-code" and session.path:
        from contextfork.telemetry.scan import billing_totals

        return Billing(method="ccusage", **billing_totals(Path(session.path)))
    sessions = [session, *session.subagents]
    usages = [s.usage for sess in sessions for s in sess.steps if s.usage is not None]
    inp = sum(u.input_tokens for u in usages)
    out = sum(u.output_tokens for u in usages)
    cc = sum(u.cache_creation_input_tokens for u in usages)
    cr = sum(u.cache_read_input_tokens for u in usages)
    return Billing(
        method="step-usage", input_tokens=inp, output_tokens=out,
        cache_creation_input_tokens=cc, cache_read_input_tokens=cr,
        total_tokens=inp + out + cc + cr, entries=len(usages), files=1,
    )


class Facts:
    """What the session half of the report is made of: from a ``Session`` (``facts``) or from
    the Claude Code fast pass (``contextfork.telemetry.ccstatus``), assembled by one function."""

    def __init__(
        self, *, info: dict[str, Any], acc: accounting.Accounting, since_compaction: int,
        n_steps: int, tool_calls: int, tool_errors: int, compactions: list[dict[str, Any]],
        touched: list[str], failed: list[dict[str, Any]], billing: Billing,
    ) -> None:
        self.info = info
        self.acc = acc
        self.since_compaction = since_compaction
        self.n_steps = n_steps
        self.tool_calls = tool_calls
        self.tool_errors = tool_errors
        self.compactions = compactions
        self.touched = touched
        self.failed = failed
        self.billing = billing


def facts(session: Session) -> Facts:
    """The figures of a loaded session."""
    acc = accounting.account(session)
    results = [r for s in session.steps for r in s.tool_results]
    return Facts(
        info={
            "format": session.format, "session_id": session.session_id, "path": session.path,
            "model": session.model, "cwd": session.cwd, "git_branch": session.git_branch,
            "started_at": session.started_at, "ended_at": session.ended_at,
            "malformed_lines": session.malformed_lines, "subagents": len(session.subagents),
        },
        acc=acc, since_compaction=len(acc.active_steps), n_steps=len(session.steps),
        tool_calls=len(session.tool_calls), tool_errors=sum(1 for r in results if r.is_error),
        compactions=[c.model_dump() for c in session.compactions],
        touched=accounting.touched_files(session)[0],
        failed=accounting.failed_commands(session), billing=billing(session),
    )


def session_telemetry(
    session: Session, pol: Policy, *, context_window: int | None = None
) -> dict[str, Any]:
    """The session half of the report (also what the handoff export records)."""
    return telemetry_of(facts(session), pol, context_window=context_window)


def telemetry_of(f: Facts, pol: Policy, *, context_window: int | None = None) -> dict[str, Any]:
    """The session half of the report from its ``Facts``."""
    acc = f.acc
    n_steps = f.n_steps
    since_fork = n_steps - acc.inherited_steps if acc.inherited_steps else None
    own_steps = n_steps if since_fork is None else since_fork  # a fork is judged on its own
    risk = policy.evaluate(acc.total, own_steps, pol.model_dump())
    started, ended = _parse_ts(f.info["started_at"]), _parse_ts(f.info["ended_at"])
    pct = None
    if context_window and acc.total is not None:
        pct = round(100.0 * acc.total / context_window, 1)
    return {
        "session": SessionInfo(
            **f.info, age_seconds=(ended - started).total_seconds() if started and ended else None,
        ),
        "tokens": Tokens(
            total=acc.total, source=acc.source,
            breakdown=Breakdown(**acc.breakdown),
            breakdown_method=acc.breakdown_method,
            scaled_to_recorded=acc.scaled_to_recorded,
            last_output_tokens=acc.last_output_tokens, context_window=context_window,
            context_used_percent=pct, includes_harness_overhead=acc.includes_harness_overhead,
            harness_overhead=acc.harness_overhead,
        ),
        "steps": StepStats(
            total=n_steps, since_compaction=f.since_compaction, since_fork=since_fork,
            tool_calls=f.tool_calls, tool_errors=f.tool_errors,
        ),
        "compactions": [CompactionInfo(**c) for c in f.compactions],
        "touched_files": f.touched,
        "failed_commands": [
            FailedCommand(**{k: v for k, v in x.items() if k != "call_id"}) for x in f.failed
        ],
        "billing": f.billing,
        "risk": RiskInfo(**risk, badge=policy.badge(
            acc.total, own_steps, risk, chain=n_steps if since_fork is not None else None,
            source=acc.source, messages_only=not acc.includes_harness_overhead,
        )),
    }
