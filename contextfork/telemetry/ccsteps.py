"""The live steps of a Claude Code session from ``ccread`` lines, without the pydantic model.

The same walk and cut as ``contextfork.transcript.claude_code`` (``live_records``,
``_Builder``, ``_mark_preserved``), on the lines' digests (``ccline``), kept to what ``status``
reports: per step its index, lines, recorded usage, model and blocks.
tests/telemetry/test_status_fast.py pins the two to the same report.
"""

from __future__ import annotations

from typing import Any

from contextfork import livewalk
from contextfork.telemetry.ccline import Block, Line, Usage, estimate

__all__ = ["Cut", "LStep", "estimate", "live", "mark_preserved"]


def _d(ln: Line) -> list[Any]:
    """A conversation line's digest (``ccline``)."""
    if ln.d is None:
        raise TypeError("not a conversation line")
    return ln.d


def live(lines: list[Line]) -> list[int]:
    """Indexes of the live conversation's lines in file order (``livewalk.live``)."""
    return livewalk.live(
        lines,
        boundary=lambda i: _d(lines[i])[1] is True,
        message_id=lambda i: _d(lines[i])[1],
        calls=lambda i: _d(lines[i])[3],
        results=lambda i: _d(lines[i])[1],
    )


class LStep:
    __slots__ = ("blocks", "index", "lines", "model", "preserved", "usage")

    def __init__(self, index: int, blocks: list[Block], lines: list[int]) -> None:
        self.index = index
        self.blocks = blocks
        self.lines = lines
        self.usage: Usage | None = None
        self.model: str | None = None
        self.preserved = False


def _total(u: Usage) -> int:
    return u[0] + u[1] + u[2] + u[3]


class Cut:
    """``_Builder`` + ``StepBuilder`` for the live lines, on ``LStep``."""

    def __init__(self, lines: list[Line]) -> None:
        self.lines = lines
        self.steps: list[LStep] = []
        self.compactions: list[dict[str, Any]] = []  # ``Compaction``, as plain values
        self.cur: LStep | None = None
        self.cur_key: str | None = None
        self.prompt_pending = False
        self.pending_blocks: list[Block] = []
        self.pending_lines: list[int] = []
        self.call_owner: dict[str, LStep] = {}

    def add(self, i: int) -> None:
        d = self.lines[i].d
        if d is None:
            self._other(i)
        elif d[0] == "a":
            self._assistant(d, i)
        elif d[0] == "u":
            self._user(d, i)
        else:
            self._system(d, i)

    def _open(self) -> LStep:
        step = LStep(len(self.steps) + 1, self.pending_blocks, self.pending_lines)
        self.pending_blocks, self.pending_lines = [], []
        self.prompt_pending = False
        self.steps.append(step)
        self.cur = step
        return step

    def _park(self, i: int, blocks: list[Block]) -> None:
        self.pending_blocks.extend(blocks)
        self.pending_lines.append(i)

    def _other(self, i: int) -> None:
        if self.cur is not None and not self.prompt_pending:
            self.cur.lines.append(i)
        else:
            self._park(i, [])

    def _prompt(self, i: int, blocks: list[Block]) -> None:
        self._park(i, blocks)
        self.prompt_pending = True

    def _user(self, d: list[Any], i: int) -> None:
        results, blocks = d[1], d[2]
        if not results:
            self._prompt(i, list(blocks))
            return
        owner = self.call_owner.get(results[0]) or self.cur
        if owner is None or self.prompt_pending:
            self._park(i, blocks)
            return
        owner.lines.append(i)
        owner.blocks.extend(blocks)

    def _system(self, d: list[Any], i: int) -> None:
        if d[1] is not True:
            self._other(i)
            return
        self.compactions.append({"before_step": len(self.steps) + 1, "timestamp": d[2],
                                 "trigger": d[3], "pre_tokens": d[4]})  # fmt: skip
        self._prompt(i, [])

    def _assistant(self, d: list[Any], i: int) -> None:
        key = d[2]
        step = self.cur
        if step is None or self.prompt_pending or key != self.cur_key:
            step = self._open()
            self.cur_key = key
        step.lines.append(i)
        for block in d[4]:
            step.blocks.append(block)
            if block[0] == "call":
                self.call_owner[block[1]] = step
        usage = d[5]
        if usage is not None and (step.usage is None or _total(usage) > _total(step.usage)):
            step.usage = usage
        if d[6] is not None:
            step.model = d[6]

    def finish(self) -> list[LStep]:
        if self.pending_blocks or (self.pending_lines and not self.steps):
            self._open()
        elif self.pending_lines and self.cur is not None:
            self.cur.lines.extend(self.pending_lines)
        return self.steps


def mark_preserved(lines: list[Line], live_ix: list[int], cut: Cut) -> None:
    """``_mark_preserved``: flag the steps the last compaction kept verbatim."""
    boundaries = [i for i in live_ix if lines[i].kind == "system" and _d(lines[i])[1] is True]
    out: dict[int, list[int]] = {}
    for b, comp in zip(boundaries, cut.compactions, strict=False):
        keep = _preserved_uuids(lines, _d(lines[b]))
        if not keep:
            continue
        wanted = {i for i in live_ix if lines[i].uuid in keep}
        kept = [s.index for s in cut.steps
                if s.index < comp["before_step"] and any(i in wanted for i in s.lines)]  # fmt: skip
        if kept:
            out[comp["before_step"]] = kept
    if cut.compactions:
        last = out.get(cut.compactions[-1]["before_step"], [])
        for s in cut.steps:
            s.preserved = s.index in last


def _preserved_uuids(lines: list[Line], d: list[Any]) -> set[str]:
    """``preserved_uuids`` from a boundary's digest: (…, tail, head, listed uuids)."""
    tail = d[5]
    parents = {} if tail is None else {ln.uuid: ln.parent_uuid for ln in lines if ln.uuid is not None}
    return livewalk.preserved(parents, tail, d[6], d[7])
