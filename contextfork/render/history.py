"""Per-step material every renderer shares: the session's steps in order and their messages.

``step_messages`` is computed once per step and cached, so a replay over every step stays
linear whatever the policy.
"""

from __future__ import annotations

from bisect import bisect_right

from contextfork.render.messages import Msg, StepMessages, step_messages, system_messages
from contextfork.render.policies import Policy
from contextfork.transcript.model import Session


class StepHistory:
    """A session's steps, their cached messages and the system prompt, for one policy."""

    def __init__(self, session: Session, policy: Policy) -> None:
        self.session = session
        self.policy = policy
        self.steps = {s.index: s for s in session.steps}
        self.order = sorted(self.steps)
        self.system = system_messages(session)
        self._base: dict[int, StepMessages] = {}
        self.t = 0

    def base(self, s: int) -> StepMessages:
        """Step ``s`` as messages (computed once)."""
        sm = self._base.get(s)
        if sm is None:
            sm = step_messages(self.steps[s])
            self._base[s] = sm
        return sm

    def between(self, lo: int, hi: int) -> list[int]:
        """Step indices in (lo, hi] that exist, in order."""
        if hi <= lo:
            return []
        return self.order[bisect_right(self.order, lo) : bisect_right(self.order, hi)]

    def lead(self, t: int) -> list[Msg]:
        """The prompt that opens step ``t`` (nothing past the last step)."""
        return list(self.base(t).lead) if t in self.steps else []
