"""The lines of a Claude Code fork, built from the original's live view (pure: writes nothing).

A fork carries what the harness would send next, nothing more: after a compaction that is the
boundary, the summary and what follows, and the segment the harness kept verbatim across it
(``compactMetadata.preservedSegment``); the lines before it stay in the original (and in its
cold store), where the fork's stubs and page-in find them. Every line gets a new uuid with its
parent links remapped (a parent left behind becomes the previous line written), ``forkedFrom``
naming the original line, and each large tool result a stub that names its step and SHA-256 —
only once its exact text was found, hash-equal, in the verified cold node of its step.
``check_fork`` reads the written fork back and compares it with the same live lines.
"""

from __future__ import annotations

import copy
import json
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextfork import layout
from contextfork.envelope import Problem
from contextfork.forkstub import STUB_PREFIX, stub_text
from contextfork.harness.forkchain import rename_preserved
from contextfork.hashing import sha256_text

if TYPE_CHECKING:
    from contextfork.cold.decisions import Decisions
    from contextfork.transcript._jsonl import Record
    from contextfork.transcript.model import Session
    from contextfork.transcript.source import RawLine, SourceFile

STUB_MIN_CHARS = 2_000


def result_text(content: Any) -> str:
    """The text of a tool_result's content (string, or text items joined by newlines)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if (
                isinstance(item, dict)
                and item.get("type") == "text"
                and isinstance(item.get("text"), str)
            ):
                parts.append(item["text"])
            elif isinstance(item, str):
                parts.append(item)
        return "\n".join(parts)
    return ""


def _has_binary(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(i, dict) and i.get("type") not in ("text", None) for i in content
    )


def _results_in_node(node: dict[str, Any]) -> dict[str, str]:
    """tool_use_id → sha256 of its result text, from a verified cold node's payload lines."""
    out: dict[str, str] = {}
    if node.get("content_encoding") != "utf-8":
        return out
    for line in str(node["content"]).splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        msg = obj.get("message") if isinstance(obj, dict) else None
        content = msg.get("content") if isinstance(msg, dict) else None
        if not isinstance(content, list):
            continue
        for b in content:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                out[str(b.get("tool_use_id"))] = sha256_text(result_text(b.get("content")))
    return out


def is_stub_candidate(text: str, min_chars: int) -> bool:
    """Large enough to fold out, and not already a stub (a fork of a fork keeps its stubs)."""
    return len(text) >= min_chars and not text.startswith(STUB_PREFIX)


@dataclass
class ForkPlan:
    new_id: str
    lines: list[str] = field(default_factory=list)
    stubs: list[dict[str, Any]] = field(default_factory=list)
    kept_large: list[dict[str, Any]] = field(default_factory=list)
    # the original lines the fork carries, as they were (spans of the original, or held): what
    # it must read as
    source: list[Record] = field(default_factory=list)
    original: SourceFile | None = None  # the file the carried spans are read back from
    left_out: int = 0  # lines of the live chain before the last compaction, not carried


def _carry(plan: ForkPlan, raw: RawLine, skel: dict[str, Any]) -> None:
    """Note a carried line: its skeleton and its span in the original, or (a line held in
    memory) its text and whole object."""
    from contextfork.transcript._jsonl import Record

    n = len(plan.source)
    if raw.source is None:
        plan.source.append(Record.held(n, raw.offset, raw.text, json.loads(raw.text)))
        return
    plan.original = raw.source
    plan.source.append(Record(n, raw.offset, raw.length, raw.digest, skel))


_LINK_KEYS = ("type", "subtype", "uuid", "parentUuid")


def _links(obj: dict[str, Any]) -> dict[str, Any]:
    """What ``live_offsets`` and the renaming read of a line, as its skeleton has it
    (``claude_tree.skeleton``: a ``None`` or ``False`` left out): a fork of a 55 MB session held
    every carried line's whole skeleton at its peak (issue 27)."""
    out = {k: v for k in _LINK_KEYS if (v := obj.get(k)) is not None and v is not False}
    for k in ("type", "subtype"):
        v = out.get(k)
        if type(v) is str:
            out[k] = sys.intern(v)
    if out.get("type") == "system" and "compactMetadata" in obj:
        out["compactMetadata"] = obj["compactMetadata"]
    return out


def live_offsets(objs: dict[int, dict[str, Any]]) -> set[int]:
    """Offsets of the lines the harness sends next: from the last compaction boundary on, plus
    the segment it kept verbatim across it; every line when there was no compaction. ``objs``:
    whole lines or their skeletons (``claude_tree.skeleton``)."""
    from contextfork.transcript._jsonl import Record
    from contextfork.transcript.claude_tree import preserved_uuids

    cuts = [o for o, obj in objs.items()
            if obj.get("type") == "system" and obj.get("subtype") == "compact_boundary"]
    if not cuts:
        return set(objs)
    cut = max(cuts)
    records = [Record.held(i, o, "", obj) for i, (o, obj) in enumerate(sorted(objs.items()))]
    kept = preserved_uuids(records, objs[cut])
    return {o for o, obj in objs.items() if o >= cut or obj.get("uuid") in kept}


def build_fork(
    session: Any, repo: Path, orig_id: str, new_id: str, *, min_chars: int = STUB_MIN_CHARS,
    decisions: Decisions | None = None, units: dict[str, dict[str, Any]] | None = None,
) -> ForkPlan:
    """The fork's lines (pure: reads the cold store, writes nothing). A step the agent pinned
    or expanded (``contextfork context pin``) keeps its results raw in the fork. A subagent's
    result names the subagent's own folds too (one unit: ``slice.units``; ``units``: taken
    already, while the session's steps held their blocks). Reads each step's raw lines and
    identity, not its blocks."""
    from contextfork.cold.keyed import known_ids
    from contextfork.cold.layout import StoreLayout, check_session_id
    from contextfork.cold.store import read_node
    from contextfork.slice.units import stub_unit, units_by_call
    from contextfork.transcript.claude_tree import skeleton
    from contextfork.transcript.source import read_raw

    if units is None:
        units = units_by_call(session, repo)
    store = StoreLayout(layout.cold_root(repo), check_session_id(orig_id))
    cold_ids = known_ids(store, session.steps)  # position -> the step's cold id (its key's)
    raw: dict[int, tuple[RawLine, int]] = {}
    held: set[int] = set()  # line offsets of steps the agent holds raw
    # line offset -> the agent's brief, on the first step of its span only (as the renderer
    # shows it once): repeated on every stub it could outgrow the results it stands for
    briefs: dict[int, str] = {}
    position: dict[int, int] = {}  # line offset -> the step's transcript position
    for step in session.steps:
        brief = decisions.briefs.get(step.identity) if decisions is not None else None
        for r in step.raw:
            position.setdefault(r.offset, step.index)
            raw.setdefault(r.offset, (r, cold_ids.get(step.index, step.index)))
            if decisions is not None and decisions.held_raw(step.identity):
                held.add(r.offset)
            if brief is not None:
                briefs.setdefault(r.offset, brief.text)
    # The lines are read twice, never held whole (issue 27): what finds the live lines and every
    # uuid to rename first (``_links``: a few keys of each line), then each live line again as
    # it is rewritten, its skeleton taken then.
    order = sorted(raw)
    links = {o: _links(json.loads(data))
             for o, data in zip(order, read_raw(raw[o][0] for o in order), strict=True)}
    live = live_offsets(links)
    # Every new uuid up front: a compaction boundary names its summary line, which comes after it.
    renamed = {
        str(o["uuid"]): str(uuid.uuid4()) for o in links.values() if isinstance(o.get("uuid"), str)
    }
    del links
    verified: dict[int, dict[str, str]] = {}
    uuids: dict[str, str] = {}
    plan = ForkPlan(new_id, left_out=len(raw) - len(live))
    last_new: str | None = None
    in_fork = sorted(live)
    for offset, data in zip(in_fork, read_raw(raw[o][0] for o in in_fork), strict=True):
        step_index = raw[offset][1]
        obj = json.loads(data)
        skel = skeleton(obj)  # as the original has it: the renaming below changes ``obj``
        if "compactMetadata" in skel:
            skel["compactMetadata"] = copy.deepcopy(skel["compactMetadata"])
        _carry(plan, raw[offset][0], skel)
        old = obj.get("uuid")
        new_uuid = renamed.get(old) if isinstance(old, str) else None
        if isinstance(old, str) and new_uuid:
            uuids[old] = new_uuid
        rename_preserved(obj, renamed)
        for key in ("parentUuid", "logicalParentUuid"):
            if isinstance(obj.get(key), str):
                mapped = uuids.get(obj[key])
                if key == "parentUuid":
                    obj[key] = mapped or last_new  # a parent outside the live chain: previous line
                elif mapped:
                    obj[key] = mapped
                else:
                    del obj[key]
        if isinstance(obj.get("sourceToolAssistantUUID"), str):
            obj["sourceToolAssistantUUID"] = uuids.get(obj["sourceToolAssistantUUID"], last_new)
        if "sessionId" in obj:
            obj["sessionId"] = new_id
        if new_uuid:
            obj["uuid"] = new_uuid
            last_new = new_uuid
        obj["forkedFrom"] = (
            {"sessionId": orig_id, "messageUuid": old}
            if isinstance(old, str)
            else {"sessionId": orig_id}
        )
        msg = obj.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        if obj.get("type") == "user" and isinstance(content, list):
            stubbed_here = False
            for b in content:
                if not (isinstance(b, dict) and b.get("type") == "tool_result"):
                    continue
                body = result_text(b.get("content"))
                if is_stub_candidate(body, min_chars) is False or _has_binary(b.get("content")):
                    continue
                if offset in held:
                    plan.kept_large.append({"step": step_index, "call_id": str(b.get("tool_use_id")),
                                            "chars": len(body), "reason": "held raw by the agent (pin or expand)"})
                    continue
                sha = sha256_text(body)
                if step_index not in verified:
                    verified[step_index] = _results_in_node(read_node(store, step_index))
                call = str(b.get("tool_use_id"))
                if verified[step_index].get(call) != sha:
                    plan.kept_large.append(
                        {
                            "step": step_index,
                            "call_id": call,
                            "chars": len(body),
                            "reason": "not byte-exact in the cold store (redacted?)",
                        }
                    )
                    continue
                unit = stub_unit(units.get(call), b.get("content"))
                b["content"] = stub_text(step_index, body, sha, orig_id, briefs.pop(offset, None),
                                         unit)
                plan.stubs.append(
                    {"step": step_index, "call_id": call, "chars": len(body), "sha256": sha,
                     "brief": offset in briefs, "stub_chars": len(b["content"]),
                     "position": position.get(offset), "subagent": unit}
                )
                stubbed_here = True
            if stubbed_here:
                obj.pop("toolUseResult", None)  # the UI copy of the same bytes
        plan.lines.append(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
    return plan


def _conversation(session: Any) -> list[tuple[Any, ...]]:
    """What must survive a fork: per step, texts, calls and which results exist (not their size)."""
    out = []
    for s in session.steps:
        texts = tuple(b.text for b in s.blocks if b.type == "text")
        calls = tuple((c.id, c.name) for c in s.tool_calls)
        results = tuple(r.call_id for r in s.tool_results)
        out.append((texts, calls, results))
    return out


def carried(plan: ForkPlan) -> Session:
    """The original's lines the fork carries, read as a session: what the fork must read as
    (its lines read back from the original, verified, one at a time)."""
    from contextfork.transcript.claude_code import build_session

    return build_session(plan.source, path=None, malformed=0, source=plan.original)


def check_fork(forked: Any, new_id: str, plan: ForkPlan) -> list[Problem]:
    original = carried(plan)
    problems: list[Problem] = []
    if forked.format != "claude-code" or forked.session_id != new_id:
        problems.append(
            Problem(
                "error",
                "fork_identity",
                f"fork reads back as {forked.format} "
                f"session {forked.session_id}, expected {new_id}",
            )
        )
    if _conversation(original) != _conversation(forked):
        problems.append(
            Problem(
                "error", "fork_incoherent", "the fork does not read back as the same conversation"
            )
        )
    uuids: set[str] = set()
    for line in plan.lines:
        obj = json.loads(line)
        parent = obj.get("parentUuid")
        if isinstance(parent, str) and parent not in uuids:
            problems.append(
                Problem(
                    "error", "fork_dangling_parent", f"parentUuid {parent} is not an earlier line"
                )
            )
            break
        if isinstance(obj.get("uuid"), str):
            uuids.add(obj["uuid"])
    def stubs(session: Any) -> int:
        return sum(
            1 for s in session.steps for r in s.tool_results if r.content.startswith(STUB_PREFIX)
        )

    stubbed = stubs(forked) - stubs(original)  # a fork of a fork already holds stubs
    if stubbed != len(plan.stubs):
        problems.append(
            Problem(
                "error", "fork_stub_count", f"{stubbed} stubs read back, {len(plan.stubs)} written"
            )
        )
    return problems


