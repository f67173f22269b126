"""``peek``: a verified slice of one folded step, straight from its cold node.

The node is read through ``cold.store.read_node``, which re-verifies its three identities
and its index record, so a tampered store is an ``IntegrityError`` and never shown. The slice
is bounded by ``max_chars`` (and ``max_tokens``, o200k) and cut on UTF-8 character boundaries; ``offset``/``end`` are byte
offsets into the stored payload so a caller can page on (``next_offset``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextfork.cold.layout import StoreLayout
from contextfork.cold.store import read_node
from contextfork.curate.index import StepEntry
from contextfork.errors import UsageError
from contextfork.hashing import sha256_bytes

DEFAULT_MAX_CHARS = 4000
MAX_CHARS = 20_000
VIEWS = ("raw", "readable")


def _nonneg(args: Mapping[str, object], name: str, default: int, hi: int | None = None) -> int:
    value = args.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"peek: {name} must be a non-negative integer, got {value!r}")
    if hi is not None and value > hi:
        raise UsageError(f"peek: {name} {value} exceeds the maximum {hi}")
    return value


def peek(layout: StoreLayout, entry: StepEntry, args: Mapping[str, object]) -> dict[str, Any]:
    view = args.get("view", "raw")
    if view not in VIEWS:
        raise UsageError(f"peek: view must be one of {', '.join(VIEWS)}, got {view!r}")
    offset = _nonneg(args, "offset", 0)
    max_chars = _nonneg(args, "max_chars", DEFAULT_MAX_CHARS, MAX_CHARS)
    max_tokens = _nonneg(args, "max_tokens", 0, MAX_CHARS) if "max_tokens" in args else None
    node = read_node(layout, entry.step_id)  # every identity re-verified (exit 3 on tamper)
    if view == "readable" and node.get("readable"):
        whole = str(node["readable"]).encode("utf-8")
    else:
        view = "raw"
        if node.get("content_encoding") != "utf-8":
            raise UsageError(f"peek: step {entry.step_id} holds binary bytes; nothing to show")
        whole = str(node["content"]).encode("utf-8")  # verified by read_node
    if offset > len(whole):
        raise UsageError(f"peek: offset {offset} is past the end ({len(whole)} bytes)")
    while offset < len(whole) and (whole[offset] & 0xC0) == 0x80:
        offset += 1  # never start inside a UTF-8 character
    text = whole[offset:].decode("utf-8")[:max_chars]
    if max_tokens is not None:  # o200k tokens, what the prompt pays
        from contextfork.tokens import truncate_to_tokens

        text = truncate_to_tokens(text, max_tokens)
    part = text.encode("utf-8")
    end = offset + len(part)
    return {
        "session_id": layout.session_id, "step": entry.step_id, "key": entry.key,
        "view": view, "offset": offset, "end": end, "total_bytes": len(whole),
        "next_offset": end if end < len(whole) else None,
        "payload_sha256": node["payload_sha256"], "slice_sha256": sha256_bytes(part),
        "verified": True, "redactions": len(node.get("redactions", [])),
        "text": text,
    }
