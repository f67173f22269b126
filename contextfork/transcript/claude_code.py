"""Claude Code JSONL (``~/.claude/projects/<slug>/<session>.jsonl``) → ``Session``.

The file is an append-only tree (``claude_tree`` finds its live conversation). A whole session's
lines are read twice, never held whole: first each line's skeleton, to find the live lines;
then each live line again, its bytes verified against the first read, to build the steps.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from contextfork.errors import ContextforkError
from contextfork.transcript._content import IMAGE, flatten_text
from contextfork.transcript._jsonl import Record, read_records, require_records, reread
from contextfork.transcript._steps import StepBuilder, usage_fields
from contextfork.transcript.claude_tree import (
    Prepared,
    first_agent_id,
    message_of,
    prepare,
    sidechain_file,
    skeleton,
    tool_results,
)
from contextfork.transcript.model import (
    Block,
    Compaction,
    RawLine,
    Session,
    Step,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    Usage,
)
from contextfork.transcript.source import SourceFile

_EXIT_RE = re.compile(r"^Exit code (-?\d+)")
# User-role text written by the harness itself, not typed by the user.
_HARNESS_PREFIXES = (
    "<local-command-", "<command-name>", "<command-message>", "<command-args>",
    "[Request interrupted", "<system-reminder>", "Caveat: ", "<bash-input>", "<bash-stdout>",
    "<bash-stderr>", "<task-notification>", "<user-prompt-submit-hook>",
)


def is_harness_text(text: str) -> bool:
    return text.lstrip().startswith(_HARNESS_PREFIXES)


def looks_like(obj: dict[str, Any]) -> bool:
    """Cheap format sniff used by ``detect``."""
    if "parentUuid" in obj and "uuid" in obj:
        return True
    kind = obj.get("type")
    return type(kind) is str and kind in {"file-history-snapshot", "queue-operation", "summary"} and (
        "messageId" in obj or "leafUuid" in obj or "operation" in obj
    )


def usage_of(message: dict[str, Any]) -> Usage | None:
    raw = message.get("usage")
    if not isinstance(raw, dict):
        return None
    return usage_fields(raw)


def _usage_total(u: Usage) -> int:
    return u.context_tokens + u.output_tokens


def _content_text(content: Any) -> str:
    return flatten_text(content, markers={**IMAGE, "document": "[document]"}, strings=True)


def _assistant_blocks(message: dict[str, Any]) -> list[Block]:
    out: list[Block] = []
    content = message.get("content")
    if isinstance(content, str):
        return [TextBlock(role="assistant", text=content)] if content else []
    if not isinstance(content, list):
        return out
    for b in content:
        if not isinstance(b, dict):
            continue
        kind = b.get("type")
        if kind == "text" and isinstance(b.get("text"), str):
            out.append(TextBlock(role="assistant", text=b["text"]))
        elif kind == "thinking":
            out.append(ThinkingBlock(text=str(b.get("thinking") or "")))
        elif kind == "redacted_thinking":
            out.append(ThinkingBlock(text="[redacted thinking]"))
        elif kind in ("tool_use", "server_tool_use"):
            inp = b.get("input")
            out.append(
                ToolCall(
                    id=str(b.get("id") or ""),
                    name=str(b.get("name") or ""),
                    input=inp if isinstance(inp, dict) else {"value": inp},
                )
            )
    return out


def _to_result(block: dict[str, Any], in_file: tuple[RawLine, int] | None = None) -> ToolResult:
    """``in_file``: the line and position of the block, for a long result left in the file."""
    text = _content_text(block.get("content"))
    is_error = bool(block.get("is_error"))
    exit_code = None
    m = _EXIT_RE.match(text)
    if m:
        exit_code = int(m.group(1))
    span = None if in_file is None else (in_file[0], partial(_result_text, in_file[1]))
    return ToolResult.of(text, call_id=str(block.get("tool_use_id") or ""), is_error=is_error,
                         exit_code=exit_code, span=span)  # fmt: skip


def _result_text(k: int, data: bytes) -> str:
    """The text of a line's ``k``-th tool result, read back from its bytes."""
    return _content_text(tool_results(json.loads(data))[k].get("content"))


class _Builder(StepBuilder):
    """Cuts the live lines into steps: a prompt opens the next step, results join their call's.

    One API response is written as several lines sharing ``message.id`` (its tool results may
    come in between), so a new response key, not a finished call, opens a step.
    """

    stamp_empty = True

    def __init__(self, *, in_file: bool = False) -> None:
        super().__init__()
        self.cur_key: str | None = None
        self.in_file = in_file

    def add(self, obj: dict[str, Any], raw: RawLine) -> None:
        """One live line, by its ``type`` (``_KINDS``); any other type is kept, not a step."""
        uid = obj.get("uuid")
        self.note_id(raw, f"uuid:{uid}" if isinstance(uid, str) else None)
        kind = obj.get("type")
        handler = _KINDS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            self.other(raw, obj.get("timestamp"))
        else:
            handler(self, obj, raw, obj.get("timestamp"))

    def _assistant_line(self, obj: dict[str, Any], raw: RawLine, ts: Any) -> None:
        self._assistant(obj, message_of(obj), raw, ts)

    def _user(self, obj: dict[str, Any], raw: RawLine, ts: Any) -> None:
        results = tool_results(obj)
        if results:
            self.results(
                raw, ts,
                [_to_result(b, (raw, k) if self.in_file else None) for k, b in enumerate(results)],
                call_id=str(results[0].get("tool_use_id")),
            )
            return
        text = _content_text(message_of(obj).get("content"))
        meta = bool(obj.get("isMeta") or obj.get("isCompactSummary")) or is_harness_text(text)
        self.prompt(raw, ts, [TextBlock(role="user", text=text, meta=meta)] if text else [])

    def _system(self, obj: dict[str, Any], raw: RawLine, ts: Any) -> None:
        if obj.get("subtype") != "compact_boundary":
            self.other(raw, ts)
            return
        meta_info = obj.get("compactMetadata")
        meta_info = meta_info if isinstance(meta_info, dict) else {}
        pre = meta_info.get("preTokens")
        self.compaction(
            raw, ts,
            trigger=str(meta_info["trigger"]) if "trigger" in meta_info else None,
            pre_tokens=pre if isinstance(pre, int) else None,
        )

    def _assistant(self, obj: dict[str, Any], msg: dict[str, Any], raw: RawLine, ts: Any) -> None:
        key = msg.get("id") or obj.get("requestId") or obj.get("uuid")
        key = str(key) if key is not None else None
        step = self.cur
        if step is None or self.prompt_pending or key != self.cur_key:
            step = self._open()
            self.cur_key = key
        self._attach(step, raw, ts)
        self._add_blocks(step, _assistant_blocks(msg))
        usage = usage_of(msg)
        if usage is not None and (
            step.usage is None or _usage_total(usage) > _usage_total(step.usage)
        ):
            step.usage = usage
        if isinstance(msg.get("model"), str):
            step.model = msg["model"]
        step.message_id = step.message_id or (msg.get("id") if isinstance(msg.get("id"), str) else None)
        rid = obj.get("requestId")
        step.request_id = step.request_id or (rid if isinstance(rid, str) else None)


#: One handler per line ``type`` of the live conversation.
_KINDS: dict[str, Callable[[_Builder, dict[str, Any], RawLine, Any], None]] = {
    "assistant": _Builder._assistant_line,
    "user": _Builder._user,
    "system": _Builder._system,
}


def _whole(
    live: list[Record], source: SourceFile | None
) -> Iterator[tuple[Record, dict[str, Any]]]:
    """Each live line with its whole object: a span of ``source`` parsed again from its bytes
    (the same bytes: their digest is checked), a line held in memory as it is."""
    spans = reread(source, (r for r in live if r.text is None)) if source is not None else None
    for rec in live:
        if rec.text is not None or spans is None:
            yield rec, rec.obj  # held (a line without text or file is refused by ``Record.raw``)
        else:
            _, data = next(spans)
            yield rec, json.loads(data)


def build_session(
    records: list[Record], *, path: Path | None, malformed: int, agent_id: str | None = None,
    source: SourceFile | None = None,
) -> Session:
    """The session of ``records``: skeletons (``skeleton``) of ``source``'s lines, or whole
    objects of lines built in memory (``source`` None)."""
    return build_prepared(prepare(records), path=path, malformed=malformed, agent_id=agent_id,
                          source=source)  # fmt: skip


def build_prepared(
    prep: Prepared, *, path: Path | None, malformed: int, agent_id: str | None = None,
    source: SourceFile | None = None, in_file: bool = False,
) -> Session:
    """The session of the prepared lines: its steps built from each live line in turn."""
    builder = _Builder(in_file=in_file)
    branch = cwd = None
    for rec, obj in _whole(prep.live, source):
        builder.add(obj, rec.raw(source))
        if isinstance(obj.get("gitBranch"), str):
            branch = obj["gitBranch"]
        if isinstance(obj.get("cwd"), str):
            cwd = obj["cwd"]
    steps = builder.finish()
    preserved = _mark_preserved(prep.kept, steps, builder.compactions)
    model = next((s.model for s in reversed(steps) if s.model and s.model != "<synthetic>"), None)
    return Session(
        format="claude-code",
        session_id=prep.session_id,
        path=str(path) if path else None,
        cwd=cwd,
        git_branch=branch,
        steps=steps,
        compactions=builder.compactions,
        malformed_lines=malformed,
        started_at=prep.started_at,
        ended_at=prep.ended_at,
        model=model,
        abandoned_lines=prep.abandoned,
        agent_id=agent_id,
        preserved=preserved,
    )


def _mark_preserved(
    kept_lines: list[set[int]], steps: list[Step], compactions: list[Compaction]
) -> dict[int, list[int]]:
    """Steps each compaction kept verbatim (preserved segment); flag those of the last one,
    which are in the live view."""
    out: dict[int, list[int]] = {}
    for offsets, comp in zip(kept_lines, compactions, strict=False):
        if not offsets:
            continue
        kept = [s.index for s in steps
                if s.index < comp.before_step and any(r.offset in offsets for r in s.raw)]
        if kept:
            out[comp.before_step] = kept
    if compactions:
        for s in steps:
            s.preserved = s.index in out.get(compactions[-1].before_step, [])
    return out


def subagent_files(path: Path) -> list[Path]:
    """``<session>.jsonl`` keeps its subagents' transcripts in ``<session>/subagents/``."""
    folder = path.with_suffix("") / "subagents"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.jsonl") if p.is_file())


def load(
    path: Path, *, include_subagents: bool = True, between: Callable[[], None] | None = None,
    in_file: bool = False,
) -> Session:
    """``between``: run once every line's skeleton is gone and before any step is built
    (``load_session``). ``in_file``: long tool results stay in the file (``ToolResult.in_file``)."""
    source = SourceFile(path)
    stats = read_records(path, skeleton)
    require_records(path, stats, "Claude Code")
    records, malformed = stats.records, stats.malformed
    del stats
    all_side = sidechain_file(records)
    agent = first_agent_id(records) if all_side else None
    main = prepare(records)
    # Older Claude Code versions wrote subagent lines inline, flagged isSidechain.
    inline: dict[str, list[Record]] = {}
    if include_subagents and not all_side:
        for r in records:
            if r.obj.get("isSidechain"):
                inline.setdefault(str(r.obj.get("agentId") or "sidechain"), []).append(r)
    sides = [(a, prepare(recs)) for a, recs in inline.items()]
    del records, inline  # every line's skeleton goes before the steps are built (issue 27)
    if between is not None:
        between()
    session = build_prepared(main, path=path, malformed=malformed, agent_id=agent, source=source,
                             in_file=in_file)  # fmt: skip
    if not include_subagents:
        return session
    for a, prep in sides:
        session.subagents.append(
            build_prepared(prep, path=path, malformed=0, agent_id=a, source=source, in_file=in_file)
        )
    for sub in subagent_files(path):
        try:
            session.subagents.append(load(sub, include_subagents=False, in_file=in_file))
        except ContextforkError:  # one broken subagent file must not hide the session
            session.malformed_lines += 1
    return session
