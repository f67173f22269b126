"""The statusline's per-transcript cache is a hint, never the truth: it is verified before reuse."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.helpers import run_cli
from tests.transcript.builders import CC, text


def _write(path: Path, calls: list[tuple[str, int]], model: str, pad: int = 1) -> None:
    cc = CC()
    lines = []
    for mid, tokens in calls:
        obj = cc.assistant(mid, [text("x" * pad)], usage=(1, 1, 0, tokens))
        obj["message"]["model"] = model
        lines.append(json.dumps(obj, separators=(",", ":")) + "\n")
    path.write_text("".join(lines), encoding="utf-8")


def _status(f: Path, tmp_path: Path, cache: str = "cache") -> str:
    res = run_cli("statusline", input=json.dumps({"transcript_path": str(f)}), cwd=tmp_path,
                  env={"XDG_CACHE_HOME": str(tmp_path / cache)})
    assert res.returncode == 0 and res.stderr == ""
    return res.stdout


def _cache(tmp_path: Path) -> Path:
    (c,) = (tmp_path / "cache" / "contextfork" / "statusline").glob("*.json")
    return c


def test_a_transcript_replaced_in_place_is_rescanned(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    _write(f, [(f"m{i}", 60_000 + i) for i in range(1, 11)], "model-old")
    assert "Step 10" in _status(f, tmp_path)
    ino = f.stat().st_ino
    with open(f, "r+", encoding="utf-8") as fh:  # same inode, new and longer content
        fh.truncate(0)
    _write(f, [(f"n{i}", 1_000 * i) for i in range(1, 4)], "model-new", pad=3_000)
    assert f.stat().st_ino == ino
    fresh = _status(f, tmp_path, cache="fresh-cache")
    assert "3.0k tokens | Step 3" in fresh
    assert _status(f, tmp_path) == fresh


def test_a_corrupt_cache_entry_is_ignored_not_trusted(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    _write(f, [("m1", 60_000)], "model-a")
    good = _status(f, tmp_path)
    assert "60.0k tokens | Step 1" in good
    cache = _cache(tmp_path)
    for field, bad in [("message_ids", 5), ("offset", -7), ("active_tokens", "lots"),
                       ("billing", [1]), ("offset", 10**9)]:
        data = json.loads(cache.read_text())
        data["state"][field] = bad
        data["mtime_ns"] = 0  # force the incremental path
        cache.write_text(json.dumps(data))
        assert _status(f, tmp_path) == good, (field, bad)
    os.utime(f)
    assert _status(f, tmp_path) == good
