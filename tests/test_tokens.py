from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CODE = "from contextfork.tokens import count_tokens, encode; print(count_tokens('PostgreSQL port 5433, migration V12 ✓'), encode('hello world'))"


def _run(cache: Path) -> str:
    env = {"XDG_CACHE_HOME": str(cache), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, check=True).stdout


def test_token_counts_are_identical_with_and_without_the_vocabulary_cache(tmp_path: Path) -> None:
    cold = _run(tmp_path)  # builds the cache
    cache = next((tmp_path / "contextfork").glob("o200k_base-*.marshal"))
    assert cache.with_suffix(".sha256").exists()
    assert _run(tmp_path) == cold  # loads from the cache


def test_a_corrupt_vocabulary_cache_is_detected_and_rebuilt(tmp_path: Path) -> None:
    expected = _run(tmp_path)
    cache = next((tmp_path / "contextfork").glob("o200k_base-*.marshal"))
    data = bytearray(cache.read_bytes())
    data[1000] ^= 0xFF
    cache.write_bytes(bytes(data))
    assert _run(tmp_path) == expected
    from contextfork.hashing import sha256_bytes

    assert sha256_bytes(cache.read_bytes()) == cache.with_suffix(".sha256").read_text().strip()
