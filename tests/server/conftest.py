from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import clean_env


class Served:
    """A private command server: its own socket directory (short: a Unix socket path is
    limited to ~108 bytes), started for the test and stopped after it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        # The server is off by default: on here, as `contextfork server enable` would make it.
        self.env = clean_env({"CONTEXTFORK_SERVER": "on", "CONTEXTFORK_SERVER_DIR": str(directory)})

    def run(self, *args: str, cwd: Path | None = None, input: str | None = None,
            env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:  # fmt: skip
        return subprocess.run([sys.executable, "-m", "contextfork", *args], cwd=cwd,
                              env={**self.env, **(env or {})}, input=input, capture_output=True,
                              text=True, timeout=timeout, check=False)  # fmt: skip

    def cold(self, *args: str, cwd: Path | None = None, input: str | None = None,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
        return self.run(*args, cwd=cwd, input=input, env={"CONTEXTFORK_SERVER": "off", **(env or {})})

    def status(self) -> dict[str, Any]:
        import json

        proc = self.run("server", "status", "--json")
        data: dict[str, Any] = json.loads(proc.stdout)["data"]
        return data

    def served(self) -> int:
        running = self.status()["running"]
        return int(running["served"]) if running else 0

    def start(self) -> dict[str, Any]:
        proc = self.run("server", "start", "--json")
        assert proc.returncode == 0, proc.stderr
        info = self.status()["running"]
        assert info is not None
        return dict(info)

    def wait_until(self, predicate: Any, timeout: float = 15) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.1)
        return False


@pytest.fixture
def served() -> Iterator[Served]:
    directory = Path(tempfile.mkdtemp(prefix="cfs-", dir="/tmp"))
    s = Served(directory)
    try:
        yield s
    finally:
        s.run("server", "stop", "--all")
        shutil.rmtree(directory, ignore_errors=True)
