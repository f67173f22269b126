"""A served command's process: a fork of the server that becomes the client's command.

It reads the request (within ``REQUEST_TIMEOUT``), refuses a client whose context or
import-time environment is not the server's (peer.py), takes the client's descriptors 0-2 (a
descriptor the client had closed stays closed), working directory, environment and umask,
rebuilds stdio for the client's locale, says it is ready, and runs ``entry.main`` (what a cold
process runs) only on the client's ``go``: a client that gave up by then runs the command
itself, and this process exits without running anything.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from contextfork import testhooks
from contextfork.server import wire
from contextfork.server.peer import refusal

#: The first read of a request (with its descriptors); a larger request is read on after it, so
#: a command does not allocate the 16 MiB a request may reach.
FIRST_READ = 64 << 10
REQUEST_TIMEOUT = 10.0  # a client that connects and does not say what to run is dropped
_reported = threading.Event()  # a served child has sent its exit status to its client
_servers_stdio: list[Any] = []


def run_child(conn: socket.socket, key: str, import_env: dict[str, str | None], started: int,
              accepted: float, main: Callable[[list[str]], int]) -> int:  # fmt: skip
    """Become the client's command and run it with ``main`` (``entry.main``, given by the
    server on top); the return value is the exit status. ``started`` is where to write this pid
    once the command starts (the server counts them), ``accepted`` when the connection was
    accepted (peer.refusal)."""
    for s in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
        signal.signal(s, signal.SIG_DFL if s != signal.SIGINT else signal.default_int_handler)
    signal.set_wakeup_fd(-1)
    atexit._clear()  # the server's handlers are not the command's
    request: dict[str, Any] = {}
    try:
        conn.settimeout(REQUEST_TIMEOUT)
        frame = conn.recv(FIRST_READ)
        request = _read_frame(frame, conn)
        why = _malformed(request) or refusal(conn, request.get("key"), key, accepted)
        if why is None:
            why = _env_refusal(request, import_env) or _take_context(request)
    except (OSError, EOFError, ValueError) as exc:
        why = str(exc) or type(exc).__name__
    if why is not None:
        log(f"refused a command (it runs cold): {why}")  # our stderr is still the server's log
        with contextlib.suppress(OSError):
            wire.send_message(conn, {"refused": why})
        return 1
    # Its own process group, so a signal for the command reaches its git children too, as a
    # terminal's ^C reaches a cold command's whole foreground group.
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    # Ready; the client's descriptors come with its go: none is held in a queue for a client that
    # gave up (its caller would wait for an end of file that never comes).
    try:
        wire.send_message(conn, {"pid": os.getpid()})
        _take_stdio(request, _await_go(conn, 3 - len(request["closed"])))
    except (OSError, EOFError, ValueError):
        return 1  # the client gave up (it runs the command itself) or broke the protocol
    conn.settimeout(None)
    with contextlib.suppress(OSError):
        os.write(started, os.getpid().to_bytes(4, sys.byteorder))
        os.close(started)
    threading.Thread(target=_watch_client, args=(conn,), daemon=True).start()
    argv = [str(a) for a in request["argv"]]
    code = 1
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if isinstance(exc.code, str) and sys.stderr is not None:
            print(exc.code, file=sys.stderr)  # as the interpreter does for sys.exit("message")
    finally:
        with contextlib.suppress(Exception):
            atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
    _report_exit(conn, code & 0xFF)
    testhooks.pause_point("served:reported")  # a slow teardown, for the test that nobody waits
    return code


def _env_refusal(request: dict[str, Any], import_env: dict[str, str | None]) -> str | None:
    """Why a client whose environment differs from the server's in what its imports read (and
    so kept: typer's TYPER_USE_RICH, …) must run cold; None: the same."""
    env = request.get("env")
    if not isinstance(env, dict):
        return "env is not an object"
    if "*" in import_env:
        differ = set(env) ^ (set(import_env) - {"*"}) or {
            n for n in import_env if n != "*" and env.get(n) != import_env[n]
        }
    else:
        differ = {n for n, v in import_env.items() if env.get(n) != v}
    return f"the server was started with other {', '.join(sorted(differ))}" if differ else None


def _report_exit(conn: socket.socket, code: int) -> None:
    """Done: give the client its descriptors back (its caller sees end of file now) and its
    exit status, before this process's own teardown (unmapping a copy of the server, ~5 ms),
    which the client then does not wait for. The parent reports again after waitpid: a client
    that already has its status has closed the connection by then."""
    _reported.set()  # the client's close after this is no lost client
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
    with contextlib.suppress(OSError):
        wire.send_message(conn, {"exit": code})


def _read_frame(frame: bytes, conn: socket.socket) -> dict[str, Any]:
    """One message whose first bytes are ``frame`` (the rest is read from ``conn``)."""
    if len(frame) < 4:
        frame += wire.recv_exact(conn, 4 - len(frame))
    size = int.from_bytes(frame[:4], "big")
    body = frame[4:]
    if size > wire.MAX_MESSAGE:
        raise ValueError("request too large")
    if len(body) < size:
        body += wire.recv_exact(conn, size - len(body))
    return wire.decode(body[:size], size)


def log(message: str) -> None:
    """One line to the server's log (its stderr: ``<socket>.log``, see ``client.spawn``)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(f"{stamp}Z pid {os.getpid()}: {message}\n")
        sys.stderr.flush()


def _await_go(conn: socket.socket, count: int) -> list[int]:
    """The client's go and its ``count`` open descriptors of 0-2 (this process exits on an
    error, closing what came)."""
    frame, fds, _flags, _addr = socket.recv_fds(conn, 1024, 3)
    if _read_frame(frame, conn).get("go") is not True or len(fds) != count:
        raise ValueError("no go from the client")
    return fds


def _malformed(request: dict[str, Any]) -> str | None:
    closed = request.setdefault("closed", [])
    if not isinstance(request.get("argv"), list) or not isinstance(request.get("env"), dict):
        return "malformed request"
    if not isinstance(closed, list) or not set(closed) <= {0, 1, 2} or len(set(closed)) != len(closed):
        return "malformed request: closed descriptors"
    return None


def _take_context(request: dict[str, Any]) -> str | None:
    """The client's working directory, environment and umask (None: taken; else why not)."""
    try:
        os.chdir(request["cwd"])
        umask = int(request["umask"])
    except (OSError, KeyError, TypeError, ValueError) as exc:
        return f"set-up failed: {exc}"
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in request["env"].items()})
    time.tzset()  # TZ, as a cold interpreter reads it
    os.umask(umask)
    sys.argv = [str(request.get("argv0") or "contextfork"), *map(str, request["argv"])]
    return None


def _take_stdio(request: dict[str, Any], fds: list[int]) -> None:
    """The client's descriptors on 0-2 (a closed one stays closed: the command's first open()
    gets it, as it would have cold) and streams over them."""
    closed = set(request["closed"])
    given = iter(fds)
    for target in (0, 1, 2):
        if target in closed:
            with contextlib.suppress(OSError):
                os.close(target)
            continue
        fd = next(given)
        os.dup2(fd, target)
        os.close(fd)
    _reopen_stdio(closed)


def _stdio_encoding() -> tuple[str, str]:
    """What the interpreter would pick for the client's environment: PYTHONIOENCODING (an
    encoding alone means strict), UTF-8 mode (PYTHONUTF8=1, or the C/POSIX locale, PEP 540),
    else the locale's encoding, with surrogateescape in the C-like locales (C, POSIX and the
    PEP 538 coercion targets)."""
    import locale

    forced_enc, _, forced_errors = os.environ.get("PYTHONIOENCODING", "").partition(":")
    try:
        locale.setlocale(locale.LC_CTYPE, "")
        name = locale.setlocale(locale.LC_CTYPE)
    except locale.Error:
        name = "C"
    c_like = name in ("C", "POSIX")
    utf8_mode = os.environ.get("PYTHONUTF8", "1" if c_like else "0") == "1"
    encoding = forced_enc or ("utf-8" if utf8_mode else locale.getpreferredencoding(False))
    if forced_errors:
        errors = forced_errors
    elif forced_enc:
        errors = "strict"
    elif utf8_mode or c_like or name in ("C.UTF-8", "C.utf8", "UTF-8"):
        errors = "surrogateescape"
    else:
        errors = "strict"
    return encoding, errors


def _reopen_stdio(closed: set[int]) -> None:
    """The client's streams as its interpreter would have made them (PYTHONUNBUFFERED: written
    through); None for a descriptor the client had closed, as a cold interpreter sets (and
    ``print`` then writes nothing)."""
    enc, errors = _stdio_encoding()
    tty = 1 not in closed and os.isatty(1)
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    # Open for the rest of the process, like the interpreter's own (sys.__stdout__ & co. keep
    # writing to descriptors 0-2, which now are the client's).
    how = [("rb", errors, False), ("wb", errors, tty), ("wb", "backslashreplace", True)]
    streams: list[Any] = [
        None if fd in closed else io_wrapper(fd, mode, enc, errs, lines, unbuffered and fd > 0)
        for fd, (mode, errs, lines) in enumerate(how)
    ]
    # The server's own stay referenced: freed, they would flush what they hold into the client.
    _servers_stdio.extend((sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__))
    sys.stdin, sys.stdout, sys.stderr = streams
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams  # type: ignore[misc]


def io_wrapper(fd: int, how: str, encoding: str, errors: str, line_buffering: bool,
               unbuffered: bool = False) -> Any:  # fmt: skip
    import io

    raw = open(fd, how, buffering=0 if unbuffered else -1, closefd=False)  # noqa: SIM115
    return io.TextIOWrapper(raw, encoding=encoding, errors=errors, line_buffering=line_buffering,
                            write_through=unbuffered)  # fmt: skip


def _watch_client(conn: socket.socket) -> None:
    """A client that is gone (killed, its terminal closed) takes its command with it, as it
    would have had the command run in its own process: git children included, which a kill of
    the client's process group cannot reach here."""
    try:
        while conn.recv(64):
            pass
    except OSError:
        pass
    if _reported.is_set():
        return
    with contextlib.suppress(OSError):
        if os.getpgrp() == os.getpid():
            os.killpg(0, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


