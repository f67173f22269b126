"""The subagents of a session for the inspector: under which call each was spawned, its slice.

A subagent is tied to the parent's call by what Claude Code records: ``agent-<id>.meta.json``
beside its transcript names the ``toolUseId`` (2.1.328), and the call's launch result names the
agent (``agentId: <id>``). What it was given and where it was folded come from the SubagentStop /
SubagentStart record (``layout.subagent_record``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from contextfork import layout
from contextfork.errors import ContextforkError

_AGENT_IN_RESULT = re.compile(r"agentId: ([A-Za-z0-9_-]{1,64})")


def _records(root: Path | None, session_id: str) -> dict[str, dict[str, Any]]:
    if root is None:
        return {}
    try:
        folder = layout.subagents_dir(root, session_id)
    except ContextforkError:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() and not folder.is_symlink() else []:
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("agent_id"), str):
            out[data["agent_id"]] = data
    return out


def _meta_tool_use(transcript: Path | None, agent_id: str) -> str | None:
    if transcript is None:
        return None
    meta = transcript.with_suffix("") / "subagents" / f"agent-{agent_id}.meta.json"
    try:
        data = json.loads(meta.read_bytes())
    except (OSError, ValueError):
        return None
    tid = data.get("toolUseId") if isinstance(data, dict) else None
    return tid if isinstance(tid, str) else None


def subagents_by_call(session: Any, root: Path | None) -> dict[str, list[dict[str, Any]]]:
    """Tool-call id → the subagents it spawned (id, type, role, slice, fold, steps)."""
    sid = getattr(session, "session_id", None)
    if not sid:
        return {}
    transcript = Path(session.path) if getattr(session, "path", None) else None
    records = _records(root, sid)
    loaded = {s.agent_id: s for s in getattr(session, "subagents", []) if getattr(s, "agent_id", None)}
    launched: dict[str, str] = {}  # agent id → call id, from the launch results
    for step in session.steps:
        for r in step.tool_results:
            for aid in _AGENT_IN_RESULT.findall(r.content[:4000]):
                launched.setdefault(aid, r.call_id)
    out: dict[str, list[dict[str, Any]]] = {}
    for aid in sorted(set(records) | set(loaded)):
        call = _meta_tool_use(transcript, aid) or launched.get(aid)
        if call is None:
            continue
        rec = records.get(aid, {})
        sub = loaded.get(aid)
        sl_raw, unit_raw, res_raw = rec.get("slice"), rec.get("unit"), rec.get("result")
        sl: dict[str, Any] = sl_raw if isinstance(sl_raw, dict) else {}
        unit: dict[str, Any] = unit_raw if isinstance(unit_raw, dict) else {}
        result: dict[str, Any] = res_raw if isinstance(res_raw, dict) else {}
        out.setdefault(call, []).append({
            "agent_id": aid, "agent_type": rec.get("agent_type"), "role": rec.get("role"),
            "slice_chars": sl.get("chars"), "slice_sha256": sl.get("sha256"),
            "slice_labels": [b.get("label") for b in sl.get("blocks") or [] if isinstance(b, dict)],
            "slice_left": len(sl.get("left") or []),
            "store_session": rec.get("store_session"), "unit_session": unit.get("session"),
            "unit_step": unit.get("step"), "result_session": result.get("session"),
            "result_step": result.get("step"), "result_sha256": result.get("sha256"),
            "result_chars": result.get("chars"), "steps": len(sub.steps) if sub is not None else rec.get("steps"),
            "calls": [c.name for s in (sub.steps if sub is not None else []) for c in s.tool_calls][:40],
        })  # fmt: skip
    return out
