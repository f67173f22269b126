"""A private command server for a benchmark's served rows (imported by the bench scripts)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

CONTEXTFORK = [sys.executable, "-m", "contextfork"]


@contextlib.contextmanager
def private_server(env: dict[str, str], directory: Path | str) -> Iterator[dict[str, str]]:
    """``env`` for commands served by a server of their own (socket in ``directory``), started
    before the first timed command and stopped after the last."""
    served = {**env, "CONTEXTFORK_SERVER": "on", "CONTEXTFORK_SERVER_DIR": str(directory)}
    subprocess.run([*CONTEXTFORK, "server", "start"], env=served, check=True, capture_output=True)
    try:
        yield served
    finally:
        subprocess.run([*CONTEXTFORK, "server", "stop"], env=served, check=False,
                       capture_output=True)  # fmt: skip
