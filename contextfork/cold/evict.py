"""The eviction log and the per-turn hydration state.

Hydrated nodes live for one turn: the next scan evicts them (reason ``turn_end``), and
``fold evict STEP`` evicts exactly one step now (reason ``explicit``). Eviction never touches
the cold node: the bytes stay in the store and can be hydrated again. Every eviction is logged.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from contextfork.atomic import dump_json_bytes, write_bytes
from contextfork.cold.layout import StoreLayout
from contextfork.errors import IntegrityError

LOG_VERSION = 1
STATE_VERSION = 1


def _load(path: Any, default: dict[str, Any]) -> dict[str, Any]:
    if path.is_symlink():
        raise IntegrityError(f"{path} is a symlink", hint="store files must be plain files")
    if not path.exists():
        return default
    try:
        data = json.loads(path.read_bytes())
    except (OSError, json.JSONDecodeError) as err:
        raise IntegrityError(f"{path.name}: unreadable ({err})", hint="run `contextfork fold validate`") from err
    if not isinstance(data, dict):
        raise IntegrityError(f"{path.name}: not a JSON object")
    return data


def load_turn(layout: StoreLayout) -> dict[str, Any]:
    return _load(
        layout.turn_state,
        {"state_version": STATE_VERSION, "session_id": layout.session_id, "turn": 0, "calls": 0,
         "tokens_used": 0, "hydrated": []},
    )


def save_turn(layout: StoreLayout, state: dict[str, Any]) -> None:
    write_bytes(layout.turn_state, dump_json_bytes(state))


def load_log(layout: StoreLayout) -> dict[str, Any]:
    return _load(
        layout.eviction_log,
        {"log_version": LOG_VERSION, "session_id": layout.session_id, "entries": []},
    )


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def log_evictions(layout: StoreLayout, turn: int, items: list[dict[str, Any]], reason: str) -> list[dict[str, Any]]:
    """Append one entry per evicted step (caller holds the store lock)."""
    if not items:
        return []
    log = load_log(layout)
    entries: list[dict[str, Any]] = log["entries"]
    seq = len(entries)
    new = []
    for item in items:
        seq += 1
        new.append({"seq": seq, "turn": turn, "step_id": int(item["step_id"]), "reason": reason,
                    "tokens": int(item.get("tokens", 0)), "at": _now()})
    entries.extend(new)
    write_bytes(layout.eviction_log, dump_json_bytes(log))
    return new


def begin_turn(layout: StoreLayout) -> dict[str, Any]:
    """Evict everything hydrated last turn, then open a fresh turn with a full budget."""
    state = load_turn(layout)
    log_evictions(layout, int(state["turn"]), list(state["hydrated"]), "turn_end")
    state.update(turn=int(state["turn"]) + 1, calls=0, tokens_used=0, hydrated=[])
    return state


def evict_one(layout: StoreLayout, step_id: int) -> dict[str, Any]:
    """Evict exactly one hydrated step; others in the turn are untouched."""
    state = load_turn(layout)
    hydrated: list[dict[str, Any]] = state["hydrated"]
    keep = [h for h in hydrated if int(h["step_id"]) != step_id]
    gone = [h for h in hydrated if int(h["step_id"]) == step_id]
    if not gone:
        return {"step_id": step_id, "status": "not_hydrated", "turn": state["turn"],
                "still_hydrated": [int(h["step_id"]) for h in hydrated]}
    entries = log_evictions(layout, int(state["turn"]), gone, "explicit")
    state["hydrated"] = keep
    save_turn(layout, state)
    return {"step_id": step_id, "status": "evicted", "turn": state["turn"], "logged": entries,
            "still_hydrated": [int(h["step_id"]) for h in keep]}
