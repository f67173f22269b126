"""The ReFold/pi-fold renderer: unedited history + step t + policy → the prompt for step t.

It is incremental (steps are processed once, when the boundary passes them) so a replay over
every step is linear, and ``render()`` — a fresh renderer advanced to t — is a pure function:
the same history and policy give byte-identical messages.

Layout of a prompt: system, then for every earlier step its lead (user prompts: never touched)
and its body (raw in the tail after b_t; deduped or folded into a note behind it), then the
lead of step t. Dedupe, STALE folds and reminders move only at boundary moves; an epoch commit
(pi-fold) is the only other rewrite and is rare by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from contextfork.hashing import sha256_text
from contextfork.render.boundary import boundary
from contextfork.render.carriage import identifiers
from contextfork.render.dedupe import LineIndex, dedupe_text, find_runs
from contextfork.render.fold import (
    BRIEF_LIMIT,
    IDS_LIMIT,
    REMINDER,
    adjacent_runs,
    note_texts,
    parse_marks,
    step_brief,
)
from contextfork.render.history import StepHistory
from contextfork.render.messages import Msg, original_step_text, reply_text
from contextfork.render.policies import Policy
from contextfork.render.store import Removal
from contextfork.render.window import session_window
from contextfork.tokens import estimate_tokens
from contextfork.transcript.model import Session

if TYPE_CHECKING:
    from contextfork.cold.decisions import Decisions


@dataclass
class View:
    """What a renderer returns for one call."""

    t: int
    messages: list[Msg]
    boundary: int
    removals: list[Removal] = field(default_factory=list)
    folds: dict[str, tuple[int, ...]] = field(default_factory=dict)
    step_sha256: dict[int, str] = field(default_factory=dict)
    epochs: int = 0


def _tok(msgs: tuple[Msg, ...] | list[Msg]) -> int:
    return sum(estimate_tokens(m.content) for m in msgs)


def effective_budget(policy: Policy, session: Session) -> int:
    """The epoch budget in estimated tokens: a share of the session's window when the policy
    asks for one (the default), else the policy's fixed number."""
    if policy.budget_share is None:
        return policy.budget_tokens
    return int(policy.budget_share * session_window(session)[0])


class ReFoldRenderer(StepHistory):
    """Stateful renderer for the refold and epoch policies; advance(t) with t increasing.

    ``decisions`` (the agent's curation, ``contextfork.curate``) hold steps raw (pinned or
    expanded: never stubbed, never folded), put the agent's brief in place of the generated
    one and stop the next epoch commit at a chosen step. None or empty: the output is
    byte-identical to a renderer without them."""

    def __init__(self, session: Session, policy: Policy,
                 decisions: Decisions | None = None) -> None:
        super().__init__(session, policy)
        self.nfolds = 0
        self.hold: set[int] = set()
        self.brief_of: dict[int, tuple[int, str]] = {}  # step → (first step of its brief, text)
        self.stop_at: int | None = None
        self.body: dict[int, tuple[Msg, ...]] = {}
        self.b = 0
        self.seen = 0  # replies/outputs of steps <= seen have been read
        self.index = LineIndex()
        self.removals: list[Removal] = []
        self.step_sha: dict[int, str] = {}
        self.folded: dict[int, str] = {}
        self.notes: dict[int, Msg] = {}  # first step of a note → note message
        self.folds: dict[str, tuple[int, ...]] = {}
        self.pending: dict[int, str | None] = {}
        self.remind: set[int] = set()
        self.marks: set[int] = set()
        self.first_owner: dict[str, int] = {}
        self.last_ref: dict[int, int] = {}
        self.owned: dict[int, tuple[str, ...]] = {}
        self.protocol_seen = False
        self.behind: list[Msg] = []
        self.behind_tokens = 0
        self.epochs = 0
        self.floor = 0.0
        self.budget = effective_budget(policy, session)
        # Passive until the prompt is big enough for an operator to pay for itself: steps stay
        # as received (the boundary does not move) and replies get no reminder.
        self.active = policy.min_prompt_tokens <= 0
        if decisions is not None and not decisions.empty:
            self._take(decisions)

    # -- the agent's decisions (contextfork.curate) ---------------------------------------
    def _take(self, d: Decisions) -> None:
        """Resolve stable keys to this history's positions (keys absent here are ignored)."""
        pos = {st.identity: st.index for st in self.session.steps}
        self.hold = {pos[k] for k in d.pinned | d.expanded if k in pos}
        self.brief_of = {}
        for key in sorted(d.briefs):
            b = d.briefs[key]
            covered = sorted(pos[k] for k in b.keys if k in pos)
            for s in covered:
                self.brief_of.setdefault(s, (covered[0], b.text))
        self.stop_at = pos.get(d.boundary) if d.boundary is not None else None

    def apply_decisions(self, d: Decisions) -> None:
        """Take new decisions mid-session (a live worker): a fold holding a step now held raw,
        or whose brief changed, is undone (its other steps fold again into a new note) and the
        prefix behind the boundary is rebuilt once — a rewrite the agent asked for."""
        before = set(self.hold)
        old_briefs = dict(self.brief_of)
        self._take(d)
        newly = self.hold - before
        rebrief = {s for s in set(old_briefs) | set(self.brief_of)
                   if old_briefs.get(s) != self.brief_of.get(s)}
        undo = sorted({self.folded[s] for s in newly | rebrief if s in self.folded})
        for s in newly:
            if s in self.body:
                self.body[s] = self._tail_body(s)  # held raw: never stubbed either
            self.marks.discard(s)
        for s in before - self.hold:  # released: an epoch commit may fold it again
            if self.policy.epoch and s in self.body and s not in self.folded:
                self.marks.add(s)
        if not undo and not newly & set(self.body):
            return
        refold: list[int] = []
        for fid in undo:
            steps = self.folds.pop(fid)
            self.notes.pop(steps[0], None)
            for s in steps:
                self.folded.pop(s, None)
                if s not in self.hold:
                    refold.append(s)
            self.removals = [r for r in self.removals if r.fold_id != fid]
        self.removals = [r for r in self.removals if not (r.kind == "stub" and r.step in newly)]
        if refold:
            self._fold(sorted(refold), {})
        self._rebuild_behind()

    # -- per-step material (base, between, lead: StepHistory) -----------------------------
    def _read(self, upto: int) -> None:
        """Learn from replies and outputs of steps that became visible (marks, owners, refs)."""
        p = self.policy
        for s in self.between(self.seen, upto):
            reply = reply_text(self.steps[s])
            if p.fold_stale or p.reminder or p.auto_stale:
                marks = parse_marks(reply)
                self.protocol_seen = self.protocol_seen or marks.has_lines
                if p.fold_stale:
                    for st in marks.stale:
                        if s - p.k <= st <= s and st in self.steps:
                            self.pending.setdefault(st, marks.progress)
                if (p.reminder and not marks.has_lines and self.active
                        and (p.remind_limit is None or len(self.remind) < p.remind_limit)):
                    self.remind.add(s)
            if p.epoch or p.auto_stale:
                for term in identifiers(reply):
                    owner = self.first_owner.get(term)
                    if owner is not None and owner != s:
                        self.last_ref[owner] = s
                owned: list[str] = []
                for m in self.base(s).body:
                    if m.kind == "output":
                        for term in sorted(identifiers(m.content)):
                            if term not in self.first_owner:
                                self.first_owner[term] = s
                                owned.append(term)
                self.owned[s] = tuple(owned)
        self.seen = max(self.seen, upto)

    def _process(self, s: int, keep: bool = False) -> None:
        """A step crosses the boundary: dedupe its outputs, stage it as an epoch mark.
        ``keep``: the step stays exactly as it was sent in the tail (its lines still index).
        A step the agent holds raw is kept and never staged."""
        p = self.policy
        held = s in self.hold
        keep = keep or held
        sm = self.base(s)
        self.step_sha[s] = sha256_text(original_step_text(sm))
        if keep:
            for m in sm.body:
                if m.kind == "output" and p.dedupe:
                    dedupe_text(m.content, s, m.block, self.index,
                                min_run_lines=p.min_run_lines, min_run_chars=p.min_run_chars,
                                min_line_chars=p.min_line_chars,
                                signature_min_lines=p.signature_min_lines, verb=p.restore_verb)
            self.body[s] = self._tail_body(s)
        elif not p.dedupe:
            self.body[s] = sm.body
        else:
            out: list[Msg] = []
            for m in sm.body:
                if m.kind != "output":
                    out.append(m)
                    continue
                d = dedupe_text(
                    m.content, s, m.block, self.index,
                    min_run_lines=p.min_run_lines, min_run_chars=p.min_run_chars,
                    min_line_chars=p.min_line_chars, signature_min_lines=p.signature_min_lines,
                    verb=p.restore_verb,
                )
                for run in d.runs:
                    span = "".join(d.lines[run.start : run.end + 1])
                    self.removals.append(
                        Removal("stub", s, m.block, run.start + 1, run.end + 1,
                                sha256_text(span), len(span.encode("utf-8")))
                    )
                out.append(m if not d.runs else Msg(m.role, d.text, s, m.block, m.kind))
            self.body[s] = tuple(out)
        if p.epoch and sm.body and not held:
            self.marks.add(s)  # a finished step (tool batch or reply) is staged for free

    def _fold(self, steps: list[int], progress: dict[int, str | None]) -> None:
        """Fold steps (already behind the boundary) into notes; adjacent ones share a note."""
        if self.hold:
            steps = [s for s in steps if s not in self.hold]
        for run in adjacent_runs(steps):
            groups: list[list[int]] = []
            for s in run:  # a STALE note carries one PROGRESS line: split where it changes
                if groups and progress.get(groups[-1][-1]) == progress.get(s):
                    groups[-1].append(s)
                else:
                    groups.append([s])
            for g in groups:
                prog = progress.get(g[0])
                if self.brief_of and any(s in self.brief_of for s in g):
                    prog = None  # the agent's words replace the generated note
                briefs = [self._brief(s) for s in g] if prog is None else []
                for note_steps, text in note_texts(g, briefs, progress=prog,
                                                   cap=self.policy.note_cap,
                                                   hint=self.policy.restore_hint,
                                                   verb=self.policy.restore_verb):
                    self.nfolds += 1
                    fid = f"F{self.nfolds}"
                    self.folds[fid] = note_steps
                    self.notes[note_steps[0]] = Msg(
                        "note", f"{text} ({fid})", note_steps[0], -1, "note"
                    )
                    for s in note_steps:
                        self.folded[s] = fid
                        text_s = original_step_text(self.base(s))
                        self.removals.append(
                            Removal("fold", s, None, None, None, self.step_sha[s],
                                    len(text_s.encode("utf-8")), fid)
                        )
                        self.index.drop_step(s)
                        self.marks.discard(s)

    def _brief(self, s: int) -> str:
        """The generated brief of a step, or the agent's (verbatim, on its first step only)."""
        own = self.brief_of.get(s)
        if own is None:
            return step_brief(s, self.base(s))
        first, text = own
        return f"s{s} (agent brief): {text}" if first == s else ""

    def _step_behind(self, s: int) -> list[Msg]:
        out = list(self.base(s).lead)
        if s in self.folded:
            note = self.notes.get(s)
            if note is not None:
                out.append(note)
        else:
            out.extend(self.body[s])
        return out

    def _rebuild_behind(self) -> None:
        self.behind = []
        for s in self.between(0, self.b):
            self.behind.extend(self._step_behind(s))
        self.behind_tokens = _tok(self.behind)

    def _tail_body(self, s: int) -> tuple[Msg, ...]:
        """A step's body as the tail sends it: as received, plus a reminder when due."""
        body = self.base(s).body
        if s in self.remind:
            outs = [i for i, m in enumerate(body) if m.kind == "output"]
            if outs:
                i = outs[-1]
                m = body[i]
                body = (*body[:i], Msg(m.role, m.content + "\n" + REMINDER, s, m.block,
                                       m.kind), *body[i + 1 :])
        return body

    def _tail(self, t: int) -> list[Msg]:
        out: list[Msg] = []
        for s in self.between(self.b, t - 1):
            out.extend(self.base(s).lead)
            out.extend(self._tail_body(s))
        return out

    def _worth_a_rewrite(self, old_b: int, new_b: int, t: int) -> bool:
        """Is this boundary move worth re-sending the tail uncached? A dry run of what it would
        save on every later call (stubs for lines already shown, stale folds, reminders), paid
        back over about t more calls (a session that ran t calls runs about t more), against
        the tail re-written at ``write_read_ratio`` cache reads per token."""
        p = self.policy
        if p.write_read_ratio <= 0:
            return True
        if any(old_b < s <= new_b for s in self.pending):
            return True  # the agent asked for these folds
        saved = 0.0
        for s in self.between(old_b, new_b):
            body = self.base(s).body
            if s in self.remind:
                saved += len(REMINDER) / 4
            if p.dedupe:
                for m in body:
                    if m.kind != "output":
                        continue
                    lines = m.content.splitlines(keepends=True)
                    for run in find_runs(lines, self.index, min_run_lines=p.min_run_lines,
                                         min_run_chars=p.min_run_chars,
                                         min_line_chars=p.min_line_chars,
                                         signature_min_lines=p.signature_min_lines):
                        chars = sum(len(x) for x in lines[run.start : run.end + 1])
                        saved += max(0.0, chars / 4 - 30)
            if (p.auto_stale and not self.protocol_seen and s not in self.last_ref
                    and any(m.kind == "output" for m in body) and self._worth_folding_raw(s)):
                saved += max(0.0, _tok(body) - BRIEF_LIMIT / 4 - 20)
        resent = _tok(self._tail(t)) + _tok(self.lead(t))
        return saved * t >= (p.write_read_ratio - 1) * resent

    # -- the public step ---------------------------------------------------------------
    def advance(self, t: int) -> View:
        if t < self.t:
            raise ValueError("advance() needs increasing steps; use render() for a random t")
        self.t = t
        p = self.policy
        self._read(t - 1)
        new_b = min(boundary(t, p.k), t - 1)
        if new_b > self.b and not self.active:
            occ = (_tok(self.system) + self.behind_tokens + _tok(self._tail(t))
                   + _tok(self.lead(t)))
            self.active = occ >= p.min_prompt_tokens and t > p.min_calls
        if new_b > self.b and self.active:
            old_b = self.b
            keep = not self._worth_a_rewrite(old_b, new_b, t)
            for s in self.between(old_b, new_b):
                self._process(s, keep)
            self.b = new_b
            if p.auto_stale and not self.protocol_seen and not keep:
                self._auto_stale(old_b, new_b)
            due = sorted(s for s in self.pending if s <= new_b and s not in self.folded)
            if due:
                self._fold(due, {s: self.pending.pop(s) for s in due})
            if due and due[0] <= old_b:
                self._rebuild_behind()
            else:
                for s in self.between(old_b, new_b):
                    part = self._step_behind(s)
                    self.behind.extend(part)
                    self.behind_tokens += _tok(part)
        tail = self._tail(t)
        lead = self.lead(t)
        if p.epoch:
            occ = _tok(self.system) + self.behind_tokens + _tok(tail) + _tok(lead)
            if occ >= max(p.commit_at * self.budget, self.floor):
                self._commit(occ)
        msgs = [*self.system, *self.behind, *tail, *lead]
        return View(t, msgs, self.b, self.removals, self.folds, self.step_sha, self.epochs)

    def _auto_stale(self, old_b: int, new_b: int) -> None:
        """Stand-in for STALE lines the agent never wrote: a finished tool batch crossing the
        boundary is stale when no later reply mentioned anything it first showed."""
        for s in self.between(old_b, new_b):
            outs = [m for m in self.base(s).body if m.kind == "output"]
            if (outs and s not in self.last_ref and s not in self.pending and not self._rich(s)
                    and self._worth_folding(s)):
                self.pending[s] = None

    def _worth_folding(self, s: int) -> bool:
        """A brief replaces the step only when it is shorter than what the step now shows."""
        return _tok(self.body[s]) > BRIEF_LIMIT // 4 + 20

    def _worth_folding_raw(self, s: int) -> bool:
        return _tok(self.base(s).body) > BRIEF_LIMIT // 4 + 20

    def _rich(self, s: int) -> bool:
        """Reference material: it showed more new names than a note can carry."""
        factor = self.policy.rich_factor
        if factor is None:
            return False
        return len(", ".join(self.owned.get(s, ()))) > factor * IDS_LIMIT

    def _commit(self, occ: int) -> None:
        """One pi-fold epoch: fold staged marks, stalest first, down to the lower watermark."""
        p = self.policy
        target = p.fold_down_to * self.budget
        stop = self.stop_at if self.stop_at is not None else self.b + 1
        cands = sorted((s for s in self.marks if s <= self.b and s < stop
                        and s not in self.folded and s not in self.hold
                        and self._worth_folding(s)),
                       key=lambda s: (self._rich(s), self.last_ref.get(s, s), s))
        chosen: list[int] = []
        for s in cands:
            if occ <= target:
                break
            occ -= max(0, _tok(self.body[s]) - 100)
            chosen.append(s)
        if chosen:
            self.epochs += 1
            self._fold(sorted(chosen), {})
            self._rebuild_behind()
        # Hysteresis: if the marks could not reach the low watermark (too little behind the
        # boundary), wait for a full watermark band of growth before the next rewrite.
        self.floor = occ + (p.commit_at - p.fold_down_to) * self.budget
