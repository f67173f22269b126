"""`contextfork server enable|disable|start|status|stop`: the command server from the outside."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

from contextfork.envelope import Problem, Result
from contextfork.server import client, context, wire

START_TIMEOUT = 15.0
ASK_TIMEOUT = 2.0


def _ask(path: str, verb: str) -> tuple[dict[str, Any] | None, int]:
    """The server's own description (None: nothing answers at ``path``) and the pid of the
    process listening there (0: none), which a server that does not answer still has."""
    conn = client.connect(path)
    if conn is None:
        return None, 0
    sock, pid = conn
    deadline = time.monotonic() + ASK_TIMEOUT

    def waiting() -> None:
        if time.monotonic() > deadline or (pid > 0 and client.stopped(client.process_state(pid))):
            raise TimeoutError("the server does not answer")

    try:
        sock.settimeout(client.POLL)
        sock.sendall(b"\xff")
        wire.send_message(sock, {"verb": verb})
        return wire.recv_message(sock, waiting), pid
    except (OSError, EOFError, ValueError):
        return None, pid
    finally:
        sock.close()


def _sockets(directory: str) -> list[str]:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, n) for n in names if n.startswith("s-") and "." not in n]


def _state_words(pid: int) -> str:
    state = client.process_state(pid)
    if state in ("T", "t"):
        return "is stopped (SIGSTOP, ^Z or a debugger)"
    if state is None or state in ("Z", "X"):
        return "is gone"
    return "does not answer"


def status() -> Result:
    directory = client.runtime_dir()
    on, why = client.mode()
    key = client.server_key()
    path = client.socket_path(key) if key else None
    data: dict[str, Any] = {
        "enabled": on and client._supported(),
        "decided_by": why,
        "setting": client.setting_path(),
        "directory": directory,
        "key": key,
        "socket": path,
        "running": None,
        "unresponsive": None,
        "others": [],
        "log": client.log_path(path) if path else None,
        "log_tail": _tail(client.log_path(path)) if path else [],
    }
    problems: list[Problem] = []
    if not data["enabled"]:
        if on:
            why = "this platform has no fork(), /proc or Unix socket descriptor passing"
        hint = "" if on else "; contextfork server enable turns it on"
        problems.append(Problem("warning", "server_disabled", f"command server off ({why}){hint}"))
    if key is None:
        problems.append(Problem("warning", "server_not_here", never_here()))
    reason = client.unsafe_dir_reason(directory) if os.path.lexists(directory) else None
    if reason:
        problems.append(Problem("error", "server_dir_unsafe", f"no server can run: {reason}"))
    else:
        if path:
            data["running"], pid = _ask(path, "status")
            if data["running"] is None and pid:
                data["unresponsive"] = {"pid": pid, "state": _state_words(pid)}
                problems.append(Problem("warning", "server_unresponsive",
                                        f"command server pid {pid} {_state_words(pid)}: commands "
                                        "run cold (contextfork server stop ends it)"))  # fmt: skip
        data["others"] = [
            info for p in _sockets(directory) if p != path and (info := _ask(p, "status")[0])
        ]
    lines = [_describe(data)]
    lines += [f"  another build's or context's server: pid {o['pid']}, {o['served']} served"
              for o in data["others"]]  # fmt: skip
    if data["log_tail"]:
        lines.append(f"  last in its log ({data['log']}): {data['log_tail'][-1]}")
    return Result("server status", data, problems, 1 if reason else 0, "\n".join(lines))


def never_here() -> str:
    """Why this process is never served (server_key() is None)."""
    try:
        if context.no_new_privs(context.confinement()):
            return ("this process has no_new_privs (a sandbox whose seccomp filters or Landlock "
                    "rules /proc does not show): its commands always run cold")  # fmt: skip
    except (OSError, ValueError, IndexError) as exc:
        return f"this process's context cannot be read from /proc ({exc}): commands run cold"
    return "commands run cold here"


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
    if data["unresponsive"]:
        stuck = data["unresponsive"]
        return (f"command server: pid {stuck['pid']} {stuck['state']}: every command runs cold "
                f"until it answers (contextfork server stop ends it); socket {data['socket']}")  # fmt: skip
    if info is None:
        state = "not running" + ("" if data["enabled"] else f" (off: {data['decided_by']})")
        return f"command server: {state}; socket {data['socket']}"
    age = time.time() - float(info["since"])
    return (f"command server: pid {info['pid']}, up {age:.0f} s, {info['served']} command(s) "
            f"served, {info['running']} running, exits after {info['idle']:.0f} s idle; "
            f"socket {info['socket']}")  # fmt: skip


def start() -> Result:
    """Start the server for this build and context (if none answers) and wait until it does."""
    directory = client.runtime_dir()
    reason = client.ensure_dir(directory)
    if reason:
        return Result("server start", None, [Problem("error", "server_dir_unsafe", reason)], 1,
                      f"cannot start the command server: {reason}")  # fmt: skip
    key = client.server_key()
    if key is None:
        why = never_here()
        return Result("server start", None, [Problem("error", "server_not_here", why)], 1,
                      f"cannot start the command server: {why}")  # fmt: skip
    path = client.socket_path(key)
    info, _pid = _ask(path, "status")
    if info is None:
        marker = path + ".starting"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(marker)  # asked for explicitly: no back-off
        proc = client.spawn(path, key)
        deadline = time.monotonic() + START_TIMEOUT
        while info is None and time.monotonic() < deadline:
            time.sleep(0.05)
            info, _pid = _ask(path, "status")
            if info is None and (proc is None or proc.poll() is not None):
                break  # it gave up (its log says why), or never started
        if info is None:
            info, _pid = _ask(path, "status")  # it gave up to another that started at once
    if info is None:
        said = [ln for ln in _tail(client.log_path(path)) if "not started" in ln]
        why = said[-1].split(": ", 2)[-1] if said else f"it did not answer within {START_TIMEOUT:.0f} s"
        return Result("server start", None, [Problem("error", "server_not_started", why)], 1,
                      f"the command server did not start: {why}")  # fmt: skip
    return Result("server start", info, [], 0, f"command server: pid {info['pid']}; socket {path}")


def stop(everything: bool = False) -> Result:
    """Stop this build's and context's server (``everything``: every server in the directory).
    One that does not answer (stopped, hung) is sent SIGTERM and SIGCONT: it is ours (its
    socket is in our private directory and the kernel says it runs as us)."""
    directory = client.runtime_dir()
    key = client.server_key()
    paths = _sockets(directory) if everything or key is None else [client.socket_path(key)]
    stopped: list[dict[str, Any]] = []
    for p in paths:
        info, pid = _ask(p, "stop")
        if info is None and pid > 0:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
                os.kill(pid, signal.SIGCONT)
                info = {"pid": pid, "signalled": True}
        if info is not None:
            stopped.append(info)
    text = (f"stopped {len(stopped)} command server(s)" if stopped
            else "no command server was running")  # fmt: skip
    return Result("server stop", {"stopped": stopped}, [], 0, text)


def choose(on: bool) -> Result:
    """`server enable|disable`: the choice every later command reads (client.mode), in the
    user's config directory. Disabling also stops this directory's servers."""
    from contextfork import atomic

    target = Path(client.setting_path())
    atomic.write_text(target, "on\n" if on else "off\n", mode=0o600)
    stopped = [] if on else stop(everything=True).data["stopped"]
    env = os.environ.get(client.ENV_MODE, "").strip().lower()
    overridden = env in client.ON + client.OFF and (env in client.ON) != on
    problems = [Problem("warning", "server_env_override",
                        f"{client.ENV_MODE}={env} in this environment overrides it")] if overridden else []  # fmt: skip
    word = "enabled" if on else "disabled"
    text = f"command server {word} ({target})" + (f"; stopped {len(stopped)}" if stopped else "")
    if overridden:
        text += f"; but {client.ENV_MODE}={env} here overrides it"
    return Result(f"server {'enable' if on else 'disable'}", {"enabled": on, "setting": str(target),
                  "stopped": stopped}, problems, 0, text)  # fmt: skip
