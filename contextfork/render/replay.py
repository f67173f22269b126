"""Replay a recorded session under each policy and compute the bill (SPEC §7).

The headline baseline is ``native``: what the harness really sent (its own compactions, its
recorded per-call usage). Every other policy is priced in the same harness tokens through a
per-session fit (``contextfork.render.bill``) and the same cache model (TTL from the recorded
timestamps, cache writes priced). Every step is rendered once per policy, incrementally; token sequences are cached per message
text and shared across policies, so the cost of a replay is close to tokenizing the session
once plus a linear walk per policy.
"""

from __future__ import annotations

import json
import time
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import quantiles
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contextfork.errors import UsageError
from contextfork.inputfile import read_regular
from contextfork.render.api import call_steps, make_renderer
from contextfork.render.bill import (
    DEFAULT_TTL,
    Bill,
    HarnessModel,
    call_gaps,
    card_for_model,
    fit_harness,
    modelled_bill,
    output_tokens,
    recorded_bill,
    recorded_prompt,
    recorded_ttl,
)
from contextfork.render.carriage import CarriageTracker, VisibleIdentifiers, content_text
from contextfork.render.messages import observation_text, reply_text, step_messages
from contextfork.render.metrics import Meter, PriceCard
from contextfork.render.policies import DEFAULT_COMPACT_THRESHOLD, Policy, policy
from contextfork.render.store import Removal, SessionSource, StepSource, removal_bytes
from contextfork.render.tokcache import TokenCache
from contextfork.render.window import COMPACT_SHARE, session_model, session_window
from contextfork.tokens import estimate_tokens
from contextfork.transcript.model import Session

MAX_PRICE_CARD = 4 * 1024 * 1024

if TYPE_CHECKING:
    from contextfork.cold.decisions import Decisions


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PriceCardFile(_M):
    """A price card file (``--price-card F``): dollars per million tokens."""

    name: str = "custom"
    input_per_mtok: float = Field(ge=0)
    cache_read_per_mtok: float | None = Field(
        default=None, ge=0, description="default: 0.1 × input_per_mtok"
    )
    cache_write_per_mtok: float | None = Field(
        default=None, ge=0, description="5-minute cache write; default: 1.25 × input_per_mtok"
    )
    cache_write_1h_per_mtok: float | None = Field(
        default=None, ge=0, description="1-hour cache write; default: 2 × input_per_mtok"
    )
    implicit_cache: bool = Field(
        default=False, description="true: no write price, uncached tokens are plain input"
    )
    output_per_mtok: float | None = Field(
        default=None, ge=0, description="default: 5 × input_per_mtok"
    )

    def card(self) -> PriceCard:
        inp = self.input_per_mtok

        def pick(v: float | None, factor: float) -> float:
            return factor * inp if v is None else v

        return PriceCard(
            self.name, inp, pick(self.cache_read_per_mtok, 0.1),
            None if self.implicit_cache else pick(self.cache_write_per_mtok, 1.25),
            None if self.implicit_cache else pick(self.cache_write_1h_per_mtok, 2.0),
            pick(self.output_per_mtok, 5.0),
        )


class PriceCardOut(_M):
    name: str
    input_per_mtok: float
    cache_read_per_mtok: float
    cache_write_per_mtok: float | None
    output_per_mtok: float
    ttl_seconds: int
    note: str


class PolicyReport(_M):
    policy: str
    settings: dict[str, Any]
    calls: int
    prompt_tokens: int = Field(description="harness tokens: overhead + scale × rendered")
    rendered_tokens: int = Field(description="o200k tokens of the rendered messages")
    cached_tokens: int
    cache_write_tokens: int
    fresh_tokens: int
    cached_share: float
    cache_expiries: int
    ratio_to_base: float | None
    ratio_to_native: float | None
    peak_prompt: int
    rewrites: int
    appends: int
    boundary_moves: int
    epochs: int
    removals: int
    cost_usd: float = Field(description="prompt side: input + cache writes + cache reads")
    cost_ratio_to_native: float | None
    bill_usd: float = Field(description="cost_usd + the recorded output tokens, as ccusage sums")
    render_ms_median: float
    render_ms_p95: float
    carriage: float | None
    carriage_mentions: int
    probe_recovery: float | None = None
    probes: int = 0
    prompt_per_call: list[int]


class NativeRecorded(_M):
    prompt_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    fresh_tokens: int
    cost_usd: float
    bill_usd: float


class ReplayReport(_M):
    report_version: Literal["2"] = "2"
    transcript: str | None
    format: str
    session_id: str | None
    steps: int
    model: str | None
    window_tokens: int
    window_source: str
    harness: dict[str, Any]
    output_tokens: int
    native_recorded: NativeRecorded | None
    price_card: PriceCardOut
    policies: list[PolicyReport]
    # The agent's curation honoured by every policy but native (None: none recorded).
    decisions_revision: int | None = None


def load_price_card(path: Path | None) -> PriceCard | None:
    """The card of a file; None without one (each session is then priced by its model)."""
    if path is None:
        return None
    data = read_regular(path, "price card", limit=MAX_PRICE_CARD)
    try:
        return PriceCardFile.model_validate(json.loads(data.decode("utf-8"))).card()
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError, ValidationError) as err:
        first = str(err).splitlines()[0]
        raise UsageError(f"price card {path} is not valid: {first}",
                         hint="see schemas/price-card.schema.json") from None


def carriage_tracker(session: Session) -> CarriageTracker:
    outs = {s.index: observation_text(step_messages(s)) for s in session.steps}
    replies = {s.index: reply_text(s) for s in session.steps}
    return CarriageTracker(outs, replies)


Progress = Callable[[str, int, int], None]


@dataclass
class PolicyRun:
    """One policy rendered over every call of a session."""

    policy: Policy
    meter: Meter
    removals: list[Removal]
    epochs: int
    hit: int
    want: int
    probe_hit: int = 0
    probe_want: int = 0
    last_estimate: int = 0  # estimated tokens (chars / 4) of the last prompt, for unit changes
    hits: list[int] = field(default_factory=list)  # per call: mentions still visible
    wants: list[int] = field(default_factory=list)  # per call: mentions asked for

    def carriage_where(self, calls: Sequence[bool]) -> tuple[int, int]:
        """(hit, want) over the calls selected (e.g. where this prompt differs from base)."""
        hit = sum(h for h, c in zip(self.hits, calls, strict=True) if c)
        return hit, sum(w for w, c in zip(self.wants, calls, strict=True) if c)


def replay_policy(
    session: Session,
    policy: Policy,
    tokens: TokenCache,
    tracker: CarriageTracker,
    progress: Progress | None = None,
    probes: dict[int, list[str]] | None = None,
    decisions: Decisions | None = None,
) -> PolicyRun:
    """Render every call; carriage and probe recovery read what is visible as content."""
    r = make_renderer(session, policy, decisions)
    meter = Meter(tokens)
    visible = VisibleIdentifiers()
    run = PolicyRun(policy, meter, [], 0, 0, 0)
    steps = call_steps(session)
    for n, t in enumerate(steps, 1):
        t0 = time.perf_counter()
        view = r.advance(t)
        ms = (time.perf_counter() - t0) * 1000
        first = meter.observe(view.messages, view.boundary, ms)
        visible.update(view.messages, first)
        wanted = tracker.wanted(t)
        hits = sum(term in visible for term in wanted)
        run.hits.append(hits)
        run.wants.append(len(wanted))
        run.hit += hits
        run.want += len(wanted)
        terms = (probes or {}).get(t, ())
        if terms:  # a probe is a literal term: look for it in the visible content as text
            text = "\n".join(content_text(m.content) for m in view.messages)
            for term in terms:
                run.probe_want += 1
                run.probe_hit += term in text
        run.removals = view.removals
        run.epochs = view.epochs
        if n == len(steps):
            run.last_estimate = sum(estimate_tokens(m.content) for m in view.messages)
        if progress is not None:
            progress(policy.name, n, len(steps))
    return run


@dataclass
class SessionBill:
    """Calibration and prices shared by every policy of one session."""

    harness: HarnessModel
    card: PriceCard
    ttl: int
    gaps: list[float | None]
    recorded: list[int | None]
    native: Bill | None = None
    native_recorded: Bill | None = None
    estimate_per_token: float = 1.0  # renderers count chars / 4; the fit is in o200k tokens


def segments(session: Session, steps: list[int]) -> list[int]:
    """Per call: how many recorded compactions happened before it."""
    points = sorted(c.before_step for c in session.compactions)
    return [bisect_right(points, t) for t in steps]


def prepare(session: Session, native: PolicyRun, card: PriceCard | None, ttl: int) -> SessionBill:
    """Fit the harness model on the native rendering and price the native run."""
    steps = call_steps(session)
    by_index = {s.index: s for s in session.steps}
    recorded = [recorded_prompt(by_index[t]) for t in steps]
    harness = fit_harness(native.meter.prompts, recorded, segments(session, steps))
    card = card or card_for_model(session_model(session)) or PriceCard()
    sb = SessionBill(harness, card, ttl, call_gaps(session, steps), recorded)
    if native.meter.prompts and native.last_estimate:
        sb.estimate_per_token = native.last_estimate / native.meter.prompts[-1]
    sb.native = modelled_bill(harness, native.meter.prompts, native.meter.cached, sb.gaps,
                              card, ttl, sizes=recorded)
    if any(x is not None for x in recorded):
        sb.native_recorded = recorded_bill([by_index[t] for t in steps], sb.native)
    return sb


def adapt(pol: Policy, session: Session, sb: SessionBill | None) -> Policy:
    """Policies meet the session's prices: a rewrite is weighed at this card's write/read
    ratio, and the compact baseline compacts where the harness would (its share of the
    window, in the harness's tokens, converted back to rendered tokens with the fit)."""
    if sb is None:
        return pol
    if pol.write_read_ratio > 0 and sb.card.cache_read_per_mtok > 0:
        pol = pol.with_(write_read_ratio=round(
            sb.card.write_price(sb.ttl) / sb.card.cache_read_per_mtok, 3))
    if pol.name != "compact" or pol.compact_threshold != DEFAULT_COMPACT_THRESHOLD:
        return pol  # an explicit threshold is the caller's
    window = session_window(session)[0]
    rendered = (COMPACT_SHARE * window - sb.harness.overhead) / sb.harness.scale
    return pol.with_(compact_threshold=max(1, int(rendered * sb.estimate_per_token)))


def _ratio(a: float, b: float | None) -> float | None:
    return round(a / b, 4) if b else None


def policy_report(
    run: PolicyRun, sb: SessionBill, output: int, base_total: int | None,
    native_total: int | None, native_cost: float | None,
) -> PolicyReport:
    meter = run.meter
    bill = (sb.native if run.policy.name == "native" and sb.native is not None
            else modelled_bill(sb.harness, meter.prompts, meter.cached, sb.gaps, sb.card, sb.ttl))
    total = bill.total
    cost = bill.cost(sb.card, sb.ttl)
    ms = meter.render_ms
    p95 = quantiles(ms, n=20)[-1] if len(ms) >= 2 else (ms[0] if ms else 0.0)
    reads = sum(bill.reads)
    settings = run.policy.describe()
    return PolicyReport(
        policy=run.policy.name, settings=settings, calls=len(meter.prompts),
        prompt_tokens=total, rendered_tokens=meter.total, cached_tokens=reads,
        cache_write_tokens=sum(bill.writes), fresh_tokens=sum(bill.fresh),
        cached_share=round(reads / total, 4) if total else 0.0, cache_expiries=bill.expired,
        ratio_to_base=_ratio(total, base_total), ratio_to_native=_ratio(total, native_total),
        peak_prompt=max(bill.prompts, default=0), rewrites=meter.rewrites,
        appends=meter.appends, boundary_moves=meter.boundary_moves, epochs=run.epochs,
        removals=len(run.removals), cost_usd=round(cost, 6),
        cost_ratio_to_native=_ratio(cost, native_cost),
        bill_usd=round(cost + output * sb.card.output_per_mtok / 1e6, 6),
        render_ms_median=round(meter.median_render_ms, 4), render_ms_p95=round(p95, 4),
        carriage=round(run.hit / run.want, 4) if run.want else None,
        carriage_mentions=run.want,
        probe_recovery=round(run.probe_hit / run.probe_want, 4) if run.probe_want else None,
        probes=run.probe_want, prompt_per_call=bill.prompts,
    )


def replay_runs(
    session: Session,
    policies: Sequence[Policy],
    price: PriceCard | None = None,
    progress: Progress | None = None,
    tokens: TokenCache | None = None,
    *,
    ttl: int | None = None,
    probes: dict[int, list[str]] | None = None,
    decisions: Decisions | None = None,
) -> tuple[list[PolicyRun], SessionBill, list[PolicyReport]]:
    """Every policy over the session (native is always run: it calibrates the others).

    ``ttl`` None: the TTL the recorded usage shows (Claude Code asks for the 1-hour cache),
    else Anthropic's default 5 minutes."""
    if ttl is None:
        ttl = recorded_ttl(session) or DEFAULT_TTL
    tokens = tokens or TokenCache()
    tracker = carriage_tracker(session)
    wanted = {p.name: p for p in policies}
    native_pol = wanted.get("native") or policy("native", k=policies[0].k if policies else 3)
    native = replay_policy(session, native_pol, tokens, tracker, progress, probes)
    sb = prepare(session, native, price, ttl)
    runs = {"native": native}
    for pol in policies:
        if pol.name != "native":
            runs[pol.name] = replay_policy(session, adapt(pol, session, sb), tokens, tracker,
                                           progress, probes, decisions)
    output = output_tokens(session)
    assert sb.native is not None
    native_total = sb.native.total
    native_cost = sb.native.cost(sb.card, ttl)
    base_total = None
    if "base" in runs:
        base_total = modelled_bill(sb.harness, runs["base"].meter.prompts,
                                   runs["base"].meter.cached, sb.gaps, sb.card, ttl).total
    reports = [policy_report(runs[p.name], sb, output, base_total, native_total, native_cost)
               for p in policies]
    return [runs[p.name] for p in policies], sb, reports


def replay(
    session: Session,
    policies: Sequence[Policy],
    price: PriceCard | None = None,
    progress: Progress | None = None,
    tokens: TokenCache | None = None,
    *,
    ttl: int | None = None,
    probes: dict[int, list[str]] | None = None,
    decisions: Decisions | None = None,
) -> ReplayReport:
    _runs, sb, reports = replay_runs(session, policies, price, progress, tokens, ttl=ttl,
                                     probes=probes, decisions=decisions)
    card = sb.card
    ttl = sb.ttl
    output = output_tokens(session)
    rec = sb.native_recorded
    window, window_source = session_window(session)
    return ReplayReport(
        transcript=session.path, format=session.format, session_id=session.session_id,
        steps=len(session.steps), model=session_model(session), window_tokens=window,
        window_source=window_source, harness=sb.harness.to_json(), output_tokens=output,
        native_recorded=None if rec is None else NativeRecorded(
            prompt_tokens=rec.total, cached_tokens=sum(rec.reads),
            cache_write_tokens=sum(rec.writes), fresh_tokens=sum(rec.fresh),
            cost_usd=round(rec.cost(card, ttl), 6),
            bill_usd=round(rec.cost(card, ttl) + output * card.output_per_mtok / 1e6, 6)),
        price_card=PriceCardOut(
            name=card.name, input_per_mtok=card.input_per_mtok,
            cache_read_per_mtok=card.cache_read_per_mtok,
            cache_write_per_mtok=card.write_price(ttl) if card.cache_write_per_mtok is not None
            else None,
            output_per_mtok=card.output_per_mtok, ttl_seconds=ttl,
            note="cost = fresh × input + cache writes × write + cache reads × read per million "
                 "tokens; a read needs the previous call within the TTL; bill adds output",
        ),
        policies=reports,
        decisions_revision=(decisions.revision or None) if decisions is not None else None,
    )


def verify_removals(
    session: Session, removals: Sequence[Removal], source: StepSource | None = None
) -> list[str]:
    """Restore every removal from ``source`` (default: the in-memory history; pass a
    ``ColdSource`` to go through the cold store) and compare bytes; the failures as lines."""
    source = source if source is not None else SessionSource(session)
    bad = []
    for rm in removals:
        try:
            removal_bytes(rm, source)
        except Exception as err:  # noqa: BLE001 - report every failure, not just the first
            bad.append(f"step {rm.step} block {rm.block}: {err}")
    return bad
