"""`contextfork server start|status|stop`: the command server seen from the outside."""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

from contextfork.envelope import Problem, Result
from contextfork.server import client

START_TIMEOUT = 15.0


def _ask(path: str, verb: str) -> dict[str, Any] | None:
    """The server's own description (None: nothing answers at ``path``)."""
    sock = client._connect(path)
    if sock is None:
        return None
    try:
        sock.settimeout(5)
        sock.sendall(b"\xff")
        client.send_message(sock, {"verb": verb})
        return client.recv_message(sock)
    except (OSError, EOFError, ValueError):
        return None
    finally:
        sock.close()


def _sockets(directory: str) -> list[str]:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, n) for n in names if n.startswith("s-") and "." not in n]


def status() -> Result:
    directory = client.runtime_dir()
    key = client.build_key()
    path = client.socket_path(key)
    data: dict[str, Any] = {
        "enabled": client.enabled(),
        "directory": directory,
        "key": key,
        "socket": path,
        "running": None,
        "others": [],
        "log": client.log_path(path),
        "log_tail": _tail(client.log_path(path)),
    }
    problems: list[Problem] = []
    if not client.enabled():
        why = f"{client.ENV_MODE}={os.environ.get(client.ENV_MODE, '')}"
        if not client._supported():
            why = "this platform has no fork() or Unix socket descriptor passing"
        problems.append(Problem("warning", "server_disabled", f"command server disabled ({why})"))
    reason = client.unsafe_dir_reason(directory) if os.path.lexists(directory) else None
    if reason:
        problems.append(Problem("error", "server_dir_unsafe", f"no server can run: {reason}"))
    else:
        data["running"] = _ask(path, "status")
        data["others"] = [
            info for p in _sockets(directory) if p != path and (info := _ask(p, "status"))
        ]
    lines = [_describe(data)]
    lines += [f"  another build's server: pid {o['pid']}, {o['served']} served" for o in data["others"]]
    if data["log_tail"]:
        lines.append(f"  last in its log ({data['log']}): {data['log_tail'][-1]}")
    return Result("server status", data, problems, 1 if reason else 0, "\n".join(lines))


def _tail(path: str, lines: int = 5, limit: int = 8192) -> list[str]:
    """The log's last lines (never a symlink's target: the log lives in our private directory)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return []
    try:
        size = os.fstat(fd).st_size
        os.lseek(fd, max(0, size - limit), os.SEEK_SET)
        text = os.read(fd, limit).decode("utf-8", "replace")
    except OSError:
        return []
    finally:
        os.close(fd)
    return [ln for ln in text.splitlines() if ln.strip()][-lines:]


def _describe(data: dict[str, Any]) -> str:
    info = data["running"]
    if info is None:
        state = "not running" + ("" if data["enabled"] else " (disabled)")
        return f"command server: {state}; socket {data['socket']}"
    age = time.time() - float(info["since"])
    return (f"command server: pid {info['pid']}, up {age:.0f} s, {info['served']} command(s) "
            f"served, {info['running']} running, exits after {info['idle']:.0f} s idle; "
            f"socket {info['socket']}")  # fmt: skip


def start() -> Result:
    """Start the server for this build (if none answers) and wait until it does."""
    directory = client.runtime_dir()
    reason = client.ensure_dir(directory)
    if reason:
        return Result("server start", None, [Problem("error", "server_dir_unsafe", reason)], 1,
                      f"cannot start the command server: {reason}")  # fmt: skip
    key = client.build_key()
    path = client.socket_path(key)
    info = _ask(path, "status")
    if info is None:
        marker = path + ".starting"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(marker)  # asked for explicitly: no back-off
        client.spawn(path, key)
        deadline = time.monotonic() + START_TIMEOUT
        while info is None and time.monotonic() < deadline:
            time.sleep(0.05)
            info = _ask(path, "status")
    if info is None:
        return Result("server start", None,
                      [Problem("error", "server_not_started", "the server did not answer")], 1,
                      f"the command server did not answer within {START_TIMEOUT:.0f} s "
                      f"(try: python -m contextfork.server.daemon {path} {key})")  # fmt: skip
    return Result("server start", info, [], 0, f"command server: pid {info['pid']}; socket {path}")


def stop(everything: bool = False) -> Result:
    """Stop this build's server (``everything``: every server in the directory)."""
    directory = client.runtime_dir()
    paths = _sockets(directory) if everything else [client.socket_path(client.build_key())]
    stopped = [info for p in paths if (info := _ask(p, "stop"))]
    text = (f"stopped {len(stopped)} command server(s)" if stopped
            else "no command server was running")  # fmt: skip
    return Result("server stop", {"stopped": stopped}, [], 0, text)
