"""The context footprint a hook can afford to compute, and the once-per-crossing warning state.

The prompt hook runs before every prompt, so it cannot parse a whole multi-megabyte transcript
with pydantic. It reads only the file's tail: the last main-chain assistant line carries the
usage the harness recorded for the latest model call (input + cache creation + cache read is
what the window holds), and a compact boundary after it means the window was just emptied.
Stdlib only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

from contextfork import layout
from contextfork.errors import ContextforkError
from contextfork.inputfile import open_regular

TAIL_BYTES = 512 * 1024
DEFAULT_WARNING = 50_000
DEFAULT_FORK = 80_000
LEVELS = ("ok", "warning", "fork")


def _usage_tokens(usage: Any) -> int | None:
    if not isinstance(usage, dict):
        return None
    total = 0
    for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        v = usage.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            total += v
    return total


def _codex_tokens(obj: dict[str, Any]) -> int | None:
    payload = obj.get("payload")
    if not isinstance(payload, dict) or payload.get("type") != "token_count":
        return None
    info = payload.get("info")
    last = info.get("last_token_usage") if isinstance(info, dict) else None
    if isinstance(last, dict) and isinstance(last.get("input_tokens"), int):
        return int(last["input_tokens"])
    return None


def recorded_footprint(transcript: Path, tail_bytes: int = TAIL_BYTES) -> int | None:
    """Tokens in the window at the latest recorded model call, None when nothing is recorded."""
    try:
        with open_regular(transcript, "transcript") as fh:  # a FIFO must not block the hook
            size = os.fstat(fh.fileno()).st_size
            fh.seek(max(0, size - tail_bytes))
            chunk = fh.read()
    except (OSError, ContextforkError):
        return None
    lines = chunk.split(b"\n")
    if size > tail_bytes:
        lines = lines[1:]  # the first piece is probably a partial line
    for raw in reversed(lines):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            continue  # a line still being written, one larger than the tail, or too deep
        if not isinstance(obj, dict):
            continue
        if obj.get("type") == "system" and obj.get("subtype") == "compact_boundary":
            return 0
        if isinstance(obj.get("forkedFrom"), dict):
            return None  # a fork's copied lines: that usage was recorded for the original
        if obj.get("type") == "assistant" and not obj.get("isSidechain"):
            msg = obj.get("message")
            tokens = _usage_tokens(msg.get("usage") if isinstance(msg, dict) else None)
            if tokens:
                return tokens
        codex = _codex_tokens(obj)
        if codex is not None:
            return codex
    return None


class Thresholds(NamedTuple):  # not a dataclass: that import costs every hook ~5-20 ms
    warning: int = DEFAULT_WARNING
    fork: int = DEFAULT_FORK

    def level(self, tokens: int) -> str:
        if tokens >= self.fork:
            return "fork"
        if tokens >= self.warning:
            return "warning"
        return "ok"


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def load_thresholds(root: Path) -> Thresholds:
    """Token thresholds of the repo's policy (``tokens.warning`` / ``tokens.fork``).

    The telemetry area owns the policy; its lenient stdlib reader falls back to the IPSF
    defaults on a broken file, which is the right behaviour in front of a prompt too.
    """
    from contextfork.telemetry.policy import read_policy_lenient  # lazy: hot path

    tokens: Any = read_policy_lenient(root).get("tokens")
    if not isinstance(tokens, dict):
        return Thresholds()
    warning = _int(tokens.get("warning")) or DEFAULT_WARNING
    fork = _int(tokens.get("fork")) or DEFAULT_FORK
    return Thresholds(warning, max(fork, warning))



def crossing(root: Path, session_id: str, tokens: int, th: Thresholds) -> str | None:
    """The level just crossed upward (warn once), or None. Dropping below re-arms the warning."""
    path = layout.footprint_file(root, session_id)  # a hostile id is a UsageError
    try:
        state = json.loads(path.read_bytes())
        if not isinstance(state, dict):
            state = {}
    except (OSError, ValueError):
        state = {}
    last = state.get("warned_level", "ok")
    last_rank = LEVELS.index(last) if last in LEVELS else 0
    level = th.level(tokens)
    rank = LEVELS.index(level)
    if rank != last_rank:
        from contextfork import (
            atomic,  # lazy: hot path (only on a crossing: tempfile/shutil stay off the path)
        )

        layout.ensure_state_dir(root)
        atomic.write_json(path, {"session_id": session_id, "warned_level": level, "tokens": tokens})
    return level if rank > last_rank else None


def warning_text(level: str, tokens: int, th: Thresholds) -> str:
    k = f"{tokens / 1000:.1f}k"
    if level == "fork":
        return (
            f"contextfork: the context holds {k} tokens, past the fork threshold "
            f"({th.fork // 1000}k). Wrap up the current step, then run `contextfork fork` "
            "to continue in a folded session (nothing is lost)."
        )
    return (
        f"contextfork: the context holds {k} tokens, past the warning threshold "
        f"({th.warning // 1000}k). Plan to reach a milestone soon."
    )
