"""``contextfork run -- claude|codex ARGS…``: the client, with the user's proxy in front of it.

Starts the per-user proxy (``daemon``) or reuses the running one, registers this client (its
upstream: the base URL the user had set, else the vendor's; its project), and runs the client
with the proxy's URL for this child only (``ANTHROPIC_BASE_URL``; for Codex ``OPENAI_BASE_URL``
or ``-c model_providers.<id>.base_url=…`` when the config names its own provider). The exit
status is the client's (a client killed by a signal kills the launcher with the same signal).
``SIGTERM``/``SIGHUP``/``SIGUSR1``/``SIGUSR2`` sent to the launcher go to the client; ``SIGINT``
and ``SIGQUIT`` come from the terminal to both, so the launcher ignores them.

Failing open: when the proxy cannot start (or this machine cannot run it), the client runs
directly with one line on stderr. While the client runs, a watcher checks the proxy every
second and starts it again on the same port if it died, so a killed proxy costs the client a
retried request, not its session.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from contextfork.errors import CheckFailed, ContextforkError, UsageError
from contextfork.proxy import daemon

FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)


def harness_of(command: str) -> str:
    name = Path(command).name.lower()
    if name.startswith("codex"):
        return "codex"
    return "claude"


def healthy(port: int, pid: int | None = None, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(
                f"http://127.0.0.1:{port}/_contextfork/health", timeout=timeout) as resp:
            data = json.loads(resp.read())
    except (OSError, ValueError):
        return False
    return bool(data.get("ok")) and (pid is None or data.get("pid") == pid)


_DETACHED: list[subprocess.Popen[bytes]] = []


def _start_timeout() -> float:
    try:
        return float(os.environ.get("CONTEXTFORK_PROXY_START_TIMEOUT", "20"))
    except ValueError:
        return 20.0


def start_proxy(base: Path, port: int = 0) -> int:
    """The running proxy's port, starting one (on ``port``, 0: any) under the start lock."""
    from filelock import FileLock

    with FileLock(str(base / "start.lock"), timeout=_start_timeout()):
        state = daemon.read_state(base)
        pid = int(state.get("pid", 0)) if state else 0
        if state and _running(pid):
            # A live proxy that is slow to answer (a loaded machine) is waited for, not doubled;
            # one that stays silent for the whole start timeout is wedged and replaced.
            if _answers(int(state.get("port", 0)), pid, time.monotonic() + _start_timeout()):
                return int(state["port"])
            _stop(pid)
        err = open(base / "proxy.err", "ab")  # noqa: SIM115 - handed to the child
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "contextfork", "proxy", "--user", "--port", str(port)],
                cwd=base, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                start_new_session=True, close_fds=True)
        finally:
            err.close()
        _DETACHED.append(proc)  # it outlives this call: no "still running" warning on GC
        deadline = time.monotonic() + _start_timeout()
        while time.monotonic() < deadline:
            state = daemon.read_state(base)
            if state and state.get("pid") == proc.pid and healthy(int(state["port"]), proc.pid):
                return int(state["port"])
            if proc.poll() is not None:
                raise CheckFailed(f"the proxy exited at start ({_last_line(base / 'proxy.err')})")
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        raise CheckFailed("the proxy did not start in time")


def _answers(port: int, pid: int, deadline: float) -> bool:
    while True:
        if healthy(port):
            return True
        if time.monotonic() >= deadline or not _running(pid):
            return False
        time.sleep(0.2)


def _stop(pid: int) -> None:
    """SIGTERM, then SIGKILL after 5 s: the port must be free for the one that replaces it."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not _running(pid):
            return


def _running(pid: int) -> bool:
    """Alive and not a zombie (a proxy killed under the launcher that started it stays one
    until that launcher reaps it)."""
    if not daemon.pid_alive(pid):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True  # no /proc here: kill(0) is all there is
    return stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X")


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "no error output"
    return lines[-1][:200] if lines else "no error output"


def register(base: Path, token: str, harness: str, upstream: str, root: Path | None) -> None:
    """This launcher's lease: the proxy serves ``/c/<token>`` while our pid lives."""
    daemon.write_json(base / daemon.CLIENTS / f"{token}.json", {
        "pid": os.getpid(), "harness": harness, "upstream": upstream,
        "root": str(root) if root else None, "started": time.time()})


class Watcher(threading.Thread):
    """Starts the proxy again (same port) if it dies while the client runs."""

    def __init__(self, base: Path, port: int) -> None:
        super().__init__(name="contextfork-proxy-watch", daemon=True)
        self.base, self.port = base, port
        self.done = threading.Event()
        self.restarts = 0

    def run(self) -> None:
        misses = 0
        while not self.done.wait(1.0):
            if healthy(self.port):
                misses = 0
                continue
            misses += 1
            if misses < 2:
                continue
            with contextlib.suppress(ContextforkError, OSError, TimeoutError):
                start_proxy(self.base, self.port)
                self.restarts += 1
                misses = 0


def _wait(child: subprocess.Popen[bytes]) -> int:
    handlers: dict[signal.Signals, Any] = {}

    def forward(signum: int, _frame: Any) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    for sig in FORWARDED:
        handlers[sig] = signal.signal(sig, forward)
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    old_quit = signal.signal(signal.SIGQUIT, signal.SIG_IGN)
    try:
        return child.wait()
    finally:
        for sig, h in handlers.items():
            signal.signal(sig, h)
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGQUIT, old_quit)


def _exit_like(code: int) -> int:
    """The child's status as ours: a signal death is re-raised on ourselves."""
    if code < 0:
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code
    return code


def run(argv: list[str], harness: str | None = None, *, if_enabled: bool = False) -> int:
    if not argv:
        raise UsageError("contextfork run needs the client to run",
                         hint="contextfork run -- claude [ARGS…]")
    kind = harness or harness_of(argv[0])
    if if_enabled:
        from contextfork.layout import find_repo
        from contextfork.proxy import optin

        if not optin.enabled(find_repo(Path.cwd()), kind):
            return _direct(argv)
    env = dict(os.environ)
    try:
        from contextfork.layout import find_repo
        from contextfork.proxy import clients

        base = daemon.proxy_dir()
        port = start_proxy(base)
        token = secrets.token_hex(16)
        argv, upstream = clients.point(kind, argv, env, f"http://127.0.0.1:{port}/c/{token}")
        register(base, token, kind, upstream, find_repo(Path.cwd()))
    except (ContextforkError, OSError, ImportError, TimeoutError) as err:
        why = err.one_line() if isinstance(err, ContextforkError) else str(err)
        print(f"contextfork run: no proxy ({why}); running {argv[0]} directly",
              file=sys.stderr)
        return _direct(argv)
    watcher = Watcher(base, port)
    watcher.start()
    try:
        try:
            child = subprocess.Popen(argv, env=env)
        except OSError as err:
            raise CheckFailed(f"cannot run {argv[0]}: {err.strerror}") from None
        code = _wait(child)
    finally:
        watcher.done.set()
        with contextlib.suppress(OSError):
            (base / daemon.CLIENTS / f"{token}.json").unlink()
    return _exit_like(code)


def _direct(argv: list[str]) -> int:
    try:
        child = subprocess.Popen(argv)
    except OSError as err:
        raise CheckFailed(f"cannot run {argv[0]}: {err.strerror}") from None
    return _exit_like(_wait(child))


__all__ = ["harness_of", "healthy", "register", "run", "start_proxy"]
