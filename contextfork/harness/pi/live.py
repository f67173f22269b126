"""The live renderer behind pi's ``context`` event: one per pi session, advanced call by call.

It is the same ``ReFoldRenderer`` that ``render``/``replay`` run (dedupe stubs, epoch commits at
the watermarks, the k-boundary), fed incrementally: steps are appended as pi's history grows,
and every model call is advanced in order, exactly as ``render.api.render`` does, so the live
view of call t is the one ``render`` gives for the same history (``test_pi_live``). Two live
additions, both from the agent's or the user's decisions, never from timing:

- the agent's curation decisions (``contextfork.curate``: pins and expands held raw, its own
  briefs, a chosen boundary), kept in the ``-render`` store's state and re-applied when a verb
  changes them (``ReFoldRenderer.apply_decisions``);
- a forced epoch commit (pi's threshold compaction, answered by contextfork instead) folds the
  staged marks down to the low watermark at the next call, whatever the occupancy.

Every original the view removes is stored in the cold store (``<session>-render``, stable step
keys; ``contextfork.render.coldsource``) *before* the view that removes it is returned.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextfork.cold.decisions import Decisions
from contextfork.harness.pi.messages import LiveSteps, build_plan, check_plan, ephemeral_peeks
from contextfork.render.engine import ReFoldRenderer, View
from contextfork.render.policies import Policy, policy
from contextfork.tokens import estimate_tokens
from contextfork.transcript.model import Session, Step


class LiveRenderer(ReFoldRenderer):
    """``ReFoldRenderer`` fed step by step, that can be told to commit an epoch now.

    The agent's decisions (pins and expands held raw, briefs, a boundary) are the engine's
    own (``contextfork.curate``: passed at construction, ``apply_decisions`` mid-session)."""

    def __init__(self, session: Session, pol: Policy, decisions: Decisions | None) -> None:
        super().__init__(session, pol, decisions)
        self.decisions = decisions
        self.force_commit = False
        self._forcing = False

    def advance(self, t: int) -> View:
        if not self.force_commit:
            return super().advance(t)
        self.force_commit = False
        saved, self.policy = self.policy, self.policy.with_(commit_at=0.0)
        self.floor = 0.0
        self._forcing = True
        try:
            return super().advance(t)
        finally:
            self.policy = saved
            self._forcing = False

    def _commit(self, occ: int) -> None:
        """A forced commit folds down to the low watermark of what is there now when that is
        below the budget (pi counts the window its own way; it asked, so something folds)."""
        if not self._forcing or occ >= self.budget:
            super()._commit(occ)
            return
        saved = self.budget
        self.budget = occ
        try:
            super()._commit(occ)
        finally:
            self.budget = saved

    def update_step(self, step: Step) -> None:
        """A step was added, or the open step (lead only) gained its body. A decision naming
        a step that had not arrived yet (a replayed history) resolves when it arrives."""
        if step.index not in self.steps:
            self.order.append(step.index)
        self.steps[step.index] = step
        self._base.pop(step.index, None)
        d = self.decisions
        if d is not None and not d.empty and step.identity in _named(d):
            self._take(d)

    def set_decisions(self, decisions: Decisions) -> None:
        self.decisions = decisions
        self.apply_decisions(decisions)


def _named(d: Decisions) -> set[str]:
    keys = set(d.pinned | d.expanded)
    for b in d.briefs.values():
        keys.update(b.keys)
    if d.boundary is not None:
        keys.add(d.boundary)
    return keys


STAGE_STEPS = 4  # originals stored per idle slice: small, so a new call never waits long

# pi's model has no `restore` command: it pages a folded step back with its tool's peek verb.
PI_RESTORE_HINT = "the contextfork_context tool's peek (step N) gives any back exactly"
PI_RESTORE_VERB = "contextfork_context peek step"


def live_policy(name: str, context_window: int | None, budget: int | None, k: int,
                adaptive: bool) -> Policy:
    """The named policy; its epoch budget a share of pi's model window when pi tells us one."""
    share = policy(name).budget_share
    if budget is None and context_window and share:
        budget = int(share * context_window)
    # No reminder in the tail: its wording (`restore N` as a shell command) is mini-swe-agent's;
    # pi's model gets the contextfork_context tool instead. STALE lines still count if written.
    pol = policy(name, k=k, budget_tokens=budget, adaptive=adaptive).with_(
        reminder=False, restore_hint=PI_RESTORE_HINT, restore_verb=PI_RESTORE_VERB)
    return pol.with_(budget_share=None) if budget is not None else pol


class LiveSession:
    """One pi session's history, renderer and cold-store bookkeeping."""

    def __init__(self, session_id: str, pol: Policy, root: Path | None,
                 steps: Callable[[], LiveSteps] = LiveSteps) -> None:
        self.session_id = session_id
        self.policy = pol
        self.root = root
        self.new_steps = steps  # the array's reader (pi's; the proxy passes its own)
        self.live = steps()
        self.renderer: LiveRenderer | None = None
        self.t = 0
        self.stored: set[int] = set()
        self.cold_ids: dict[int, int] = {}  # step position -> cold id, where they differ
        self.last_view: View | None = None
        self.decisions: Decisions | None = None
        self.store_error: str | None = None

    # -- history ------------------------------------------------------------------------
    def sync(self, base: int, prev_fp: str | None, messages: list[Any]) -> bool:
        """Take messages[base:] of pi's array; False when the worker must get the whole array
        (it holds less than ``base`` messages or a different history)."""
        have = len(self.live.messages)
        if base > have or (base > 0 and self.live.fps[base - 1] != prev_fp):
            return False
        if base < have:  # a re-send (a request the extension gave up on) or an edited tail
            from contextfork.harness.pi.messages import fingerprint

            same = [fingerprint(m) for m in messages[: have - base]] == self.live.fps[base:]
            if same:
                messages = messages[have - base :]
            else:
                kept = self.live.messages[:base]
                self.reset()
                self.live.extend(kept)
        self.live.extend(messages)
        return True

    def reset(self) -> None:
        """Another history under this session (pi's /tree, a compaction): start over. The
        store keeps what it has (keyed by stable keys); positions are learnt again."""
        self.stored = set()
        self.cold_ids = {}
        self.live = self.new_steps()
        self.renderer = None
        self.t = 0
        self.last_view = None

    def _session(self) -> Session:
        """The history as a ``Session`` sharing the live list of steps (decisions resolve
        their keys against it, so steps appended later resolve too)."""
        return Session.model_construct(format="pi", session_id=self.session_id,
                                       steps=self.live.steps, model=None)

    # -- rendering ----------------------------------------------------------------------
    def view(self, more: Callable[[View], set[int]] | None = None) -> View:
        """Advance the renderer to the current call and store every original the view removes
        (plus the steps ``more(view)`` names) before the view is returned."""
        live = self.live
        open_step = live.open_step()
        t = len(live.steps) + 1  # with or without a lead of its own (after tool results)
        if self.renderer is None:
            self.renderer = LiveRenderer(self._session(), self.policy, self.decisions)
            self.t = 0
        r = self.renderer
        for step in live.steps[max(0, self.t - 1):]:
            r.update_step(step)
        if open_step is not None:
            r.update_step(open_step)
        view = None
        for s in range(self.t + 1, t + 1):  # every call in order, as render() does
            view = r.advance(s)
        if view is None:  # the same call again (a retry): the same view
            view = r.advance(t) if self.last_view is None else self.last_view
        self.t = t
        self._store(view, more(view) if more is not None else set())
        self.last_view = view
        return view

    def render(self) -> dict[str, Any]:
        """The plan for pi's current call (None plan: send the messages untouched)."""
        live = self.live
        peeks: dict[int, tuple[int, str]] = {}

        def peeked(view: View) -> set[int]:
            peeks.update(ephemeral_peeks(live, view.boundary))
            return {step for step, _ in peeks.values()}

        view = self.view(peeked)
        plan = build_plan(live, view.messages, view.folds,
                          {i: stub for i, (_, stub) in peeks.items()})
        identity = plan == list(range(len(live.messages)))
        why = None if identity else check_plan(live.messages, plan)
        tokens = sum(estimate_tokens(m.content) for m in view.messages)
        stats = {"t": view.t, "boundary": view.boundary, "epochs": view.epochs,
                 "folds": len(view.folds), "est_tokens": tokens, "messages": len(live.messages)}
        if self.store_error:
            return {"plan": None, "why": f"cold store: {self.store_error}", "stats": stats}
        if why is not None:
            return {"plan": None, "why": f"invalid plan: {why}", "stats": stats}
        return {"plan": None if identity else plan, "stats": stats}

    def stage(self, limit: int = STAGE_STEPS) -> int:
        """Fold ahead of need: store the originals of up to ``limit`` finished steps the store
        lacks, so the first epoch commit of a long session does not pay for all of them inside
        one call's timeout. The worker calls it while pi is idle. Returns how many it stored."""
        if self.store_error or not self.live.steps:
            return 0
        finished = [s.index for s in self.live.steps[:-1] if s.index not in self.stored]
        todo = set(finished[:limit])
        if not todo:
            return 0
        from contextfork.errors import ContextforkError
        from contextfork.render.coldsource import persist_steps

        try:
            report = persist_steps(self.layout(), self._session(), todo, known=self.stored)
            self.cold_ids.update(report.ids)
        except ContextforkError as err:
            self.store_error = err.one_line()
            return 0
        return len(todo)

    def _store(self, view: View, more: set[int]) -> None:
        """Persist the originals of every removed step before the view leaves the worker."""
        steps = ({r.step for r in view.removals} | more) - self.stored
        if not steps:
            return
        from contextfork.errors import ContextforkError
        from contextfork.render.coldsource import persist_steps

        try:
            report = persist_steps(self.layout(), self._session(), steps, known=self.stored)
            self.cold_ids.update(report.ids)
        except ContextforkError as err:
            self.store_error = err.one_line()

    def layout(self) -> Any:
        """``<repo>/.contextfork/cold/<session>-render``; outside a git repository the user's
        cache (as the mini-swe-agent class does)."""
        from contextfork.cold.layout import layout_at, layout_for
        from contextfork.layout import cache_dir

        sid = self.store_session()
        if self.root is not None:
            return layout_for(self.root, sid)
        return layout_at(cache_dir("cold", sid))

    def store_session(self) -> str:
        """The cold-store session of this history's originals (``<session>-render``)."""
        from contextfork.render.coldsource import render_session_id

        return render_session_id(self._session())

    def persist_finished(self) -> None:
        """Store every finished step (the curation verbs name steps by their stored ids)."""
        from contextfork.render.coldsource import persist_steps

        done = [st.index for st in self.live.steps]
        report = persist_steps(self.layout(), self._session(), done, known=self.stored)
        self.cold_ids.update(report.ids)

    def set_decisions(self, decisions: Decisions) -> None:
        self.decisions = decisions
        if self.renderer is not None:
            self.renderer.set_decisions(decisions)

    def commit_now(self) -> None:
        if self.renderer is not None:
            self.renderer.force_commit = True


__all__ = ["LiveRenderer", "LiveSession", "live_policy"]
