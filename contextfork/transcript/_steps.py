"""Shared step assembly for every format (Claude Code extends it for its response keys).

The rule is the same everywhere: user text opens the *next* step (it is what triggers the model
call), each model call's output is one step, a tool result joins the step whose call caused it,
and every source line lands in exactly one step's ``raw`` so nothing is lost.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from contextfork.transcript.model import (
    Block,
    Compaction,
    FieldsSets,
    RawLine,
    Step,
    ToolCall,
    ToolResult,
    Usage,
    share_fields_set,
)


class StepBuilder:
    #: Stamp steps with empty timestamp strings too (Claude Code takes its own as written).
    stamp_empty = False

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.compactions: list[Compaction] = []
        self.cur: Step | None = None
        self.closed = False
        self.prompt_pending = False
        self.after_compaction = False
        self.pending_blocks: list[Block] = []
        self.pending_raw: list[RawLine] = []
        self.pending_ts: list[str] = []
        self.call_owner: dict[str, Step] = {}
        # byte offset of a source line -> the harness's own id for it (prefixed, e.g. "uuid:…")
        self.line_ids: dict[int, str] = {}
        self.fields_sets: FieldsSets = {}  # blocks as they come, steps and usage once finished

    def note_id(self, raw: RawLine | None, line_id: str | None) -> None:
        """Remember the harness's id of a line: a step is keyed by its first identified line."""
        if raw is not None and line_id:
            self.line_ids.setdefault(raw.offset, line_id)

    def _stamp(self, step: Step, ts: Any) -> None:
        if isinstance(ts, str) and (ts or self.stamp_empty):
            step.started_at = step.started_at or ts
            step.ended_at = ts

    def _open(self) -> Step:
        step = Step(
            index=len(self.steps) + 1,
            blocks=list(self.pending_blocks),
            raw=list(self.pending_raw),
            after_compaction=self.after_compaction,
        )
        for ts in self.pending_ts:
            self._stamp(step, ts)
        self.pending_blocks, self.pending_raw, self.pending_ts = [], [], []
        self.prompt_pending = False
        self.closed = False
        self.steps.append(step)
        self.cur = step
        return step

    def _park(self, raw: RawLine | None, ts: Any, blocks: Iterable[Block] = ()) -> None:
        for block in blocks:
            share_fields_set(block, self.fields_sets)
            self.pending_blocks.append(block)
        if raw is not None:
            self.pending_raw.append(raw)
        if isinstance(ts, str):
            self.pending_ts.append(ts)

    def _attach(self, step: Step, raw: RawLine | None, ts: Any) -> None:
        if raw is not None:
            step.raw.append(raw)
        self._stamp(step, ts)

    def _add_blocks(self, step: Step, blocks: Iterable[Block]) -> None:
        for block in blocks:
            share_fields_set(block, self.fields_sets)
            step.blocks.append(block)
            if isinstance(block, ToolCall):
                self.call_owner[block.id] = step

    def prompt(self, raw: RawLine | None, ts: Any, blocks: Iterable[Block]) -> None:
        """User (or harness-injected) input: it belongs to the step it triggers."""
        self._park(raw, ts, blocks)
        self.prompt_pending = True

    def output(
        self,
        raw: RawLine | None,
        ts: Any,
        blocks: Iterable[Block],
        *,
        new_call: bool = False,
        usage: Usage | None = None,
        model: str | None = None,
        message_id: str | None = None,
    ) -> Step:
        """Model output; ``new_call`` when the format marks each call explicitly."""
        step = self.cur
        if step is None or new_call or self.closed or self.prompt_pending:
            step = self._open()
        self._attach(step, raw, ts)
        self._add_blocks(step, blocks)
        if usage is not None:
            step.usage = usage
        if model:
            step.model = model
        if message_id and not step.message_id:
            step.message_id = message_id
        return step

    def result(self, raw: RawLine | None, ts: Any, result: ToolResult) -> None:
        self.results(raw, ts, [result])

    def results(
        self, raw: RawLine | None, ts: Any, results: list[ToolResult], *, call_id: str | None = None
    ) -> None:
        """Tool results from one line join the step of the call that caused them: the call
        ``call_id`` names (default: the first result's), else the current step."""
        owner = self.call_owner.get(results[0].call_id if call_id is None else call_id) or self.cur
        if owner is None or self.prompt_pending:
            self._park(raw, ts, results)
            return
        self._attach(owner, raw, ts)
        self._add_blocks(owner, results)
        self.closed = True

    def usage(self, usage: Usage) -> bool:
        """Recorded usage for the current call (first report wins); closes the call."""
        if self.cur is None or self.cur.usage is not None or self.prompt_pending:
            return False
        self.cur.usage = usage
        self.closed = True
        return True

    def other(self, raw: RawLine | None, ts: Any) -> None:
        if self.cur is not None and not self.prompt_pending:
            self._attach(self.cur, raw, ts)
        else:
            self._park(raw, ts)

    def compaction(
        self,
        raw: RawLine | None,
        ts: Any,
        *,
        trigger: str | None = None,
        pre_tokens: int | None = None,
        summary: Block | None = None,
    ) -> None:
        self.compactions.append(
            Compaction(
                before_step=len(self.steps) + 1,
                timestamp=ts if isinstance(ts, str) else None,
                trigger=trigger,
                pre_tokens=pre_tokens,
            )
        )
        self.after_compaction = True
        self.prompt(raw, ts, [summary] if summary is not None else [])

    def finish(self) -> list[Step]:
        if self.pending_blocks or (self.pending_raw and not self.steps):
            self._open()
        elif self.pending_raw and self.cur is not None:
            self.cur.raw.extend(self.pending_raw)
        self._assign_keys()
        for step in self.steps:
            share_fields_set(step, self.fields_sets)
            if step.usage is not None:
                share_fields_set(step.usage, self.fields_sets)
        return self.steps

    def _assign_keys(self) -> None:
        """A step's identity is its first line's: lines are only ever appended to a step, so
        the first one never changes while the session grows or is compacted. Without a harness
        id, the first line's byte offset (stable in an append-only log)."""
        for step in self.steps:
            key = next((self.line_ids[r.offset] for r in step.raw if r.offset in self.line_ids),
                       None)
            if key is None and step.raw:
                key = f"offset:{step.raw[0].offset}"
            step.key = key


def str_or(value: Any, default: str | None) -> str | None:
    """``value`` when it is a string (a header field), else what was known before."""
    return value if isinstance(value, str) else default


def int_field(d: dict[str, Any], *keys: str) -> int:
    """First integer found under ``keys`` (harnesses rename their usage fields)."""
    for k in keys:
        v = d.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return 0


#: Where Anthropic's API (and Claude Code) reports input, cache write, cache read and output.
ANTHROPIC_USAGE = (
    "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens",
)


def usage_fields(d: dict[str, Any], keys: tuple[str, str, str, str] = ANTHROPIC_USAGE) -> Usage:
    """``Usage`` from a dict reporting input, cache write, cache read and output under ``keys``."""
    inp, cache_write, cache_read, out = keys
    return Usage(
        input_tokens=int_field(d, inp),
        cache_creation_input_tokens=int_field(d, cache_write),
        cache_read_input_tokens=int_field(d, cache_read),
        output_tokens=int_field(d, out),
    )


def timestamps(values: Iterable[Any]) -> tuple[str | None, str | None]:
    ts = [v for v in values if isinstance(v, str) and v]
    return (min(ts), max(ts)) if ts else (None, None)
