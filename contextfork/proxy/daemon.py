"""The per-user proxy that ``contextfork run`` shares between its clients, and its directory.

One proxy per user (per ``CONTEXTFORK_PROXY_DIR``, default ``<runtime dir>/proxy``: the command
server's private 0700 directory). Its files:

- ``proxy.json``: pid, port and version of the running proxy, written once it listens;
- ``clients/<token>.json``: one per running ``contextfork run`` (its pid, the upstream its
  client would have used, its project). The client's base URL is ``http://127.0.0.1:<port>/c/
  <token>``: requests name their registration, so clients with different upstreams and
  projects share one proxy, and a conversation's originals land in its own project;
- ``start.lock``: launchers take it while they start a proxy (one starts, the others reuse it);
- ``proxy.log``: the proxy's own events.

The proxy checks its clients every second and exits when none has been alive for
``CONTEXTFORK_PROXY_GRACE`` seconds (default 5): it stops when its last client is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from contextfork.errors import CheckFailed
from contextfork.staleness import pid_alive

STATE = "proxy.json"
CLIENTS = "clients"


def proxy_dir() -> Path:
    """The user's private proxy directory (created 0700; refused when unsafe)."""
    from contextfork.server.client import ensure_dir, runtime_dir

    explicit = os.environ.get("CONTEXTFORK_PROXY_DIR")
    path = explicit or os.path.join(runtime_dir(), "proxy")
    if not explicit:
        reason = ensure_dir(runtime_dir())
        if reason:
            raise CheckFailed(f"proxy directory: {reason}")
    reason = ensure_dir(path)
    if reason:
        raise CheckFailed(f"proxy directory: {reason}")
    clients = os.path.join(path, CLIENTS)
    reason = ensure_dir(clients)
    if reason:
        raise CheckFailed(f"proxy directory: {reason}")
    return Path(path)


def read_state(base: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((base / STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomically, readable by this user only."""
    from contextfork.atomic import write_bytes

    write_bytes(path, json.dumps(data, sort_keys=True).encode("utf-8"), mode=0o600)


def live_clients(base: Path) -> list[str]:
    """Tokens of registrations whose launcher still runs (stale ones are removed)."""
    out: list[str] = []
    try:
        entries = list(os.scandir(base / CLIENTS))
    except OSError:
        return out
    for e in entries:
        if not e.name.endswith(".json"):
            continue
        try:
            data = json.loads(Path(e.path).read_text(encoding="utf-8"))
            pid = int(data.get("pid", 0))
        except (OSError, ValueError, TypeError, AttributeError):
            pid = 0
        if pid_alive(pid):
            out.append(e.name[:-5])
        else:
            with contextlib.suppress(OSError):
                os.unlink(e.path)
    return out


async def _watch(base: Path, stop: asyncio.Event, grace: float) -> None:
    idle_since: float | None = None
    while not stop.is_set():
        await asyncio.sleep(1.0)
        if live_clients(base):
            idle_since = None
            continue
        idle_since = idle_since or time.monotonic()
        if time.monotonic() - idle_since >= grace:
            state = read_state(base)
            if state and state.get("pid") == os.getpid():
                with contextlib.suppress(OSError):
                    (base / STATE).unlink()
            if live_clients(base):  # a launcher registered while we decided: stay
                idle_since = None
                if state and state.get("pid") == os.getpid():
                    write_json(base / STATE, state)
                continue
            stop.set()


def _stop_on_signals() -> asyncio.Event:
    """An event set by SIGTERM, SIGINT or SIGHUP: the server stops cleanly on any of them."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)
    return stop


def run_user_daemon(port: int) -> int:
    """Serve the user's clients until the last one is gone (``contextfork proxy --user``)."""
    from contextfork import __version__
    from contextfork.proxy.proxylog import ProxyLog
    from contextfork.proxy.server import ANTHROPIC, Proxy, serve

    base = proxy_dir()
    log = ProxyLog(base / "proxy.log")
    proxy = Proxy(ANTHROPIC, None, clients_dir=base / CLIENTS, log=log)
    grace = float(os.environ.get("CONTEXTFORK_PROXY_GRACE", "5") or 5)

    async def main() -> None:
        stop = _stop_on_signals()

        def ready(bound: int) -> None:
            write_json(base / STATE, {"pid": os.getpid(), "port": bound,
                                      "version": __version__, "started": time.time()})
            log.write(None, event="start", pid=os.getpid(), port=bound)

        watcher = asyncio.create_task(_watch(base, stop, grace))
        try:
            await serve(proxy, "127.0.0.1", port, ready=ready, stop=stop)
        finally:
            watcher.cancel()
            state = read_state(base)
            if state and state.get("pid") == os.getpid():
                with contextlib.suppress(OSError):
                    (base / STATE).unlink()
            log.write(None, event="stop", pid=os.getpid(), served=proxy.served)

    try:
        asyncio.run(main())
    except OSError as err:
        log.write(None, event="error", why=f"cannot listen on port {port}: {err.strerror}")
        raise CheckFailed(f"proxy: cannot listen on 127.0.0.1:{port}: {err.strerror}") from None
    return 0


__all__ = ["live_clients", "pid_alive", "proxy_dir", "read_state", "run_foreground",
           "run_user_daemon",
           "write_json"]


def run_foreground(port: int, upstream: str, root: Path | None) -> int:
    """``contextfork proxy``: serve in this terminal until Ctrl-C (or SIGTERM)."""
    from contextfork.proxy.proxylog import ProxyLog
    from contextfork.proxy.server import Proxy, serve

    proxy = Proxy(upstream, root, log=ProxyLog(None))

    async def main() -> None:
        stop = _stop_on_signals()

        def ready(bound: int) -> None:
            print(f"contextfork proxy: http://127.0.0.1:{bound} -> {upstream} "
                  f"(set ANTHROPIC_BASE_URL=http://127.0.0.1:{bound}; Ctrl-C stops it)",
                  flush=True)

        await serve(proxy, "127.0.0.1", port, ready=ready, stop=stop)

    try:
        asyncio.run(main())
    except OSError as err:
        raise CheckFailed(f"proxy: cannot listen on 127.0.0.1:{port}: {err.strerror}",
                          hint="choose another --port") from None
    return 0
