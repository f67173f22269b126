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

from contextfork.transcript._jsonl import Record

_LEAF_TYPES = frozenset({"user", "assistant", "system"})
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


def skeleton(obj: dict[str, Any]) -> dict[str, Any]:
    """What the walk reads of one line (its readers only ``get``: a ``None`` or ``False`` is
    left out, and five keys or fewer make a smaller dict)."""
    out = {k: v for k in _STRUCTURE if (v := obj.get(k)) is not None and v is not False}
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


def message_of(obj: dict[str, Any]) -> dict[str, Any]:
    msg = obj.get("message")
    return msg if isinstance(msg, dict) else {}


def tool_results(obj: dict[str, Any]) -> list[dict[str, Any]]:
    content = message_of(obj).get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def live_records(records: list[Record]) -> tuple[list[Record], int]:
    """The lines of the live conversation in file order, and how many were abandoned.

    Walk ``parentUuid`` (or ``logicalParentUuid`` across a compaction) back from the newest
    leaf; then add the off-chain pieces of the same responses (same ``message.id``) and the
    results of their tool calls, which Claude Code hangs off sibling branches.
    """
    main = list(records) if sidechain_file(records) else [r for r in records if not r.obj.get("isSidechain")]
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
        message_of(main[i].obj).get("id") for i in chain if main[i].obj.get("type") == "assistant"
    }
    msg_ids.discard(None)
    included = set(chain)
    for i, r in enumerate(main):
        if i not in included and r.obj.get("type") == "assistant" and message_of(r.obj).get("id") in msg_ids:
            included.add(i)
    call_ids: set[str] = set()
    for i in included:
        if main[i].obj.get("type") == "assistant":
            content = message_of(main[i].obj).get("content")
            if isinstance(content, list):
                call_ids.update(
                    str(b.get("id")) for b in content
                    if isinstance(b, dict) and b.get("type") == "tool_use"
                )
    for i, r in enumerate(main):
        if i in included or r.obj.get("type") != "user":
            continue
        results = tool_results(r.obj)
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
