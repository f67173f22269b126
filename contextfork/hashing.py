"""The only module that computes hashes, so every identity in the tool is computed one way."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's path)
if TYPE_CHECKING:
    from typing import Any

_CHUNK = 1 << 18
#: Up to this many bytes, the interpreter's own SHA-256 (``_sha2``, ``_sha256`` before 3.12):
#: ``hashlib`` starts OpenSSL, ~3.5 ms on every pre-commit checkpoint whose files are all
#: small; OpenSSL is several times faster per byte, so anything larger goes there.
SMALL = 1 << 16


def _builtin_sha256() -> Any:
    for name in ("_sha2", "_sha256"):
        try:
            return __import__(name).sha256
        except (ImportError, AttributeError):
            continue
    return None


_BUILTIN = _builtin_sha256()
_openssl: Any = None


def _openssl_sha256() -> Any:
    global _openssl
    if _openssl is None:
        import hashlib  # lazy: hot path (OpenSSL's start-up, see SMALL)

        _openssl = hashlib.sha256
    return _openssl


def _hasher(size: int) -> Any:
    """A fresh SHA-256 object for about ``size`` bytes (the same digest either way)."""
    if _BUILTIN is not None and size <= SMALL:
        return _BUILTIN()
    return _openssl_sha256()()


def sha256_bytes(data: bytes) -> str:
    h = _hasher(len(data))
    h.update(data)
    return str(h.hexdigest())


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def sha256_file(path: Path) -> tuple[str, int]:
    """Hash a file without loading it whole; returns (hex digest, size). One buffer, read
    into: a new chunk per read held two at once, 2 MB of a fork's peak (issue 27)."""
    size = 0
    buf = bytearray(_CHUNK)
    view = memoryview(buf)
    with open(path, "rb") as fh:
        h = _hasher(os.fstat(fh.fileno()).st_size)
        while n := fh.readinto(buf):
            h.update(view[:n])
            size += n
    return str(h.hexdigest()), size


def sha256_chunks(chunks: Iterable[bytes]) -> str:
    """Hash content produced piece by piece (a streamed view) without joining it."""
    h = _openssl_sha256()()
    for chunk in chunks:
        h.update(chunk)
    return str(h.hexdigest())


def canonical_json(obj: Any) -> bytes:
    """Canonical JSON: sorted keys, no whitespace, UTF-8 kept (IPCF projection rules)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def canonical_sha256(obj: Any) -> str:
    return sha256_bytes(canonical_json(obj))


def line_digest(data: bytes) -> bytes:
    """The raw SHA-256 digest of one source line (32 bytes, kept per line in memory)."""
    return bytes(_openssl_sha256()(data).digest())
