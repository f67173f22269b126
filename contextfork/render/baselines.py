"""Baselines the replay compares against: native, full history, observation masking, compaction.

They share the renderer interface (``advance(t) -> View``). Masking and compaction are lossy
by design: they record no removals, which is exactly the difference being measured.
"""

from __future__ import annotations

from contextfork.render.engine import View
from contextfork.render.fold import note_texts, step_brief
from contextfork.render.history import StepHistory
from contextfork.render.messages import Msg
from contextfork.render.policies import Policy
from contextfork.tokens import estimate_tokens
from contextfork.transcript.model import Session


class BaseRenderer(StepHistory):
    """Everything, as received: the bill a harness pays without any context management."""

    def __init__(self, session: Session, policy: Policy) -> None:
        super().__init__(session, policy)
        self.acc: list[Msg] = list(self.system)

    def advance(self, t: int) -> View:
        for s in self.between(self.t - 1 if self.t else 0, t - 1):
            sm = self.base(s)
            self.acc.extend(sm.lead)
            self.acc.extend(sm.body)
        self.t = t
        return View(t, [*self.acc, *self.lead(t)], 0)


class MaskRenderer(StepHistory):
    """Observation masking: only the last ``mask_keep`` tool outputs stay; older ones → a line."""

    def __init__(self, session: Session, policy: Policy) -> None:
        super().__init__(session, policy)
        self.acc: list[Msg] = list(self.system)
        self.outputs: list[int] = []  # positions of output messages in acc
        self._masked: dict[int, Msg] = {}

    def advance(self, t: int) -> View:
        for s in self.between(self.t - 1 if self.t else 0, t - 1):
            sm = self.base(s)
            self.acc.extend(sm.lead)
            for m in sm.body:
                if m.kind == "output":
                    self.outputs.append(len(self.acc))
                self.acc.append(m)
        self.t = t
        out = list(self.acc)
        keep = self.policy.mask_keep
        old = self.outputs[:-keep] if keep > 0 else self.outputs
        for pos in old:
            masked = self._masked.get(pos)
            if masked is None:
                m = self.acc[pos]
                n = len(m.content.splitlines())
                masked = Msg(m.role, f"[old tool output omitted: {n} lines]", m.step, m.block,
                             m.kind)
                self._masked[pos] = masked
            out[pos] = masked
        return View(t, [*out, *self.lead(t)], 0)


class CompactRenderer(StepHistory):
    """A lossy summary at the harness threshold (recorded compaction points when there are any).

    After a compaction the prompt is system + summary + the steps since, like a harness's
    auto-compact. The summary here is deterministic (briefs of the compacted steps, capped).
    """

    def __init__(self, session: Session, policy: Policy) -> None:
        super().__init__(session, policy)
        self.recorded = sorted({c.before_step for c in session.compactions})
        self.start = 0  # steps < start are compacted away
        self.summary: list[Msg] = []
        self.acc: list[Msg] = []
        self.acc_tokens = 0
        self.sys_tokens = sum(estimate_tokens(m.content) for m in self.system)
        self.synthesize = True  # compact where the harness would have, if nothing is recorded

    def _compact(self, t: int, recorded: bool) -> None:
        if recorded:  # the transcript carries the harness's own summary in step t's prompt
            self.summary = []
            self.start = t
            # ... and the harness keeps its preserved segment (Claude Code 2.1) verbatim
            kept = [self.base(s) for s in self.session.preserved.get(t, []) if s in self.steps]
            self.acc = [m for sm in kept for m in (*sm.lead, *sm.body)]
            self.acc_tokens = sum(estimate_tokens(m.content) for m in self.acc)
            return
        gone = self.between(self.start - 1 if self.start else 0, t - 1)
        briefs = [step_brief(s, self.base(s), limit=200) for s in gone[-40:]]
        notes = (note_texts(gone[-40:], briefs, cap=self.policy.note_cap,
                            hint=self.policy.restore_hint, verb=self.policy.restore_verb)
                 if gone else [])  # fmt: skip
        text = "[compacted: earlier conversation summarized]\n" + "\n".join(n[1] for n in notes)
        keep_prompts = [m for s in gone for m in self.base(s).lead][:1]
        self.summary = [*keep_prompts, Msg("note", text[: self.policy.note_cap * 2], t, -1,
                                           "note")]
        self.start = t
        self.acc = []
        self.acc_tokens = sum(estimate_tokens(m.content) for m in self.summary)

    def advance(self, t: int) -> View:
        lo = max(self.t - 1 if self.t else 0, self.start - 1 if self.start else 0)
        for s in self.between(lo, t - 1):
            sm = self.base(s)
            self.acc.extend(sm.lead)
            self.acc.extend(sm.body)
            self.acc_tokens += sum(estimate_tokens(m.content) for m in (*sm.lead, *sm.body))
        self.t = t
        due_recorded = any(self.start < c <= t for c in self.recorded)
        over = not self.recorded and self.synthesize and (
            self.sys_tokens + self.acc_tokens >= self.policy.compact_threshold
        )
        if due_recorded or over:
            self._compact(t, due_recorded)
        return View(t, [*self.system, *self.summary, *self.acc, *self.lead(t)], 0)


class NativeRenderer(CompactRenderer):
    """What the harness sent: the full history, cut only at its own recorded compactions
    (the prompt after one starts with the harness's summary, recorded in that step's lead).

    The replay prices it with the recorded per-call usage where the session has it; this
    rendering supplies the prefix structure and the content the carriage measure reads.
    """

    def __init__(self, session: Session, policy: Policy) -> None:
        super().__init__(session, policy)
        self.synthesize = False
