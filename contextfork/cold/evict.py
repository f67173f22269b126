"""The eviction log and the per-turn page-in state.

Paged-in nodes live for one turn: the next page-in by prompt evicts them (reason
``turn_end``), and ``fold evict STEP`` evicts exactly one step now (reason ``explicit``).
Eviction never touches the cold node: the bytes stay in the store and can be paged in again.
Every eviction is logged.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contextfork.atomic import dump_json_bytes, write_bytes
from contextfork.cold.layout import StoreLayout
from contextfork.errors import IntegrityError

LOG_VERSION = 1
STATE_VERSION = 1


TURN_HINT = "delete it to start a fresh turn (the cold nodes stay)"
LOG_HINT = "restore it, or delete it to start a new log (the cold nodes stay)"


def _load(path: Path, default: dict[str, Any], hint: str) -> dict[str, Any]:
    """A store state file as a JSON object; any damage is one ``IntegrityError`` line."""
    from contextfork.inputfile import read_state_file

    where = f"{path.name} of cold store {path.parent.name!r}"
    raw = read_state_file(path, where)
    if raw is None:
        return default
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as err:  # not UTF-8, not JSON, nested past the stack
        reason = "nested too deeply" if isinstance(err, RecursionError) else str(err)[:120]
        raise IntegrityError(f"{where} is not valid JSON ({reason})", hint=hint) from None
    if not isinstance(data, dict):
        raise IntegrityError(f"{where} is not a JSON object", hint=hint)
    return data


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def turn_problems(state: dict[str, Any], session_id: str) -> list[str]:
    """Why a turn state cannot be used (empty when it can): every field is read as a number or a
    list by page-in and evict, and written back into the eviction log."""
    out = []
    if state.get("state_version") != STATE_VERSION:
        out.append(f"state_version is {state.get('state_version')!r}, expected {STATE_VERSION}")
    if state.get("session_id") != session_id:
        out.append(f"session_id is {state.get('session_id')!r}, expected {session_id!r}")
    for key in ("turn", "calls", "tokens_used"):
        if not _count(state.get(key)):
            out.append(f"{key} must be a non-negative integer (got {state.get(key, 'nothing')!r})")
    paged = state.get("hydrated")  # the file's key for the paged-in steps (and the output's)
    if not isinstance(paged, list):
        out.append(f"hydrated must be a list (got {type(paged).__name__})")
        return out
    for i, h in enumerate(paged):
        ok = (isinstance(h, dict) and _count(h.get("step_id")) and _count(h.get("tokens"))
              and isinstance(h.get("mode"), str) and _count(h.get("call")))  # fmt: skip
        if not ok:
            out.append(f"hydrated[{i}] must be {{step_id, tokens, call: integers, mode: text}}")
            break
    return out


def load_turn(layout: StoreLayout) -> dict[str, Any]:
    """The current turn's state, checked (a damaged file is exit 3, never a wrong budget)."""
    state = _load(
        layout.turn_state,
        {"state_version": STATE_VERSION, "session_id": layout.session_id, "turn": 0, "calls": 0,
         "tokens_used": 0, "hydrated": []},
        TURN_HINT,
    )
    problems = turn_problems(state, layout.session_id)
    if problems:
        raise IntegrityError(f"{layout.turn_state.name} of cold store {layout.session_id!r}: "
                             f"{problems[0]}", hint=TURN_HINT)  # fmt: skip
    return state


def save_turn(layout: StoreLayout, state: dict[str, Any]) -> None:
    write_bytes(layout.turn_state, dump_json_bytes(state))


def load_log(layout: StoreLayout) -> dict[str, Any]:
    """The eviction log; appended to, so its ``entries`` must be a list of objects."""
    log = _load(
        layout.eviction_log,
        {"log_version": LOG_VERSION, "session_id": layout.session_id, "entries": []},
        LOG_HINT,
    )
    entries = log.get("entries")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise IntegrityError(f"{layout.eviction_log.name} of cold store {layout.session_id!r}: "
                             "entries must be a list of objects", hint=LOG_HINT)  # fmt: skip
    return log


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
    """Evict everything paged in last turn, then open a fresh turn with a full budget."""
    state = load_turn(layout)
    log_evictions(layout, int(state["turn"]), list(state["hydrated"]), "turn_end")
    state.update(turn=int(state["turn"]) + 1, calls=0, tokens_used=0, hydrated=[])
    return state


def evict_one(layout: StoreLayout, step_id: int) -> dict[str, Any]:
    """Evict exactly one paged-in step; others in the turn are untouched."""
    state = load_turn(layout)
    paged: list[dict[str, Any]] = state["hydrated"]
    keep = [h for h in paged if int(h["step_id"]) != step_id]
    gone = [h for h in paged if int(h["step_id"]) == step_id]
    if not gone:
        return {"step_id": step_id, "status": "not_hydrated", "turn": state["turn"],
                "still_hydrated": [int(h["step_id"]) for h in paged]}
    entries = log_evictions(layout, int(state["turn"]), gone, "explicit")
    state["hydrated"] = keep
    save_turn(layout, state)
    return {"step_id": step_id, "status": "evicted", "turn": state["turn"], "logged": entries,
            "still_hydrated": [int(h["step_id"]) for h in keep]}
