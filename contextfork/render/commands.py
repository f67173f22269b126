"""Domain functions behind ``contextfork render`` and ``contextfork replay`` (no Typer here)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from contextfork.cold.layout import StoreLayout
from contextfork.envelope import Result
from contextfork.errors import NotFoundError, UsageError
from contextfork.inputfile import require_regular
from contextfork.render.api import render
from contextfork.render.policies import parse_policies, policy
from contextfork.render.replay import Progress, load_price_card, replay
from contextfork.render.restore import Request, answer
from contextfork.tokens import estimate_tokens
from contextfork.transcript.model import Session

if TYPE_CHECKING:
    from contextfork.cold.decisions import Decisions


def _ctx(ctx: object) -> str:
    from contextfork.telemetry.accounting import context_label

    if isinstance(ctx, dict) and isinstance(ctx.get("total"), int):
        return f"{ctx['total']:,} ({context_label(ctx)})"
    return "unknown"


def _load(transcript: Path) -> Session:
    from contextfork.transcript import load_session

    return load_session(require_regular(transcript, "transcript"))


def _cold_layout(
    session: Session, transcript: Path, repo: Path | None, session_id: str | None, needed: bool
) -> StoreLayout | None:
    """``<repo>/.contextfork/cold/<session>-render``; None when no repo is evident and the
    caller can do without (a plain render outside a git repository stores nothing)."""
    from contextfork.cold.layout import layout_for
    from contextfork.render.coldsource import render_session_id

    sid = render_session_id(session, transcript, session_id)
    try:
        return layout_for(repo, sid)
    except NotFoundError:
        if needed or repo is not None:
            raise
        return None


def _decisions(layout: StoreLayout | None, name: str | None) -> Decisions | None:
    """The agent's curation of the session (``contextfork context ... --session NAME``: the
    harness's session id, or the --session given here), honoured by the render."""
    from contextfork.cold.decisions import load_decisions
    from contextfork.sessionids import check_session_id

    if layout is None or not name:
        return None
    try:
        check_session_id(name)
    except UsageError:
        return None  # a transcript's odd id names no curation: there is none to honour
    return load_decisions(layout.root.parent.parent, name)


def render_command(
    transcript: Path,
    step: int | None,
    k: int,
    policy_name: str = "refold",
    request: Request | None = None,
    *,
    repo: Path | None = None,
    session_id: str | None = None,
) -> Result:
    """Render step t; store the originals of every earlier step in the cold store (idempotent)
    so each removal is reversible, and answer restore/peek from that store, verified."""
    from contextfork.render.coldsource import ColdSource, persist_steps
    from contextfork.telemetry.accounting import context_tokens

    session = _load(transcript)
    last = max((s.index for s in session.steps), default=0)
    t = step if step is not None else last + 1
    layout = _cold_layout(session, transcript, repo, session_id, needed=request is not None)
    decisions = _decisions(layout, session_id or session.session_id)
    view = render(session, t, policy(policy_name, k=k), decisions)
    from contextfork.render.subagents import fold_subagents

    root = layout.root.parent.parent if layout is not None else repo
    messages, subagents = fold_subagents(list(view.messages), session, root)
    stored = None
    if layout is not None:
        stored = persist_steps(layout, session, (s.index for s in session.steps if s.index < t))
    data: dict[str, object] = {
        "transcript": str(transcript),
        "format": session.format,
        "step": t,
        "policy": policy_name,
        "k": k,
        "boundary": view.boundary,
        # The rendered prompt's own size (chars/4), labelled as such; the session's context
        # tokens are the one figure status/statusline/fork report.
        "estimated_tokens": sum(estimate_tokens(m.content) for m in messages),
        "context_tokens": context_tokens(session),
        "messages": [m.to_json() for m in messages],
        "removals": [r.to_json() for r in view.removals],
        "subagents": subagents,
        "folds": {fid: list(steps) for fid, steps in view.folds.items()},
        "decisions_revision": decisions.revision if decisions is not None else None,
        "cold_store": stored.to_json() if stored is not None else None,
    }
    lines = [
        f"── [{m.role}:{m.kind}] step {m.step}" + ("" if m.block < 0 else f" block {m.block}")
        + f"\n{m.content}"
        for m in messages
    ]
    text = "\n".join(lines) + (
        f"\n── step {t} · policy {policy_name} · k={k} · boundary b_t={view.boundary} · "
        f"{len(messages)} messages · rendered prompt ~{data['estimated_tokens']} tokens "
        f"(estimated, messages only) · session context tokens {_ctx(data['context_tokens'])} · "
        f"{len(view.removals)} removals · originals "
        + (f"in {stored.store}" if stored is not None else "not stored (no git repository)")
        + "\n"
    )
    if request is not None and layout is not None:  # needed=True: a layout or an error
        ids = stored.ids if stored is not None else None
        out = answer(request, ColdSource(layout, ids), view.step_sha256, view.folds)
        data["answer"] = out
        text = out + "\n"
    return Result("render", data=data, text=text)


def replay_command(
    transcript: Path,
    policies: str,
    price_card: Path | None,
    k: int = 3,
    budget: int | None = None,
    progress: Progress | None = None,
    plot: Path | None = None,
    on_start: Callable[[int], None] | None = None,
    *,
    ttl: int | None = None,
    repo: Path | None = None,
    session_id: str | None = None,
) -> Result:
    """The bill of every policy; the session's curation (pins, briefs, boundary) made through
    `contextfork context` or the MCP tool, where the repository holds some, is honoured as
    `render` honours it. Decisions made inside pi live with pi's live store (``<id>-render``,
    keyed by pi's messages) and are not read here."""
    if ttl is not None and ttl <= 0:
        raise UsageError(f"--ttl must be a positive number of seconds, got {ttl}")
    pols = parse_policies(policies, k=k, budget_tokens=budget)
    price = load_price_card(price_card)
    session = _load(transcript)
    if on_start is not None:
        on_start(len(session.steps) * (len(pols) + ("native" not in [p.name for p in pols])))
    layout = _cold_layout(session, transcript, repo, session_id, needed=False)
    decisions = _decisions(layout, session_id or session.session_id)
    report = replay(session, pols, price, progress, ttl=ttl, decisions=decisions)
    data = report.model_dump(mode="json")
    if plot is not None:
        from contextfork.render.plot import write_plot

        data["plot"] = write_plot(report, plot)
    return Result("replay", data=data)
