"""Replay a recorded session under each policy and compute the bill (SPEC §7).

Every step is rendered once per policy, incrementally; token sequences are cached per message
text and shared across policies, so the cost of a replay is close to tokenizing the session
once plus a linear walk per policy.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import quantiles
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contextfork.errors import UsageError
from contextfork.inputfile import read_regular
from contextfork.render.api import call_steps, make_renderer
from contextfork.render.carriage import CarriageTracker, VisibleIdentifiers
from contextfork.render.messages import observation_text, reply_text, step_messages
from contextfork.render.metrics import Meter, PriceCard
from contextfork.render.policies import Policy
from contextfork.render.store import Removal, SessionSource, StepSource, removal_bytes
from contextfork.render.tokcache import TokenCache
from contextfork.transcript.model import Session

REPORT_VERSION = "1"
MAX_PRICE_CARD = 4 * 1024 * 1024


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PriceCardFile(_M):
    """A price card file (``--price-card F``): dollars per million prompt tokens."""

    name: str = "custom"
    input_per_mtok: float = Field(ge=0)
    cache_read_per_mtok: float | None = Field(
        default=None, ge=0, description="default: 0.1 × input_per_mtok"
    )

    def card(self) -> PriceCard:
        read = self.cache_read_per_mtok
        return PriceCard(self.name, self.input_per_mtok,
                         0.1 * self.input_per_mtok if read is None else read)


class PriceCardOut(_M):
    name: str
    input_per_mtok: float
    cache_read_per_mtok: float
    note: str


class PolicyReport(_M):
    policy: str
    settings: dict[str, Any]
    calls: int
    prompt_tokens: int
    cached_tokens: int
    fresh_tokens: int
    cached_share: float
    ratio_to_base: float | None
    peak_prompt: int
    rewrites: int
    appends: int
    boundary_moves: int
    epochs: int
    removals: int
    cost_usd: float
    render_ms_median: float
    render_ms_p95: float
    carriage: float | None
    carriage_mentions: int
    prompt_per_call: list[int]


class ReplayReport(_M):
    report_version: Literal["1"] = "1"
    transcript: str | None
    format: str
    session_id: str | None
    steps: int
    price_card: PriceCardOut
    policies: list[PolicyReport]


def load_price_card(path: Path | None) -> PriceCard:
    if path is None:
        return PriceCard()
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


def replay_policy(
    session: Session,
    policy: Policy,
    tokens: TokenCache,
    tracker: CarriageTracker,
    progress: Progress | None = None,
) -> tuple[Meter, list[Removal], int, tuple[int, int]]:
    """Render every call; returns the meter, the removals, epochs and carriage (hit, want)."""
    r = make_renderer(session, policy)
    meter = Meter(tokens)
    visible = VisibleIdentifiers()
    hit = want = 0
    epochs = 0
    removals: list[Removal] = []
    steps = call_steps(session)
    for n, t in enumerate(steps, 1):
        t0 = time.perf_counter()
        view = r.advance(t)
        ms = (time.perf_counter() - t0) * 1000
        first = meter.observe(view.messages, view.boundary, ms)
        visible.update(view.messages, first)
        for term in tracker.wanted(t):
            want += 1
            hit += term in visible
        removals = view.removals
        epochs = view.epochs
        if progress is not None:
            progress(policy.name, n, len(steps))
    return meter, removals, epochs, (hit, want)


def replay(
    session: Session,
    policies: Sequence[Policy],
    price: PriceCard | None = None,
    progress: Progress | None = None,
    tokens: TokenCache | None = None,
) -> ReplayReport:
    price = price or PriceCard()
    tokens = tokens or TokenCache()
    tracker = carriage_tracker(session)
    reports: list[PolicyReport] = []
    base_total: int | None = None
    order = sorted(policies, key=lambda p: p.name != "base")
    for pol in order:
        meter, removals, epochs, (hit, want) = replay_policy(
            session, pol, tokens, tracker, progress
        )
        total = meter.total
        cached = meter.total_cached
        if pol.name == "base":
            base_total = total
        p95 = quantiles(meter.render_ms, n=20)[-1] if len(meter.render_ms) >= 2 else (
            meter.render_ms[0] if meter.render_ms else 0.0)
        reports.append(
            PolicyReport(
                policy=pol.name,
                settings=pol.describe(),
                calls=len(meter.prompts),
                prompt_tokens=total,
                cached_tokens=cached,
                fresh_tokens=total - cached,
                cached_share=round(cached / total, 4) if total else 0.0,
                ratio_to_base=round(total / base_total, 4) if base_total else None,
                peak_prompt=meter.peak,
                rewrites=meter.rewrites,
                appends=meter.appends,
                boundary_moves=meter.boundary_moves,
                epochs=epochs,
                removals=len(removals),
                cost_usd=round(price.cost(total - cached, cached), 6),
                render_ms_median=round(meter.median_render_ms, 4),
                render_ms_p95=round(p95, 4),
                carriage=round(hit / want, 4) if want else None,
                carriage_mentions=want,
                prompt_per_call=meter.prompts,
            )
        )
    names = [p.name for p in policies]
    reports.sort(key=lambda r: names.index(r.policy))  # type: ignore[arg-type]
    return ReplayReport(
        transcript=session.path,
        format=session.format,
        session_id=session.session_id,
        steps=len(session.steps),
        price_card=PriceCardOut(
            name=price.name, input_per_mtok=price.input_per_mtok,
            cache_read_per_mtok=price.cache_read_per_mtok,
            note="cost = fresh × input + cached × cache read, per million tokens; "
                 "default cache read = 0.1 × input",
        ),
        policies=reports,
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
