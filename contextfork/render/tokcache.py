"""Token sequences per message, cached: prefix-cache figures need sequences, not counts.

Token ids come from ``contextfork.tokens.encode`` (the one o200k_base encoder, with its
hash-verified vocabulary cache). Each distinct message text is tokenized once per process; a replay re-sends the same messages hundreds of times and never re-tokenizes them.
Every message is framed by three marker ids (negative, so they never equal a real token), the
way chat templates frame messages.
"""

from __future__ import annotations

from contextfork.render.messages import Msg
from contextfork.tokens import encode

_ROLE_ID = {"system": -2, "user": -3, "assistant": -4, "tool": -5, "note": -6}
FRAME = 3


class TokenCache:
    def __init__(self) -> None:
        self._seq: dict[str, tuple[int, ...]] = {}

    def encode(self, text: str) -> tuple[int, ...]:
        seq = self._seq.get(text)
        if seq is None:
            seq = tuple(encode(text))
            self._seq[text] = seq
        return seq

    def message(self, m: Msg) -> tuple[int, ...]:
        return (-1, _ROLE_ID.get(m.role, -7), *self.encode(m.content), -1)

    def count(self, m: Msg) -> int:
        return len(self.encode(m.content)) + FRAME + 1


def common_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = min(len(a), len(b))
    i = 0
    # compare in chunks first: long equal runs are the common case
    step = 256
    while i + step <= n and a[i : i + step] == b[i : i + step]:
        i += step
    while i < n and a[i] == b[i]:
        i += 1
    return i
