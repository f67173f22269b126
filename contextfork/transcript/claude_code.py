"""Claude Code JSONL (``~/.claude/projects/<slug>/<session>.jsonl``) → ``Session``.

The file is an append-only tree, not a list: every line names its ``parentUuid``. Rewinds leave
abandoned branches behind, compaction starts a new root (linked back by ``logicalParentUuid``),
parallel tool calls hang their results off different siblings, and one API response is written
as several lines sharing ``message.id``. So we walk back from the newest leaf, then pull in the
siblings that belong to the same responses, and only then cut the lines into steps.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from contextfork.errors import ContextforkError
from contextfork.transcript._content import IMAGE, flatten_text
from contextfork.transcript._jsonl import Record, read_records, require_records, reread
from contextfork.transcript._steps import StepBuilder, usage_fields
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

_LEAF_TYPES = frozenset({"user", "assistant", "system"})
_EXIT_RE = re.compile(r"^Exit code (-?\d+)")
# User-role text written by the harness itself, not typed by the user.
_HARNESS_PREFIXES = (
    "<local-command-", "<command-name>", "<command-message>", "<command-args>",
    "[Request interrupted", "<system-reminder>", "Caveat: ", "<bash-input>", "<bash-stdout>",
    "<bash-stderr>", "<task-notification>", "<user-prompt-submit-hook>",
)


# A whole session's lines are read twice, never held whole. The first pass keeps of each line
# only its skeleton: what finding the live conversation reads (``live_records``: its structure
# keys, an assistant's message id and tool call ids, a user line's tool result ids, a compaction
# boundary's metadata). The second pass re-reads the live lines one at a time (their bytes
# verified against the first read) and builds the steps from each whole object, then drops it.
_STRUCTURE = ("type", "uuid", "parentUuid", "logicalParentUuid", "isSidechain", "timestamp",
              "sessionId", "agentId", "subtype")  # fmt: skip
# Values every line repeats: one string object each, not one per line.
_REPEATED = ("type", "sessionId", "subtype")
# Per line type: the content blocks the walk follows and the key naming their call.
_LINKS = {"assistant": ("tool_use", "id"), "user": ("tool_result", "tool_use_id")}


def skeleton(obj: dict[str, Any]) -> dict[str, Any]:
    out = {k: obj[k] for k in _STRUCTURE if k in obj}
    for k in _REPEATED:
        v = out.get(k)
        if type(v) is str:
            out[k] = sys.intern(v)
    kind = out.get("type")
    msg = obj.get("message")
    if kind in _LINKS and isinstance(msg, dict):
        block_type, id_key = _LINKS[kind]
        keep: dict[str, Any] = {"id": msg["id"]} if kind == "assistant" and "id" in msg else {}
        content = msg.get("content")
        if isinstance(content, list):
            links = [{"type": block_type, id_key: b.get(id_key)} for b in content
                     if isinstance(b, dict) and b.get("type") == block_type]  # fmt: skip
            if links:
                keep["content"] = links
        if keep:
            out["message"] = keep
    elif kind == "system" and "compactMetadata" in obj:
        out["compactMetadata"] = obj["compactMetadata"]
    return out


def is_harness_text(text: str) -> bool:
    return text.lstrip().startswith(_HARNESS_PREFIXES)


def looks_like(obj: dict[str, Any]) -> bool:
    """Cheap format sniff used by ``detect``."""
    if "parentUuid" in obj and "uuid" in obj:
        return True
    return obj.get("type") in {"file-history-snapshot", "queue-operation", "summary"} and (
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


def _message(obj: dict[str, Any]) -> dict[str, Any]:
    msg = obj.get("message")
    return msg if isinstance(msg, dict) else {}


def _tool_results(obj: dict[str, Any]) -> list[dict[str, Any]]:
    content = _message(obj).get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


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


def _to_result(block: dict[str, Any]) -> ToolResult:
    text = _content_text(block.get("content"))
    is_error = bool(block.get("is_error"))
    exit_code = None
    m = _EXIT_RE.match(text)
    if m:
        exit_code = int(m.group(1))
    return ToolResult(
        call_id=str(block.get("tool_use_id") or ""), content=text, is_error=is_error,
        exit_code=exit_code,
    )


def live_records(records: list[Record]) -> tuple[list[Record], int]:
    """The lines of the live conversation in file order, and how many were abandoned.

    Walk ``parentUuid`` (or ``logicalParentUuid`` across a compaction) back from the newest
    leaf; then add the off-chain pieces of the same responses (same ``message.id``) and the
    results of their tool calls, which Claude Code hangs off sibling branches.
    """
    main = list(records) if _sidechain_file(records) else [r for r in records if not r.obj.get("isSidechain")]
    by_uuid: dict[str, int] = {}
    for i, r in enumerate(main):
        u = r.obj.get("uuid")
        if isinstance(u, str):
            by_uuid[u] = i
    leaf = next(
        (i for i in range(len(main) - 1, -1, -1)
         if main[i].obj.get("type") in _LEAF_TYPES and isinstance(main[i].obj.get("uuid"), str)),
        None,
    )
    if leaf is None:
        return [], 0
    chain: set[int] = set()
    cur: int | None = leaf
    while cur is not None and cur not in chain:
        chain.add(cur)
        cur = _parent_index(main, cur, by_uuid, chain)
    msg_ids = {
        _message(main[i].obj).get("id") for i in chain if main[i].obj.get("type") == "assistant"
    }
    msg_ids.discard(None)
    included = set(chain)
    for i, r in enumerate(main):
        if i not in included and r.obj.get("type") == "assistant" and _message(r.obj).get("id") in msg_ids:
            included.add(i)
    call_ids: set[str] = set()
    for i in included:
        if main[i].obj.get("type") == "assistant":
            content = _message(main[i].obj).get("content")
            if isinstance(content, list):
                call_ids.update(
                    str(b.get("id")) for b in content
                    if isinstance(b, dict) and b.get("type") == "tool_use"
                )
    for i, r in enumerate(main):
        if i in included or r.obj.get("type") != "user":
            continue
        results = _tool_results(r.obj)
        if results and all(str(b.get("tool_use_id")) in call_ids for b in results):
            included.add(i)
    # Claude Code 2.1 hangs ``attachment`` lines (environment, date, deferred tools …) off the
    # conversation like messages; one that ends a branch is still part of the conversation.
    kept_uuids = {main[i].obj.get("uuid") for i in included}
    for i, r in enumerate(main):
        if i not in included and r.obj.get("type") == "attachment" and (
            r.obj.get("parentUuid") in kept_uuids
        ):
            included.add(i)
            kept_uuids.add(r.obj.get("uuid"))
    abandoned = sum(
        1 for i, r in enumerate(main)
        if i not in included and r.obj.get("type") in ("user", "assistant")
    )
    return [main[i] for i in sorted(included)], abandoned


def _parent_index(
    main: list[Record], cur: int, by_uuid: dict[str, int], chain: set[int]
) -> int | None:
    """The line before ``main[cur]`` in the logical history.

    ``parentUuid``, else (a compaction boundary) ``logicalParentUuid``. Claude Code does not
    promise the line either names is in the file (``logicalParentUuid`` often is not), so when
    the link is missing the history continues in file order: the nearest earlier message.
    """
    obj = main[cur].obj
    parent = obj.get("parentUuid") or obj.get("logicalParentUuid")
    if isinstance(parent, str) and parent in by_uuid:
        return by_uuid[parent]
    is_boundary = obj.get("type") == "system" and obj.get("subtype") == "compact_boundary"
    if not (is_boundary or isinstance(parent, str)):
        return None  # a real root: the session's first line
    for i in range(cur - 1, -1, -1):
        if i not in chain and main[i].obj.get("type") in _LEAF_TYPES and isinstance(
            main[i].obj.get("uuid"), str
        ):
            return i
    return None


def preserved_uuids(records: list[Record], boundary: dict[str, Any]) -> set[str]:
    """The uuids Claude Code keeps verbatim across ``boundary`` (2.1 ``preservedSegment``).

    Walk ``parentUuid`` from ``tailUuid`` back to ``headUuid`` as Claude Code does on resume;
    ``preservedMessages.uuids`` (an explicit list some versions also write) when the walk breaks.
    """
    meta = boundary.get("compactMetadata")
    if not isinstance(meta, dict):
        return set()
    seg = meta.get("preservedSegment")
    if isinstance(seg, dict) and isinstance(seg.get("tailUuid"), str):
        parents = {
            str(r.obj["uuid"]): r.obj.get("parentUuid")
            for r in records if isinstance(r.obj.get("uuid"), str)
        }
        seen: list[str] = []
        cur: Any = seg["tailUuid"]
        while isinstance(cur, str) and cur in parents and cur not in seen:
            seen.append(cur)
            if cur == seg.get("headUuid"):
                return set(seen)
            cur = parents[cur]
    listed = meta.get("preservedMessages")
    uuids = listed.get("uuids") if isinstance(listed, dict) else None
    return {u for u in uuids if isinstance(u, str)} if isinstance(uuids, list) else set()


class _Builder(StepBuilder):
    """Cuts the live lines into steps: a prompt opens the next step, results join their call's.

    One API response is written as several lines sharing ``message.id`` (its tool results may
    come in between), so a new response key, not a finished call, opens a step.
    """

    stamp_empty = True

    def __init__(self) -> None:
        super().__init__()
        self.cur_key: str | None = None

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
        self._assistant(obj, _message(obj), raw, ts)

    def _user(self, obj: dict[str, Any], raw: RawLine, ts: Any) -> None:
        results = _tool_results(obj)
        if results:
            self.results(
                raw, ts, [_to_result(b) for b in results],
                call_id=str(results[0].get("tool_use_id")),
            )
            return
        text = _content_text(_message(obj).get("content"))
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
    """The session of ``records``: skeletons (``_skeleton``) of ``source``'s lines, or whole
    objects of lines built in memory (``source`` None)."""
    live, abandoned = live_records(records)
    builder = _Builder()
    branch = cwd = None
    for rec, obj in _whole(live, source):
        builder.add(obj, rec.raw(source))
        if isinstance(obj.get("gitBranch"), str):
            branch = obj["gitBranch"]
        if isinstance(obj.get("cwd"), str):
            cwd = obj["cwd"]
    steps = builder.finish()
    preserved = _mark_preserved(records, live, steps, builder.compactions)
    first = next((r.obj for r in records if r.obj.get("sessionId")), {})
    timestamps = [r.obj["timestamp"] for r in records if isinstance(r.obj.get("timestamp"), str)]
    model = next((s.model for s in reversed(steps) if s.model and s.model != "<synthetic>"), None)
    return Session(
        format="claude-code",
        session_id=first.get("sessionId") if isinstance(first.get("sessionId"), str) else None,
        path=str(path) if path else None,
        cwd=cwd,
        git_branch=branch,
        steps=steps,
        compactions=builder.compactions,
        malformed_lines=malformed,
        started_at=min(timestamps) if timestamps else None,
        ended_at=max(timestamps) if timestamps else None,
        model=model,
        abandoned_lines=abandoned,
        agent_id=agent_id,
        preserved=preserved,
    )


def _mark_preserved(
    records: list[Record], live: list[Record], steps: list[Step], compactions: list[Compaction]
) -> dict[int, list[int]]:
    """Steps each compaction kept verbatim (preserved segment); flag those of the last one,
    which are in the live view."""
    boundaries = [
        r for r in live
        if r.obj.get("type") == "system" and r.obj.get("subtype") == "compact_boundary"
    ]
    out: dict[int, list[int]] = {}
    for rec, comp in zip(boundaries, compactions, strict=False):
        keep = preserved_uuids(records, rec.obj)
        if not keep:  # most boundaries keep nothing: no pass over every line and step for them
            continue
        offsets = {r.offset for r in live if r.obj.get("uuid") in keep}
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


def load(path: Path, *, include_subagents: bool = True) -> Session:
    source = SourceFile(path)
    stats = read_records(path, skeleton)
    require_records(path, stats, "Claude Code")
    all_side = _sidechain_file(stats.records)
    session = build_session(
        stats.records, path=path, malformed=stats.malformed,
        agent_id=_agent_id(stats.records) if all_side else None, source=source,
    )
    if not include_subagents:
        return session
    # Older Claude Code versions wrote subagent lines inline, flagged isSidechain.
    if not all_side:
        inline: dict[str, list[Record]] = {}
        for r in stats.records:
            if r.obj.get("isSidechain"):
                inline.setdefault(str(r.obj.get("agentId") or "sidechain"), []).append(r)
        for agent, recs in inline.items():
            session.subagents.append(
                build_session(recs, path=path, malformed=0, agent_id=agent, source=source)
            )
    for sub in subagent_files(path):
        try:
            session.subagents.append(load(sub, include_subagents=False))
        except ContextforkError:  # one broken subagent file must not hide the session
            session.malformed_lines += 1
    return session


def _sidechain_file(records: list[Record]) -> bool:
    """A subagent's own file: every conversation line is a sidechain. Claude Code 2.1.328 also
    writes ``api-request-*`` lines without ``isSidechain`` there (seen in tests/e2e)."""
    return not any(
        not r.obj.get("isSidechain") and r.obj.get("type") in ("user", "assistant") for r in records
    )


def _agent_id(records: list[Record]) -> str | None:
    for r in records:
        a = r.obj.get("agentId")
        if isinstance(a, str):
            return a
    return None
