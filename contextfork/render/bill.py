"""What each call of a replay costs in the harness's own tokens and dollars.

Renderers count o200k_base tokens of the messages only. What a harness sends is more: its
system prompt and tool definitions (never in the transcript) and its provider's tokenizer.
Where the session recorded per-call input usage, that usage is fitted against the *native*
rendering (the history cut at the harness's own compactions) per session:

    recorded_t ≈ overhead_segment + scale × rendered_t

(one scale, one overhead per compaction segment: after a compaction the harness re-attaches
files, so its overhead steps up). Every policy is then priced as ``overhead + scale × its own
rendered tokens`` with the first segment's overhead (a policy that never compacts never pays
the re-attachments), so all policies are compared in one unit with the recorded native run.

Cache model: a call reads from the prefix cache the longest common prefix with the previous
call (the harness overhead included), unless the gap since that call exceeds the cache TTL
(5 minutes by default; 1 hour as an option); whatever is not read is written to the cache
(Anthropic-style explicit caching, as Claude Code does) or, on a card without a write price,
billed as plain input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from statistics import median

from contextfork.render.metrics import PriceCard
from contextfork.transcript.model import Session, Step

DEFAULT_TTL = 300
_TTL_FIELD = re.compile(r'"ephemeral_(1h|5m)_input_tokens"\s*:\s*([1-9][0-9]*)')

# List prices in dollars per million tokens (input, cache read, 5-minute write, 1-hour write,
# output), from the providers' pricing pages as of 2026-02; the first matching prefix wins.
# A card without a write price (None) is a provider with implicit caching.
_PRICES: tuple[tuple[str, float, float, float | None, float | None, float], ...] = (
    ("claude-opus-4-5", 5.0, 0.5, 6.25, 10.0, 25.0),
    ("claude-opus-4-6", 5.0, 0.5, 6.25, 10.0, 25.0),
    ("claude-opus-4", 15.0, 1.5, 18.75, 30.0, 75.0),
    ("claude-sonnet-4", 3.0, 0.3, 3.75, 6.0, 15.0),
    ("claude-3-7-sonnet", 3.0, 0.3, 3.75, 6.0, 15.0),
    ("claude-haiku-4-5", 1.0, 0.1, 1.25, 2.0, 5.0),
    ("gemini-3-pro", 2.0, 0.2, None, None, 12.0),
    ("gemini-2.5-pro", 1.25, 0.125, None, None, 10.0),
    ("gpt-5", 1.25, 0.125, None, None, 10.0),
)


def card_for_model(model: str | None) -> PriceCard | None:
    """The list-price card of a recorded model name (``google/`` style prefixes ignored)."""
    if not model:
        return None
    name = model.rsplit("/", 1)[-1].lower()
    for prefix, inp, read, write, write_1h, out in _PRICES:
        if name.startswith(prefix):
            return PriceCard(prefix, inp, read, write, write_1h, out)
    return None


@dataclass(frozen=True)
class HarnessModel:
    """Per session: recorded prompt ≈ overhead + scale × rendered tokens."""

    overhead: float = 0.0
    scale: float = 1.0
    points: int = 0
    mean_abs_error: float | None = None  # relative, over the fitted calls
    source: str = "no recorded usage: messages only (overhead 0, scale 1)"

    def tokens(self, rendered: int) -> int:
        return round(self.overhead + self.scale * rendered)

    def to_json(self) -> dict[str, object]:
        return {"overhead_tokens": round(self.overhead), "scale": round(self.scale, 4),
                "points": self.points, "source": self.source,
                "mean_abs_error": None if self.mean_abs_error is None
                else round(self.mean_abs_error, 4)}


def recorded_prompt(step: Step) -> int | None:
    """The call's recorded input (fresh + cache write + cache read); None when not recorded
    or zero (an aborted call records nothing)."""
    if step.usage is None or step.usage.context_tokens <= 0:
        return None
    return step.usage.context_tokens


def fit_harness(rendered: list[int], recorded: list[int | None], segment: list[int]) -> HarnessModel:
    """Least squares with one slope and one intercept per segment; the first segment's
    intercept is the harness overhead. Falls back to scale 1 when the fit is not sane."""
    pts = [(x, y, g) for x, y, g in zip(rendered, recorded, segment, strict=True)
           if y is not None]
    if not pts:
        return HarnessModel()
    groups: dict[int, list[tuple[int, int]]] = {}
    for x, y, g in pts:
        groups.setdefault(g, []).append((x, y))
    means = {g: (sum(x for x, _ in v) / len(v), sum(y for _, y in v) / len(v))
             for g, v in groups.items()}
    sxy = sum((x - means[g][0]) * (y - means[g][1]) for x, y, g in pts)
    sxx = sum((x - means[g][0]) ** 2 for x, _y, g in pts)
    first = min(groups)
    scale = sxy / sxx if sxx > 0 else 0.0
    source = f"fitted on {len(pts)} calls' recorded input usage"
    if not 0.5 <= scale <= 3.0:
        scale = 1.0
        source = (f"recorded input usage of {len(pts)} calls; scale 1 (no sane fit), "
                  "overhead = median gap")
        overhead = max(0.0, median(y - x for x, y, g in pts if g == first))
        intercepts = {g: max(0.0, median(y - x for x, y, gg in pts if gg == g)) for g in groups}
    else:
        intercepts = {g: my - scale * mx for g, (mx, my) in means.items()}
        overhead = max(0.0, intercepts[first])
    errs = [abs(intercepts[g] + scale * x - y) / y for x, y, g in pts]
    return HarnessModel(overhead, scale, len(pts), sum(errs) / len(errs), source)


def recorded_ttl(session: Session) -> int | None:
    """The cache TTL the harness asked for, when its raw usage says (Anthropic's usage splits
    cache writes into ``ephemeral_5m`` / ``ephemeral_1h``); None when nothing says."""
    seen: set[str] = set()
    for st in session.steps:
        for raw in st.raw:
            if "ephemeral_" in raw.text:
                seen.update(m.group(1) for m in _TTL_FIELD.finditer(raw.text))
    if "1h" in seen:
        return 3600
    return 300 if "5m" in seen else None


def parse_time(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def call_gaps(session: Session, steps: list[int]) -> list[float | None]:
    """Seconds since the previous call, per call (None: the first call or no timestamps)."""
    by_index = {s.index: s for s in session.steps}
    times = [parse_time(by_index[t].started_at) if t in by_index else None for t in steps]
    gaps: list[float | None] = [None]
    for a, b in pairwise(times):
        gaps.append(b - a if a is not None and b is not None else None)
    return gaps


@dataclass
class Bill:
    """The harness-side bill of one policy on one session."""

    prompts: list[int] = field(default_factory=list)
    reads: list[int] = field(default_factory=list)
    writes: list[int] = field(default_factory=list)
    fresh: list[int] = field(default_factory=list)
    expired: int = 0

    def add(self, prompt: int, read: int, written: int, fresh: int) -> None:
        self.prompts.append(prompt)
        self.reads.append(read)
        self.writes.append(written)
        self.fresh.append(fresh)

    @property
    def total(self) -> int:
        return sum(self.prompts)

    def cost(self, card: PriceCard, ttl: int) -> float:
        return card.cost(sum(self.fresh), sum(self.reads), sum(self.writes), ttl_seconds=ttl)


def modelled_bill(
    harness: HarnessModel,
    rendered: list[int],
    cached: list[int],
    gaps: list[float | None],
    card: PriceCard,
    ttl: int = DEFAULT_TTL,
    sizes: list[int | None] | None = None,
) -> Bill:
    """Price every call with the cache model; ``sizes`` overrides a call's prompt size (the
    recorded native usage) while the prefix structure still comes from the rendering.

    After a pure append the read is the whole previous prompt (as sent, so the fit's residuals
    never show up as cache writes); after a rewrite, the harness overhead plus the common
    rendered prefix in harness tokens."""
    bill = Bill()
    for i, (r, c, gap) in enumerate(zip(rendered, cached, gaps, strict=True)):
        size = sizes[i] if sizes is not None and sizes[i] is not None else None
        prompt = size if size is not None else harness.tokens(r)
        if i == 0 or (gap is not None and gap > ttl):
            read = 0
            bill.expired += i > 0
        elif c >= rendered[i - 1]:  # a pure append: the whole previous prompt is the prefix
            read = min(prompt, bill.prompts[-1])
        else:
            read = min(prompt, harness.tokens(c))
        rest = prompt - read
        if card.cache_write_per_mtok is None:
            bill.add(prompt, read, 0, rest)
        else:
            bill.add(prompt, read, rest, 0)
    return bill


def recorded_bill(steps: list[Step], fallback: Bill) -> Bill:
    """The native bill as recorded (fresh input, cache writes, cache reads per call); calls
    without recorded usage take the modelled figures of ``fallback``."""
    bill = Bill()
    for i, st in enumerate(steps):
        u = st.usage
        if u is None or u.context_tokens <= 0:
            bill.add(fallback.prompts[i], fallback.reads[i], fallback.writes[i], fallback.fresh[i])
        else:
            bill.add(u.context_tokens, u.cache_read_input_tokens,
                     u.cache_creation_input_tokens, u.input_tokens)
    return bill


def output_tokens(session: Session) -> int:
    return sum(s.usage.output_tokens for s in session.steps if s.usage is not None)
