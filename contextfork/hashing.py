"""The only module that computes hashes, so every identity in the tool is computed one way."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's path)
if TYPE_CHECKING:
    from typing import Any

_CHUNK = 1 << 20


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def sha256_file(path: Path) -> tuple[str, int]:
    """Hash a file without loading it whole; returns (hex digest, size)."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def sha256_chunks(chunks: Iterable[bytes]) -> str:
    """Hash content produced piece by piece (a streamed view) without joining it."""
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk)
    return h.hexdigest()


def canonical_json(obj: Any) -> bytes:
    """Canonical JSON: sorted keys, no whitespace, UTF-8 kept (IPCF projection rules)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def canonical_sha256(obj: Any) -> str:
    return sha256_bytes(canonical_json(obj))


def line_digest(data: bytes) -> bytes:
    """The raw SHA-256 digest of one source line (32 bytes, kept per line in memory)."""
    return hashlib.sha256(data).digest()
