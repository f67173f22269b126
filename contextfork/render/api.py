"""Entry points: pick a renderer for a policy; ``render`` is the pure one-shot form."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from contextfork.errors import NotFoundError, UsageError
from contextfork.render.baselines import (
    BaseRenderer,
    CompactRenderer,
    MaskRenderer,
    NativeRenderer,
)
from contextfork.render.engine import ReFoldRenderer, View
from contextfork.render.policies import Policy
from contextfork.transcript.model import Session

if TYPE_CHECKING:
    from contextfork.cold.decisions import Decisions


class Renderer(Protocol):
    def advance(self, t: int) -> View: ...


def make_renderer(
    session: Session, policy: Policy, decisions: Decisions | None = None
) -> Renderer:
    """``decisions``: the agent's curation (pins, expands, briefs, boundary); the folding
    policies honour them, the baselines (which fold nothing) have nothing to honour."""
    if policy.name in ("refold", "epoch", "live"):
        return ReFoldRenderer(session, policy, decisions)
    if policy.name == "base":
        return BaseRenderer(session, policy)
    if policy.name == "mask":
        return MaskRenderer(session, policy)
    if policy.name == "compact":
        return CompactRenderer(session, policy)
    if policy.name == "native":
        return NativeRenderer(session, policy)
    raise UsageError(f"unknown policy {policy.name!r}")  # pragma: no cover


def call_steps(session: Session) -> list[int]:
    """The steps that are model calls, in order (one prompt is sent per step)."""
    return sorted(s.index for s in session.steps)


def render(
    session: Session, t: int, policy: Policy, decisions: Decisions | None = None
) -> View:
    """The prompt for step t: a fresh renderer advanced through every earlier call.

    Deterministic: the same history, step and policy give byte-identical messages.
    """
    steps = call_steps(session)
    if not steps:
        raise NotFoundError("the session has no steps to render")
    if t < 1 or t > steps[-1] + 1:
        raise UsageError(f"--step must be between 1 and {steps[-1] + 1}, got {t}")
    r = make_renderer(session, policy, decisions)
    view: View | None = None
    for s in steps:
        if s >= t:
            break
        view = r.advance(s)
    view = r.advance(t)
    return view
