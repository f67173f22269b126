"""A subagent as one folded, restorable unit, for ``fork`` and ``render``: the parent's agent
call → the subagent's whole transcript (``….agent-<id>.unit``) and its result
(``….agent-<id>.result``), both folded at SubagentStop (``slice.hooks``).

A unit is offered only after its nodes are read back and re-verified from the cold store, and
its result is named only when the bytes the parent's call got back are that node's bytes: a
stub promises nothing the store cannot give back exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextfork import layout
from contextfork.errors import ContextforkError
from contextfork.hashing import sha256_text
from contextfork.slice.viewdata import subagents_by_call


def _node_sha(root: Path, session: Any, step: Any) -> str | None:
    """The payload SHA-256 of a verified node, or None (missing, unreadable, tampered)."""
    from contextfork.cold.layout import StoreLayout, check_session_id
    from contextfork.cold.store import read_node

    if not isinstance(session, str) or not isinstance(step, int):
        return None
    try:
        node = read_node(StoreLayout(layout.cold_root(root), check_session_id(session)), step)
    except ContextforkError:
        return None
    return str(node["payload_sha256"])


def units_by_call(session: Any, root: Path | None) -> dict[str, dict[str, Any]]:
    """Tool-call id → the one subagent it spawned whose unit verifies (the newest when
    several): agent id and type, the unit's store and step, the result's (or None)."""
    if root is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for call, subs in subagents_by_call(session, root).items():
        for sub in reversed(subs):
            if _node_sha(root, sub.get("unit_session"), sub.get("unit_step")) is None:
                continue
            result = None
            if _node_sha(root, sub.get("result_session"), sub.get("result_step")) == sub.get("result_sha256"):
                result = {"session": sub["result_session"], "step": sub["result_step"],
                          "sha256": sub["result_sha256"], "chars": sub.get("result_chars")}  # fmt: skip
            out[call] = {"agent_id": sub["agent_id"], "agent_type": sub.get("agent_type"),
                         "unit_session": sub["unit_session"], "unit_step": sub["unit_step"],
                         "result": result}  # fmt: skip
            break
    return out


def stub_unit(unit: dict[str, Any] | None, content: Any) -> dict[str, Any] | None:
    """What a stub of this tool result may say of its subagent: the unit, and the result fold
    when the call's first text (joined text: its start) is byte-for-byte the folded result."""
    if unit is None:
        return None
    result = unit.get("result")
    first = None
    if isinstance(content, list):
        first = next((i.get("text") for i in content
                      if isinstance(i, dict) and isinstance(i.get("text"), str)), None)  # fmt: skip
    elif isinstance(content, str) and result is not None and isinstance(result.get("chars"), int):
        first = content[: result["chars"]]
    same = isinstance(first, str) and result is not None and sha256_text(first) == result["sha256"]
    return {**unit, "result": result if same else None}
