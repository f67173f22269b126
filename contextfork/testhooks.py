"""Deterministic crash and pause points, so tests can kill -9 a real subprocess between two
phases, or hold it there.

``CONTEXTFORK_TEST_KILL_AT=<name>`` makes the process SIGKILL itself when it reaches the named
point: no cleanup handler runs, exactly like a power cut or an OOM kill.
``CONTEXTFORK_TEST_PAUSE_AT=<name>`` makes it sleep there for ``CONTEXTFORK_TEST_PAUSE_S``
seconds (default 5). Unset (always, outside tests), a point is one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

ENV = "CONTEXTFORK_TEST_KILL_AT"
PAUSE_ENV = "CONTEXTFORK_TEST_PAUSE_AT"


def kill_point(name: str) -> None:
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def pause_point(name: str) -> None:
    if os.environ.get(PAUSE_ENV) == name:
        import time

        time.sleep(float(os.environ.get("CONTEXTFORK_TEST_PAUSE_S", "5")))
