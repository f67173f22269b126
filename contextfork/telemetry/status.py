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

if TYPE_CHECKING:
    from contextfork.telemetry.models import Policy, PolicyInfo
    from contextfork.transcript.model import Session

#: ``Policy().model_dump(mode="json")``: the IPSF defaults, without importing pydantic (a test
#: pins the two equal).
DEFAULT_POLICY: dict[str, Any] = {
    "policy_version": "1", "tokens": {"warning": 50_000, "fork": 80_000, "hard_limit": None},
    "steps": {"warning": 75, "fork": 120}, "slices": None, "proxy": None,
}


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
    from contextfork.telemetry.models import Policy, PolicyInfo, load_policy_file

    if root is not None:
        path = layout.policy_file(root)
        if path.exists():
            return PolicyInfo(source=str(path), policy=load_policy_file(path))
    return PolicyInfo(source="defaults", policy=Policy())


def policy_data(root: Path | None) -> dict[str, Any]:
    """``load_policy(root).model_dump(mode="json")``; pydantic is imported only to validate a
    policy.json (``status`` of a repository without one does not load it)."""
    if root is not None and layout.policy_file(root).exists():
        return load_policy(root).model_dump(mode="json")
    return {"source": "defaults", "policy": _copy(DEFAULT_POLICY)}


def _copy(v: Any) -> Any:
    return {k: _copy(x) for k, x in v.items()} if isinstance(v, dict) else v


def billing_data(method: str, totals: dict[str, int]) -> dict[str, Any]:
    """The report's ``billing`` (the ``Billing`` model's fields, in its order)."""
    return {"method": method, **{k: totals[k] for k in _BILLING}}


_BILLING = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
            "cache_read_input_tokens", "total_tokens", "entries", "files")  # fmt: skip


def billing(session: Session) -> dict[str, Any]:
    """ccusage's totals for Claude Code files; the sum of recorded step usage elsewhere."""
    if session.format == "claude-code" and session.path:
        from contextfork.telemetry.scan import billing_totals

        return billing_data("ccusage", billing_totals(Path(session.path)))
    sessions = [session, *session.subagents]
    usages = [s.usage for sess in sessions for s in sess.steps if s.usage is not None]
    inp = sum(u.input_tokens for u in usages)
    out = sum(u.output_tokens for u in usages)
    cc = sum(u.cache_creation_input_tokens for u in usages)
    cr = sum(u.cache_read_input_tokens for u in usages)
    return billing_data("step-usage", {
        "input_tokens": inp, "output_tokens": out, "cache_creation_input_tokens": cc,
        "cache_read_input_tokens": cr, "total_tokens": inp + out + cc + cr,
        "entries": len(usages), "files": 1,
    })


class Facts:
    """What the session half of the report is made of: from a ``Session`` (``facts``) or from
    the Claude Code fast pass (``contextfork.telemetry.ccstatus``), assembled by one function."""

    def __init__(
        self, *, info: dict[str, Any], acc: accounting.Accounting, since_compaction: int,
        n_steps: int, tool_calls: int, tool_errors: int, compactions: list[dict[str, Any]],
        touched: list[str], failed: list[dict[str, Any]], billing: dict[str, Any],
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
    session: Session, pol: Policy | dict[str, Any], *, context_window: int | None = None
) -> dict[str, Any]:
    """The session half of the report (also what the handoff export records)."""
    return telemetry_of(facts(session), pol, context_window=context_window)


def _int(v: Any) -> Any:
    """An int field as the report's model dumps it (pydantic's lax mode: ``True`` is 1)."""
    return int(v) if isinstance(v, bool) else v


def telemetry_of(
    f: Facts, pol: Policy | dict[str, Any], *, context_window: int | None = None
) -> dict[str, Any]:
    """The session half of the report from its ``Facts``: JSON values, each part as its model
    in ``telemetry.models`` dumps it (same keys, same order; tests/telemetry/test_status_plain.py
    validates them against the models), built without pydantic."""
    acc = f.acc
    n_steps = f.n_steps
    since_fork = n_steps - acc.inherited_steps if acc.inherited_steps else None
    own_steps = n_steps if since_fork is None else since_fork  # a fork is judged on its own
    risk = policy.evaluate(acc.total, own_steps, pol if isinstance(pol, dict) else pol.model_dump())
    started, ended = _parse_ts(f.info["started_at"]), _parse_ts(f.info["ended_at"])
    pct = None
    if context_window and acc.total is not None:
        pct = round(100.0 * acc.total / context_window, 1)
    info = f.info
    bd = acc.breakdown
    return {
        "session": {
            **{k: info[k] for k in _SESSION},
            "age_seconds": (ended - started).total_seconds() if started and ended else None,
            "malformed_lines": info["malformed_lines"], "subagents": info["subagents"],
        },
        "tokens": {
            "total": acc.total, "source": acc.source,
            "breakdown": {k: bd.get(k, 0) for k in accounting.CATEGORIES},
            "breakdown_method": acc.breakdown_method,
            "scaled_to_recorded": acc.scaled_to_recorded,
            "last_output_tokens": acc.last_output_tokens, "context_window": context_window,
            "context_used_percent": pct, "includes_harness_overhead": acc.includes_harness_overhead,
            "harness_overhead": acc.harness_overhead,
        },
        "steps": {
            "total": n_steps, "since_compaction": f.since_compaction, "since_fork": since_fork,
            "tool_calls": f.tool_calls, "tool_errors": f.tool_errors,
        },
        "compactions": [_compaction(c) for c in f.compactions],
        "touched_files": f.touched,
        "failed_commands": [{k: x[k] for k in _FAILED} for x in f.failed],
        "billing": f.billing,
        "risk": {
            "level": risk["level"], "color": risk["color"],
            "recommendation": risk["recommendation"], "label": risk["label"],
            "reasons": risk["reasons"],
            "badge": policy.badge(
                acc.total, own_steps, risk, chain=n_steps if since_fork is not None else None,
                source=acc.source, messages_only=not acc.includes_harness_overhead,
            ),
        },
    }


def _compaction(c: dict[str, Any]) -> dict[str, Any]:
    return {"before_step": _int(c["before_step"]), "timestamp": c.get("timestamp"),
            "trigger": c.get("trigger"), "pre_tokens": _int(c.get("pre_tokens"))}  # fmt: skip


_SESSION = ("format", "session_id", "path", "model", "cwd", "git_branch", "started_at", "ended_at")
_FAILED = ("step", "tool", "command", "exit_code", "error_excerpt")
