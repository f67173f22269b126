"""``contextfork status``: the IPSF context metrics of a session plus the state of its repository.

Works with only a transcript (no repository), only a repository (no transcript found), or both.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contextfork import layout
from contextfork.envelope import Problem, Result
from contextfork.errors import ContextforkError
from contextfork.telemetry import accounting, policy
from contextfork.telemetry.models import (
    Billing,
    Breakdown,
    CompactionInfo,
    FailedCommand,
    GitInfo,
    LatestPackage,
    Policy,
    PolicyInfo,
    ProxyInfo,
    RiskInfo,
    SessionInfo,
    StepStats,
    Telemetry,
    Tokens,
    load_policy_file,
)
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


def session_telemetry(
    session: Session, pol: Policy, *, context_window: int | None = None
) -> dict[str, Any]:
    """The session half of the report (also what the handoff export records)."""
    acc = accounting.account(session)
    n_steps = len(session.steps)
    results = [r for s in session.steps for r in s.tool_results]
    since_fork = n_steps - acc.inherited_steps if acc.inherited_steps else None
    own_steps = n_steps if since_fork is None else since_fork  # a fork is judged on its own
    risk = policy.evaluate(acc.total, own_steps, pol.model_dump())
    started, ended = _parse_ts(session.started_at), _parse_ts(session.ended_at)
    touched, _modified = accounting.touched_files(session)
    pct = None
    if context_window and acc.total is not None:
        pct = round(100.0 * acc.total / context_window, 1)
    return {
        "session": SessionInfo(
            format=session.format, session_id=session.session_id, path=session.path,
            model=session.model, cwd=session.cwd, git_branch=session.git_branch,
            started_at=session.started_at, ended_at=session.ended_at,
            age_seconds=(ended - started).total_seconds() if started and ended else None,
            malformed_lines=session.malformed_lines, subagents=len(session.subagents),
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
            total=n_steps, since_compaction=len(acc.active_steps), since_fork=since_fork,
            tool_calls=len(session.tool_calls),
            tool_errors=sum(1 for r in results if r.is_error),
        ),
        "compactions": [CompactionInfo(**c.model_dump()) for c in session.compactions],
        "touched_files": touched,
        "failed_commands": [
            FailedCommand(**{k: v for k, v in f.items() if k != "call_id"})
            for f in accounting.failed_commands(session)
        ],
        "billing": billing(session),
        "risk": RiskInfo(**risk, badge=policy.badge(
            acc.total, own_steps, risk, chain=n_steps if since_fork is not None else None,
            source=acc.source, messages_only=not acc.includes_harness_overhead,
        )),
    }


def git_info(root: Path) -> GitInfo:
    from contextfork import gitstate

    head = gitstate.head(root)
    st = gitstate.status(root)
    staged = sum(1 for e in st.entries if e.kind != "u" and e.xy[:1] not in (".", "?", " "))
    modified = sum(1 for e in st.entries if e.kind != "u" and e.xy[1:2] == "M")
    deleted = sum(1 for e in st.entries if "D" in e.xy and e.kind != "u")
    renamed = sum(1 for e in st.entries if e.kind == "2")
    conflicts = sum(1 for e in st.entries if e.kind == "u")
    info = GitInfo(
        root=str(root), branch=head.branch, detached=head.detached, unborn=head.unborn,
        head=head.sha, staged=staged, modified=modified, deleted=deleted, renamed=renamed,
        untracked=len(st.untracked), conflicts=conflicts,
        dirty=bool(st.entries or st.untracked),
    )
    info.latest_package = latest_package(root)
    return info


def latest_package(root: Path) -> LatestPackage | None:
    """The newest package a session would be offered (``contextfork.provenance``)."""
    from contextfork import provenance
    from contextfork.package.store import list_packages
    from contextfork.package.validate import validate_package

    offered = (r for r in reversed(list_packages(root))
               if provenance.standing(root, r.package_id, r.path).offered)  # fmt: skip
    ref = next(offered, None)
    if ref is None:
        return None
    v = validate_package(ref.path, root)
    warnings = sum(1 for p in v.problems if p.severity == "warning")
    return LatestPackage(
        package_id=ref.package_id, path=str(ref.path), valid=not v.errors,
        errors=len(v.errors), warnings=warnings,
    )


def find_transcript(transcript: Path | None, root: Path | None, cwd: Path) -> Path | None:
    if transcript is not None:
        return transcript
    from contextfork.transcript.locate import current_transcript

    for where in dict.fromkeys([cwd, *([root] if root else [])]):
        found = current_transcript(where)
        if found is not None:
            return found
    return None


def build_status(
    transcript: Path | None = None,
    repo: Path | None = None,
    cwd: Path | None = None,
    *,
    context_window: int | None = None,
) -> Result:
    """The whole report as a ``Result`` whose data validates against context-telemetry."""
    cwd = cwd or Path.cwd()
    root = layout.optional_repo(repo, cwd)
    pol = load_policy(root)
    notes: list[str] = []
    problems: list[Problem] = []
    path = find_transcript(transcript, root, cwd)
    parts: dict[str, Any] = {
        "session": None, "tokens": None, "steps": None, "compactions": [],
        "touched_files": [], "failed_commands": [], "billing": None, "risk": None,
    }
    if path is None:
        notes.append("no transcript: pass --transcript P (no Claude Code session found here)")
    else:
        from contextfork.transcript import load_session

        session = load_session(path)
        parts.update(session_telemetry(session, pol.policy, context_window=context_window))
        if root is not None and session.session_id:
            from contextfork.proxy import stats

            figures = stats.read(root, session.session_id)
            parts["proxy"] = ProxyInfo(**stats.summary(figures)) if figures else None
        if session.malformed_lines:
            problems.append(
                Problem("warning", "malformed_lines",
                        f"{session.malformed_lines} malformed line(s) skipped", str(path))
            )
    git: GitInfo | None = None
    if root is None:
        notes.append("not inside a git repository: git state omitted (pass --repo PATH)")
    else:
        try:
            git = git_info(root)
        except ContextforkError as err:
            problems.append(Problem("warning", "git_state", err.one_line(), str(root)))
    telemetry = Telemetry(generated_at=now_iso(), policy=pol, git=git, notes=notes, **parts)
    data = telemetry.model_dump(mode="json")
    from contextfork.telemetry.report import render_text

    return Result(command="status", data=data, problems=problems, text=render_text(data))
