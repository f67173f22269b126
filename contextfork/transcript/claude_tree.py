"""Which lines of a Claude Code transcript are the live conversation (``claude_code`` reads it).

The file is an append-only tree, not a list: every line names its ``parentUuid``. Rewinds leave
abandoned branches behind, compaction starts a new root (linked back by ``logicalParentUuid``),
parallel tool calls hang their results off different siblings, and one API response is written
as several lines sharing ``message.id``. So we walk back from the newest leaf, then pull in the
siblings that belong to the same responses. The walk reads only each line's skeleton.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from contextfork import livewalk
from contextfork.transcript._jsonl import MalformedLine, Record

_GONE: dict[str, Any] = {}  # the skeleton of a line whose steps are built from its bytes


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


#: Keys the walk compares and hashes: a line where one is neither a string nor null is not a
#: line Claude Code wrote (``MalformedLine``: counted and skipped, never a crash).
_STRINGS = ("type", "uuid", "parentUuid")  # what ccline.check asks of the fast path too


def skeleton(obj: dict[str, Any]) -> dict[str, Any]:
    """What the walk reads of one line (its readers only ``get``: a ``None`` or ``False`` is
    left out, and five keys or fewer make a smaller dict). Raises ``MalformedLine``."""
    for key in _STRINGS:
        v = obj.get(key)
        if v is not None and type(v) is not str:
            raise MalformedLine(f"{key} is not a string")
    out = {k: v for k in _STRUCTURE if (v := obj.get(k)) is not None and v is not False}
    for k in _REPEATED:
        v = out.get(k)
        if type(v) is str:
            out[k] = sys.intern(v)
    kind = out.get("type")
    msg = obj.get("message")
    if kind in _LINKS and isinstance(msg, dict):
        block_type, id_key = _LINKS[kind]
        if kind == "assistant" and msg.get("id") is not None and type(msg["id"]) is not str:
            raise MalformedLine("message.id is not a string")
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


def message_of(obj: dict[str, Any]) -> dict[str, Any]:
    msg = obj.get("message")
    return msg if isinstance(msg, dict) else {}


def tool_results(obj: dict[str, Any]) -> list[dict[str, Any]]:
    content = message_of(obj).get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


class _Node:
    """A skeleton's structure, as ``livewalk`` reads it."""

    __slots__ = ("kind", "parent", "parent_uuid", "uuid")

    def __init__(self, obj: dict[str, Any]) -> None:
        # strings or None (``skeleton`` refuses other lines; a line held in memory may not)
        self.kind, self.uuid, self.parent_uuid = (
            v if type(v) is str else None for v in (obj.get("type"), obj.get("uuid"), obj.get("parentUuid"))
        )
        parent = self.parent_uuid or obj.get("logicalParentUuid")
        self.parent = parent if isinstance(parent, str) else None


class _Nodes:
    """The skeletons as ``livewalk.Nodes``, each made when the walk asks (held for every line
    they would add ~1.6 MB to ``view`` of a 55 MB session)."""

    def __init__(self, main: list[Record]) -> None:
        self.main = main

    def __len__(self) -> int:
        return len(self.main)

    def __getitem__(self, i: int) -> _Node:
        return _Node(self.main[i].obj)


def live_records(records: list[Record]) -> tuple[list[Record], int]:
    """The lines of the live conversation in file order (``livewalk.live``), and how many
    were abandoned."""
    main = list(records) if sidechain_file(records) else [r for r in records if not r.obj.get("isSidechain")]

    def calls(i: int) -> list[str]:
        content = message_of(main[i].obj).get("content")
        return ([str(b.get("id")) for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
                if isinstance(content, list) else [])  # fmt: skip

    included = livewalk.live(
        _Nodes(main),
        boundary=lambda i: main[i].obj.get("subtype") == "compact_boundary",
        message_id=lambda i: mid if type(mid := message_of(main[i].obj).get("id")) is str else None,
        calls=calls,
        results=lambda i: [str(b.get("tool_use_id")) for b in tool_results(main[i].obj)],
    )
    live = set(included)
    abandoned = sum(
        1 for i, r in enumerate(main)
        if i not in live and r.obj.get("type") in ("user", "assistant")
    )
    return [main[i] for i in included], abandoned


def preserved_uuids(records: list[Record], boundary: dict[str, Any]) -> set[str]:
    """The uuids Claude Code keeps verbatim across ``boundary`` (2.1 ``preservedSegment``).

    Walk ``parentUuid`` from ``tailUuid`` back to ``headUuid`` as Claude Code does on resume;
    ``preservedMessages.uuids`` (an explicit list some versions also write) when the walk breaks.
    """
    meta = boundary.get("compactMetadata")
    if not isinstance(meta, dict):
        return set()
    seg = meta.get("preservedSegment")
    tail = seg.get("tailUuid") if isinstance(seg, dict) else None
    parents = {} if not isinstance(tail, str) else {
        str(r.obj["uuid"]): r.obj.get("parentUuid") for r in records if isinstance(r.obj.get("uuid"), str)
    }  # fmt: skip
    listed = meta.get("preservedMessages")
    return livewalk.preserved(parents, tail, seg.get("headUuid") if isinstance(seg, dict) else None,
                              listed.get("uuids") if isinstance(listed, dict) else None)  # fmt: skip


@dataclass
class Prepared:
    """What building a session needs of all its lines, taken before the steps are built so the
    skeletons of every line can go: the live lines, and the facts read off the others."""

    live: list[Record]
    abandoned: int
    session_id: str | None
    started_at: str | None
    ended_at: str | None
    # per compaction boundary of the live lines, in order: the offsets of the live lines it
    # kept verbatim (its preserved segment), empty when it kept none
    kept: list[set[int]]


def prepare(records: list[Record]) -> Prepared:
    live, abandoned = live_records(records)
    first = next((r.obj for r in records if r.obj.get("sessionId")), {})
    sid = first.get("sessionId")
    timestamps = [r.obj["timestamp"] for r in records if isinstance(r.obj.get("timestamp"), str)]
    kept: list[set[int]] = []
    for b in live:
        if b.obj.get("type") == "system" and b.obj.get("subtype") == "compact_boundary":
            keep = preserved_uuids(records, b.obj)
            # most boundaries keep nothing: no pass over every line for them
            kept.append({r.offset for r in live if r.obj.get("uuid") in keep} if keep else set())
    # a span is read back and parsed whole to build its step: its skeleton is no longer needed
    live = [r if r.text is not None else Record(r.lineno, r.offset, r.length, r.digest, _GONE)
            for r in live]  # fmt: skip
    return Prepared(
        live, abandoned, sid if isinstance(sid, str) else None,
        min(timestamps) if timestamps else None, max(timestamps) if timestamps else None, kept,
    )


def sidechain_file(records: list[Record]) -> bool:
    """A subagent's own file: every conversation line is a sidechain. Claude Code 2.1.328 also
    writes ``api-request-*`` lines without ``isSidechain`` there (seen in tests/e2e)."""
    return not any(
        not r.obj.get("isSidechain") and r.obj.get("type") in ("user", "assistant") for r in records
    )


def first_agent_id(records: list[Record]) -> str | None:
    for r in records:
        a = r.obj.get("agentId")
        if isinstance(a, str):
            return a
    return None
