"""The MCP server's stdin is a line protocol from an untrusted peer: a line without end must
not be held whole (issue 13 #12, "bound reads"), and the server keeps answering after it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import Repo, clean_env

HUGE = 192 * 1024 * 1024

_MEASURE = """
import sys
from contextfork.entry import main

def hwm_kb():
    # VmHWM belongs to this image (reset by exec); ru_maxrss would carry the parent's at fork.
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0
code = main(["mcp"])
print(code, hwm_kb(), file=sys.stderr)
"""


def test_mcp_huge_line_is_cut_off_and_the_next_request_answered(repo: Repo, tmp_path: Path) -> None:
    feed = tmp_path / "feed.bin"
    with open(feed, "wb") as fh:
        fh.truncate(HUGE)  # HUGE zero bytes, no newline: sparse, never in this process
        fh.seek(HUGE)
        fh.write(b"\n" + json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}).encode() + b"\n")
    with open(feed, "rb") as stdin:
        proc = subprocess.run([sys.executable, "-c", _MEASURE], cwd=repo.path, env=clean_env(),
                              stdin=stdin, capture_output=True, timeout=120, check=False)
    code, maxrss_kb = proc.stderr.decode().strip().splitlines()[-1].split()
    assert code == "0", proc.stderr.decode()[-2000:]
    # ~70 MB is the server itself, the cap adds a few copies of 16 MiB; unbounded it is ~470 MB
    assert int(maxrss_kb) * 1024 < HUGE, f"peak RSS {maxrss_kb} KiB: the line was held"
    replies = [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]
    assert any(r.get("id") == 7 and "result" in r for r in replies), replies
