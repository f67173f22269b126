"""The bill of one replay: prompt sizes, prefix-cache hits, rewrites, cost, render time.

Cached tokens of a call are the longest common token prefix with the previous call, found by
walking messages until the first that differs (same object or same text), then comparing that
message's tokens. A call is a *pure append* when the previous prompt is a prefix of it, and a
*rewrite* otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median

from contextfork.render.messages import Msg
from contextfork.render.tokcache import TokenCache, common_prefix


@dataclass(frozen=True)
class PriceCard:
    """Dollars per million tokens. Defaults: a Sonnet-class list price (read = 0.1 x input,
    5-minute cache write = 1.25 x, 1-hour write = 2 x). ``cache_write_per_mtok`` None: the
    provider caches implicitly and bills uncached tokens as plain input (no write price)."""

    name: str = "default"
    input_per_mtok: float = 3.0
    cache_read_per_mtok: float = 0.3
    cache_write_per_mtok: float | None = 3.75
    cache_write_1h_per_mtok: float | None = 6.0
    output_per_mtok: float = 15.0

    def write_price(self, ttl_seconds: int) -> float:
        """The price of a cache write for a cache that lives ``ttl_seconds``."""
        if self.cache_write_per_mtok is None:
            return self.input_per_mtok
        if ttl_seconds > 300 and self.cache_write_1h_per_mtok is not None:
            return self.cache_write_1h_per_mtok
        return self.cache_write_per_mtok

    def cost(self, fresh: int, cached: int, written: int = 0, *, ttl_seconds: int = 300,
             output: int = 0) -> float:
        """ccusage's sum: input x in + writes x write + reads x read (+ output x out)."""
        return (fresh * self.input_per_mtok + cached * self.cache_read_per_mtok
                + written * self.write_price(ttl_seconds)
                + output * self.output_per_mtok) / 1_000_000


def first_difference(prev: list[Msg], cur: list[Msg]) -> int:
    n = min(len(prev), len(cur))
    i = 0
    while i < n and (prev[i] is cur[i] or prev[i] == cur[i]):
        i += 1
    return i


@dataclass
class Meter:
    """Accumulates per-call figures for one policy on one session."""

    tokens: TokenCache
    prompts: list[int] = field(default_factory=list)
    cached: list[int] = field(default_factory=list)
    render_ms: list[float] = field(default_factory=list)
    rewrites: int = 0
    appends: int = 0
    boundary_moves: int = 0
    _prev: list[Msg] = field(default_factory=list)
    _cum: list[int] = field(default_factory=lambda: [0])
    _last_boundary: int = 0

    def observe(self, msgs: list[Msg], boundary: int, render_ms: float) -> int:
        """Record one call; returns the index of the first message that changed."""
        i = first_difference(self._prev, msgs)
        cum = self._cum[: i + 1]
        for m in msgs[i:]:
            cum.append(cum[-1] + self.tokens.count(m))
        total = cum[-1]
        cached = cum[i]
        if self._prev:
            if i < len(self._prev):
                self.rewrites += 1
                if i < len(msgs):
                    cached += common_prefix(
                        self.tokens.message(self._prev[i]), self.tokens.message(msgs[i])
                    )
            else:
                self.appends += 1
        else:
            cached = 0
        if boundary != self._last_boundary:
            self.boundary_moves += 1
            self._last_boundary = boundary
        self.prompts.append(total)
        self.cached.append(min(cached, total))
        self.render_ms.append(render_ms)
        self._prev = msgs
        self._cum = cum
        return i

    @property
    def total(self) -> int:
        return sum(self.prompts)

    @property
    def total_cached(self) -> int:
        return sum(self.cached)

    @property
    def peak(self) -> int:
        return max(self.prompts, default=0)

    @property
    def median_render_ms(self) -> float:
        return median(self.render_ms) if self.render_ms else 0.0
