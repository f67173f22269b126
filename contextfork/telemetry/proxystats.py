"""What the proxy really sent for a session, read back for ``status`` and the status line.

The proxy writes one file per conversation (``.contextfork/proxy/<store session>.json``,
``layout.proxy_stats``) at most once a second while it runs, off the request's path. The
reader is stdlib only (the status line runs it after every assistant message): a session's
figures are its main conversation plus its subagents' (``<session>-agent-*``), summed.

Figures: requests, how many were edited, passed through (by reason) or sent as they came; the
bytes of the conversation as the client sent it and as it went out; the usage the API
returned for what went out (input, cache reads and writes, output), and the last call's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from contextfork import layout

SUMMED = ("requests", "edited", "bytes_in", "bytes_out")


def _files(root: Path, session_id: str) -> list[Path]:
    try:
        main = layout.proxy_stats(root, session_id)
    except Exception:  # noqa: BLE001 - an unsafe state dir: no figures
        return []
    base = main.parent
    try:
        names = os.listdir(base)
    except OSError:
        return []
    return [base / n for n in sorted(names)
            if n == main.name or (n.startswith(f"{session_id}-") and n.endswith(".json"))]


def read(root: Path, session_id: str) -> dict[str, Any] | None:
    """The session's figures summed over its conversations (None: the proxy never saw it)."""
    total: dict[str, Any] = dict.fromkeys(SUMMED, 0)
    total.update(passed={}, usage={}, last_usage={}, conversations=0, updated=0.0)
    main_name = f"{session_id}.json"
    for path in _files(root, session_id):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        total["conversations"] += 1
        for k in SUMMED:
            v = data.get(k)
            total[k] += v if isinstance(v, int) and not isinstance(v, bool) else 0
        for reason, n in (data.get("passed") or {}).items():
            total["passed"][reason] = total["passed"].get(reason, 0) + int(n)
        for k, v in (data.get("usage") or {}).items():
            total["usage"][k] = total["usage"].get(k, 0) + int(v)
        if path.name == main_name:
            total["last_usage"] = data.get("last_usage") or {}
            total["last_bytes"] = data.get("last_bytes") or [0, 0]
            total["budget_tokens"] = data.get("budget_tokens")
        total["updated"] = max(total["updated"], float(data.get("updated") or 0))
    return total if total["conversations"] else None


def sent_tokens(usage: dict[str, Any]) -> int:
    """The prompt tokens the API counted (uncached, cache reads and cache writes)."""
    return sum(int(usage.get(k) or 0) for k in (
        "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))


def summary(stats: dict[str, Any]) -> dict[str, Any]:
    """The figures ``status`` shows: what was sent, the saving, what passed and why."""
    bytes_in, bytes_out = int(stats["bytes_in"]), int(stats["bytes_out"])
    last = stats.get("last_usage") or {}
    last_sent = sent_tokens(last) if last else None
    lb_in, lb_out = (stats.get("last_bytes") or [0, 0])[:2]
    unfolded = (round(last_sent * lb_in / lb_out) if last_sent and lb_out and lb_in
                else None)
    passed = dict(stats.get("passed") or {})
    usage = stats.get("usage") or {}
    prompt = sent_tokens(usage)
    return {
        "requests": int(stats["requests"]), "edited": int(stats["edited"]),
        "passed_through": sum(passed.values()), "passed_reasons": passed,
        "as_sent": int(stats["requests"]) - int(stats["edited"]) - sum(passed.values()),
        "bytes_in": bytes_in, "bytes_out": bytes_out,
        "saving": round(1 - bytes_out / bytes_in, 3) if bytes_in else None,
        "last_sent_tokens": last_sent, "last_unfolded_tokens": unfolded,
        "prompt_tokens": prompt or None,
        "cached_share": round(int(usage.get("cache_read_input_tokens") or 0) / prompt, 3)
        if prompt else None,
        "conversations": int(stats["conversations"]),
        "budget_tokens": stats.get("budget_tokens") if isinstance(
            stats.get("budget_tokens"), int) else None,
    }


def badge(root: Path | None, session_id: str | None) -> str:
    """`` · proxy −57%`` for the status line (empty when the proxy never saw the session)."""
    if root is None or not session_id:
        return ""
    stats = read(root, session_id)
    if stats is None or not stats["bytes_in"]:
        return ""
    saving = 1 - stats["bytes_out"] / stats["bytes_in"]
    passed = sum((stats.get("passed") or {}).values())
    tail = f", {passed} passed" if passed else ""
    return f" · proxy −{100 * saving:.0f}%{tail}"


__all__ = ["badge", "read", "sent_tokens", "summary"]
