"""Reading a git process's output while it runs, so a large output cannot stall it.

A pipe holds 64 KiB. ``export`` starts ``git diff`` (hundreds of KiB of patch on a big change)
and then does its own work before reading: git filled the pipe and waited, and finished its
diff only once Python came back to read. A thread that reads from the start lets git run to
the end on the other core while Python works (reading releases the GIL).
"""

from __future__ import annotations

import subprocess
import threading

from contextfork.errors import GitError
from contextfork.gitstate.core import _decode_err


class Drained:
    """A started git process whose stdout and stderr a thread collects as they come."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self._out = b""
        self._err = b""
        self._exc: BaseException | None = None
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            self._out, self._err = self.proc.communicate()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller in finish()
            self._exc = exc

    def finish(self, what: str) -> bytes:
        """The whole stdout once git has exited; GitError (git's first line) when it failed."""
        self._thread.join()
        if self._exc is not None:
            raise self._exc
        if self.proc.returncode != 0:
            raise GitError(f"git {what} failed: {_decode_err(self._err)}")
        return self._out

    def discard(self) -> None:
        """Stop (if still running) and wait for the process and its reader."""
        if self.proc.poll() is None:
            self.proc.kill()
        self._thread.join()


def drain(proc: subprocess.Popen[bytes]) -> Drained:
    return Drained(proc)


__all__ = ["Drained", "drain"]
