"""Deterministic crash points, so tests can kill -9 a real subprocess between two phases.

``CONTEXTFORK_TEST_KILL_AT=<name>`` makes the process SIGKILL itself when it reaches the named
point: no cleanup handler runs, exactly like a power cut or an OOM kill. Unset (always, outside
tests), a kill point is one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

ENV = "CONTEXTFORK_TEST_KILL_AT"


def kill_point(name: str) -> None:
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
