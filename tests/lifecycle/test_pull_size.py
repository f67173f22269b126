"""``pull`` asks git for object sizes before reading any blob (issue 13 #13).

A package commit on a remote can hold a blob of any size; reading it to find out it is too big
cost 625 MB for a 300 MB blob. The limit (``CONTEXTFORK_PULL_MAX_BYTES``) is set low here so the
test stays fast; the blob is still large enough that reading it would show in peak memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from contextfork.lifecycle.sharing import REF_PREFIX, push
from contextfork.package.export import ExportOptions, export
from tests.helpers import clean_env
from tests.lifecycle.conftest import Shared

BIG = 96 * 1024 * 1024
LIMIT = 4 * 1024 * 1024
PID = "20990101T000000000Z-bigbig"

_MEASURE = """
import json, sys
from contextfork.entry import main

def hwm_kb():
    # VmHWM belongs to this image (reset by exec); ru_maxrss would carry the parent's at fork.
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0
code = main(["pull", "origin", "--json"])
sys.stdout.flush()
print(json.dumps({"code": code, "maxrss_kb": hwm_kb()}),
      file=sys.stderr)
"""


def _plant_big_blob(shared: Shared) -> None:
    """A real package plus one huge untracked snapshot, forged on the remote."""
    a = shared.a
    out = export(a.path, ExportOptions())
    push(a.path, "origin", out.package_id)
    tree = a.git("rev-parse", f"{REF_PREFIX}{out.package_id}^{{tree}}")
    # Never in this process's memory: a child's peak RSS starts from its parent's at fork.
    big = a.path.parent / "big.bin"
    with open(big, "wb") as fh:
        fh.truncate(BIG)
    blob = a.git("hash-object", "-w", str(big))
    big.unlink()
    sub = a.git("mktree", input=f"100644 blob {blob}\tbig.bin\n".encode())
    listing = a.git("ls-tree", tree) + f"\n040000 tree {sub}\tuntracked"
    forged = a.git("mktree", input=(listing + "\n").encode())
    commit = a.git("commit-tree", forged, "-m", "big")
    a.git("push", "-q", "origin", f"{commit}:{REF_PREFIX}{PID}")


def _pull_measured(repo: Path, limit: int) -> tuple[int, dict[str, object], int]:
    env = clean_env({"CONTEXTFORK_PULL_MAX_BYTES": str(limit)})
    proc = subprocess.run([sys.executable, "-c", _MEASURE], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    stats = json.loads(proc.stderr.strip().splitlines()[-1])
    return int(stats["code"]), json.loads(proc.stdout), int(stats["maxrss_kb"])


def test_pull_refuses_an_oversized_blob_before_reading_it(shared: Shared) -> None:
    _plant_big_blob(shared)
    code, env, maxrss_kb = _pull_measured(shared.b.path, LIMIT)
    # Reading the blob alone would put BIG bytes in memory (twice, with the batch buffer).
    assert maxrss_kb * 1024 < BIG, f"peak RSS {maxrss_kb} KiB: the blob was read"
    assert code == 3
    refused = [p for p in env["problems"] if p["path"] == PID]  # type: ignore[union-attr]
    assert refused and "bytes" in refused[0]["message"], env
    assert not (shared.b.path / ".contextfork" / "packages" / PID).exists()


def test_pull_within_the_limit_still_works(shared: Shared) -> None:
    a = shared.a
    out = export(a.path, ExportOptions())
    push(a.path, "origin", out.package_id)
    code, env, _ = _pull_measured(shared.b.path, LIMIT)
    assert code == 0, env
    assert env["data"]["pulled"] == [out.package_id]  # type: ignore[index]
