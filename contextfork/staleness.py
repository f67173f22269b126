"""Who owns a temporary name, and when a leftover of a killed writer may be removed.

Kept apart from ``atomic`` (which writes): this only reads pids, names and inode times.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

# A leftover of a killed writer is removed by the next run once its owner is dead, or once it is
# older than this (the owner's pid may have been reused); no export takes anywhere near as long.
STALE_AFTER_SECONDS = 900


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, owned by someone else
        return True
    return True


def owner_pid(name: str, prefix: str) -> int | None:
    """The pid a temp name carries right after its prefix (``<prefix><pid>-<random>``)."""
    head = name[len(prefix) :].split("-", 1)[0]
    return int(head) if head.isdigit() else None


def is_stale(
    path: Path, pid: int | None, max_age: float = STALE_AFTER_SECONDS, *, by_ctime: bool = False
) -> bool:
    """Dead owner, or older than ``max_age`` seconds (also the rule for names without a pid).

    ``by_ctime``: age from the inode change time too, for files whose mtime is copied from
    another file (a temporary index keeps the real index's mtime for git's racy-entry check, so
    a live export's copy of an index last written an hour ago looked an hour old, and a
    concurrent sweep removed it while git was about to read it)."""
    if pid is not None and not pid_alive(pid):
        return True
    try:
        st = path.lstat()
    except OSError:
        return False
    changed = max(st.st_mtime, st.st_ctime) if by_ctime else st.st_mtime
    return time.time() - changed > max_age
