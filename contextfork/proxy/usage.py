"""The usage the API returned for what the proxy really sent, read off the response stream.

The bytes go to the client untouched; this only watches them go by: the ``data:`` lines of a
stream that carry ``usage`` (Anthropic's ``message_start`` / ``message_delta``, the Responses
API's ``response.completed``), or a JSON body at its end. Normalised to Anthropic's names:
``input_tokens`` (uncached), ``cache_read_input_tokens``, ``cache_creation_input_tokens``,
``output_tokens``.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

MAX_JSON = 4 << 20
FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
          "output_tokens")


def _count(v: Any) -> bool:
    """A token count: a JSON integer (``true`` is a bool, and Python's bool is an int)."""
    return isinstance(v, int) and not isinstance(v, bool)


def normalise(raw: Any) -> dict[str, int]:
    """Anthropic usage as is; OpenAI's (``input_tokens`` counts cached ones too) mapped."""
    if not isinstance(raw, dict):
        return {}
    out = {k: v for k, v in raw.items() if k in FIELDS and _count(v)}
    details = raw.get("input_tokens_details")
    if isinstance(details, dict) and _count(details.get("cached_tokens")):
        cached = int(details["cached_tokens"])
        out["cache_read_input_tokens"] = cached
        out["input_tokens"] = max(0, out.get("input_tokens", 0) - cached)
    return out


def _find(obj: Any) -> dict[str, Any] | None:
    if not isinstance(obj, dict):
        return None
    for holder in (obj, obj.get("message"), obj.get("response")):
        if isinstance(holder, dict) and isinstance(holder.get("usage"), dict):
            return holder["usage"]  # type: ignore[no-any-return]
    return None


class UsageTap:
    def __init__(self) -> None:
        self.usage: dict[str, int] = {}
        self.sse = False
        self.off = False
        self.buf = b""

    def start(self, content_type: str, encoding: str | None) -> None:
        self.sse = "event-stream" in content_type
        self.off = encoding not in (None, "", "identity") or not (
            self.sse or "json" in content_type)

    def _take(self, obj: Any) -> None:
        got = normalise(_find(obj))
        self.usage.update(got)

    def feed(self, chunk: bytes) -> None:
        if self.off:
            return
        if not self.sse:
            self.buf += chunk
            if len(self.buf) > MAX_JSON:
                self.off, self.buf = True, b""
            return
        self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            if line.startswith(b"data:") and b'"usage"' in line:
                try:
                    self._take(json.loads(line[5:]))
                except ValueError:
                    continue

    def finish(self) -> None:
        if self.off or self.sse or not self.buf:
            return
        with contextlib.suppress(ValueError):
            self._take(json.loads(self.buf))
        self.buf = b""


__all__ = ["UsageTap", "normalise"]
