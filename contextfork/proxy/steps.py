"""What the proxy's readers of a request share: ``LiveSteps`` whose sources are *parts*.

pi's array has one block per message; an Anthropic message or a Responses ``input`` holds several
parts that belong to different steps (a user message carries the last call's results and the
next prompt). So a step's sources here are flat ids into ``at`` (message, part), and each step
remembers which of its parts are tool results (folding a step removes exactly those with it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contextfork.harness.pi.messages import LiveSteps
from contextfork.hashing import sha256_text
from contextfork.transcript.model import Block, Step


@dataclass
class PartSteps(LiveSteps):
    at: list[tuple[int, int]] = field(default_factory=list)  # flat id -> (message, part)
    results: list[list[int]] = field(default_factory=list)  # per step: its result flat ids
    keys: list[str] = field(default_factory=list)

    def flat(self, i: int, j: int) -> int:
        self.at.append((i, j))
        return len(self.at) - 1

    def key(self, lead: list[Block], body: list[Block]) -> str:
        """A stable step key: chained on the previous step's, anchored in the lead (so the
        open step and the finished one share it) or, without a lead, in the reply."""
        prev = self.keys[-1] if self.keys else ""
        anchor = [b.model_dump(mode="json") for b in (lead or body)]
        return "msg:" + sha256_text(prev + "\n" + json.dumps(anchor, sort_keys=True))[:32]

    def add_step(self, i: int, blocks: list[Block], srcs: list[int], lead: int,
                 model: str | None) -> None:
        """Close the pending lead with the call at message ``i`` (``blocks[:lead]``: lead)."""
        key = self.key(blocks[:lead], blocks[lead:])
        self.steps.append(Step(index=len(self.steps) + 1, key=key, blocks=blocks, model=model))
        self.keys.append(key)
        self.sources.append(srcs)
        self.results.append([])
        self.assistant_at.append(i)
        self.pending = []

    def add_result(self, fid: int, block: Block) -> None:
        self.steps[-1].blocks.append(block)
        self.sources[-1].append(fid)
        self.results[-1].append(fid)

    def open_step(self) -> Step | None:
        if not self.pending:
            return None
        lead = [b for b, _ in self.pending]
        return Step(index=len(self.steps) + 1, key=self.key(lead, []), blocks=lead)

    # -- what an edit does to this format's items (contextfork.proxy.edit) ----------------
    def whole(self, s: int) -> list[int]:
        """The items a folded step ``s`` removes entirely (its results are parts)."""
        raise NotImplementedError

    def parts(self, value: Any) -> list[Any]:
        """An item's parts, as the flat ids number them."""
        raise NotImplementedError

    def replaceable(self, part: Any) -> bool:
        """A result part whose text a dedupe stub may replace."""
        raise NotImplementedError

    def edited_value(self, value: Any, drops: set[int], subs: dict[int, str]) -> Any:
        """The item without the parts ``drops``, results ``subs`` replaced (None: nothing
        left)."""
        raise NotImplementedError

    def edited_text(self, raw: str, drops: set[int], subs: dict[int, str]) -> str:
        """The same edit spliced into the item's own text."""
        raise NotImplementedError

    def note_item(self, text: str) -> dict[str, Any]:
        """A fold note as an item of this format."""
        raise NotImplementedError

    def finished_end(self) -> int:
        """The first message holding nothing of a finished step (only pending leads)."""
        if not self.steps:
            return 0
        last = [self.at[f][0] for f in self.sources[-1]]
        return max([self.assistant_at[-1], *last]) + 1


MEMO_CHARS = 16 << 20  # what one conversation's edited texts may hold before starting over


@dataclass
class Memo:
    """What an edit keeps from one request to the next in a conversation: how a note names the
    way back (``hint``: ``""`` for new folds, then fixed per fold id when first sent, so a note
    never changes bytes), each edited message's text (an edit behind the boundary repeats on
    every call until the boundary moves: spliced once), and step positions -> cold ids."""

    hint: dict[str, str] = field(default_factory=dict)
    texts: dict[tuple[str, frozenset[int], tuple[tuple[int, str], ...]], str] = field(
        default_factory=dict)
    ids: dict[int, int] = field(default_factory=dict)

    size: int = 0  # characters held by ``texts`` (keys and values)

    def text(self, key: tuple[str, frozenset[int], tuple[tuple[int, str], ...]],
             make: Callable[[], str]) -> str:
        got = self.texts.get(key)
        if got is None:
            got = make()
            cost = len(key[0]) + len(got)
            if self.size + cost > MEMO_CHARS:
                self.texts.clear()
                self.size = 0
            self.texts[key] = got
            self.size += cost
        return got


@dataclass
class Edit:
    """The rendered view over the request: the output items as (text, value), where each came
    from (``origin``: the original index, None for a note) and whether it was changed."""

    texts: list[str] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    origin: list[int | None] = field(default_factory=list)
    changed: list[bool] = field(default_factory=list)
    folded_steps: int = 0
    stubs: int = 0
    notes: int = 0

    def add(self, text: str, value: Any, origin: int | None, changed: bool) -> None:
        self.texts.append(text)
        self.values.append(value)
        self.origin.append(origin)
        self.changed.append(changed)

    def window(self) -> tuple[list[int], list[int]]:
        """Output positions whose neighbourhood the edit changed, and the original positions
        they stand for (±1): pairs and roles elsewhere are the client's own, untouched."""
        out: set[int] = set()
        n = len(self.texts)
        for k in range(n):
            o = self.origin[k]
            prev = self.origin[k - 1] if k else -1
            if o is None or self.changed[k] or prev is None or o != prev + 1:
                out.update(x for x in (k - 1, k, k + 1) if 0 <= x < n)
        orig: set[int] = set()
        for k in out:
            o = self.origin[k]
            if o is not None:
                orig.update((o - 1, o, o + 1))
        return sorted(out), sorted(x for x in orig if x >= 0)


__all__ = ["Edit", "Memo", "PartSteps"]
