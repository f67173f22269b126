"""The command server: import once, then ``fork()`` a child per command.

The parent is single-threaded (forking a threaded process copies locks held by other threads)
and does four things: accept, fork, reap children, and send each client the way its command
ended, as ``waitpid`` saw it (a command that returns has already sent its exit status itself).
Everything the command needs from the client is applied in the child before the command runs:
descriptors 0-2, working directory, environment, umask, locale-dependent stdio; a request that
names other code than the server runs is refused there, before anything runs. The server exits
after ``CONTEXTFORK_SERVER_IDLE`` seconds without a command (600 by default), when its socket
is removed or replaced, on SIGTERM or SIGINT, or on ``contextfork server stop``.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import gc
import importlib
import io
import os
import selectors
import signal
import socket
import sys
import threading
import time
from typing import Any

from contextfork import envvars, testhooks
from contextfork.server import client

#: Every contextfork module is imported before the server forks, except these: the MCP server and
#: the mini-swe-agent bridge pull in large third-party stacks (and mini-swe-agent reads its
#: config on import), and a long-lived command (``client.NOT_SERVED``) imports them itself.
NOT_PRELOADED = (
    "contextfork.__main__",
    "contextfork.githooks",
    "contextfork.harness.mcp",
    "contextfork.harness.minisweagent",
    "contextfork.server",
)
#: Third-party modules commands import lazily (templates, the store lock, Typer's help/errors).
THIRD_PARTY = ("jinja2", "filelock", "rich.console")
DEFAULT_IDLE = 600  # seconds
#: The first read of a request (with its descriptors); a larger request is read on after it, so
#: a command does not allocate the 16 MiB a request may reach.
FIRST_READ = 64 << 10
TICK = 1.0
_reported = threading.Event()  # a served child has sent its exit status to its client


def preload_names() -> list[str]:
    import pkgutil

    import contextfork

    ours = [m.name for m in pkgutil.walk_packages(contextfork.__path__, "contextfork.")]
    return [n for n in ours if not n.startswith(NOT_PRELOADED)] + list(THIRD_PARTY)


def log(message: str) -> None:
    """One line to the server's log (its stderr: ``<socket>.log``, see ``client.spawn``)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"{stamp}Z pid {os.getpid()}: {message}\n")
        sys.stderr.flush()


def preload() -> None:
    """Import what commands need; what fails is logged and left to the command to import (and
    report) itself."""
    for name in preload_names():
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - the command imports it itself and reports
            log(f"not preloaded: {name}: {type(exc).__name__}: {exc}")
    try:
        from contextfork.cli import app

        app.warm()
    except Exception as exc:  # noqa: BLE001 - each command builds its own instead
        log(f"commands not prebuilt: {type(exc).__name__}: {exc}")
    try:
        from contextfork import tokens

        tokens.count_tokens("warm")  # the tokenizer's tables: the largest single load a fold pays
    except Exception as exc:  # noqa: BLE001 - loaded on demand instead
        log(f"tokenizer not loaded: {type(exc).__name__}: {exc}")


class Server:
    def __init__(self, path: str, key: str, idle: float) -> None:
        self.path, self.key, self.idle = path, key, idle
        self.children: dict[int, socket.socket] = {}
        self.last_activity = time.monotonic()
        self.served = 0
        self.started = time.time()
        self.stopping = False
        self.why = "stopped"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.inode: int | None = None

    def bind(self) -> None:
        """Bind beside the final name and rename over it: a client never sees a socket that is
        not listening yet, and two servers starting at once leave one (the other sees its name
        replaced and exits)."""
        tmp = f"{self.path}.{os.getpid()}.tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        self.sock.bind(tmp)
        os.chmod(tmp, 0o600)
        self.sock.listen(64)
        os.replace(tmp, self.path)
        self.inode = os.stat(self.path).st_ino
        with contextlib.suppress(OSError):
            os.unlink(self.path + ".starting")

    def still_ours(self) -> bool:
        try:
            return os.stat(self.path).st_ino == self.inode
        except OSError:
            return False

    def loop(self) -> None:
        rfd, wfd = os.pipe()
        os.set_blocking(wfd, False)
        signal.set_wakeup_fd(wfd)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        sel = selectors.DefaultSelector()
        sel.register(self.sock, selectors.EVENT_READ, "accept")
        sel.register(rfd, selectors.EVENT_READ, "signal")
        try:
            while not self.stopping:
                for key, _ in sel.select(TICK):
                    if key.data == "accept":
                        self._accept()
                    else:
                        with contextlib.suppress(BlockingIOError):
                            os.read(rfd, 512)
                self._reap()
                if not self.children:
                    if not self.still_ours():
                        self.why = "its socket was removed or replaced"
                        break
                    if time.monotonic() - self.last_activity > self.idle:
                        self.why = f"idle for {self.idle:.0f} s"
                        break
        finally:
            sel.close()
            self.close()
            log(f"stopped ({self.why}) after {self.served} command(s)")

    def _stop(self, signum: int, _frame: Any) -> None:
        self.why = f"signal {signal.Signals(signum).name}"
        self.stopping = True

    def close(self) -> None:
        self.sock.close()
        if self.still_ours():
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        for pid in list(self.children):  # stopped while commands ran: they finish on their own
            self.children.pop(pid).close()

    def _accept(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        self.last_activity = time.monotonic()
        if client.peer_uid(conn) not in (None, os.getuid()):
            conn.close()
            return
        if self._status_request(conn):
            return
        try:
            pid = os.fork()
        except OSError as exc:  # EAGAIN/ENOMEM: this command runs cold, the server goes on
            log(f"cannot fork a command: {exc.strerror}")
            conn.close()
            return
        if pid == 0:  # the child never returns from here
            self.sock.close()
            for other in self.children.values():  # other clients must see EOF when we are gone
                other.close()
            code = 1
            try:
                code = run_child(conn, self.key)
            finally:
                os._exit(code)
        self.served += 1
        self.children[pid] = conn

    def _status_request(self, conn: socket.socket) -> bool:
        """`contextfork server status|stop` talk to the parent itself: a one-byte tag tells
        them from a command, whose request always starts with a length header (never 0xff)."""
        try:
            conn.settimeout(1)
            tag = conn.recv(1, socket.MSG_PEEK)
            if tag != b"\xff":
                conn.settimeout(None)
                return False
            conn.recv(1)
            verb = client.recv_message(conn).get("verb")
            info = {"pid": os.getpid(), "key": self.key, "served": self.served,
                    "running": len(self.children), "since": self.started, "idle": self.idle,
                    "socket": self.path}  # fmt: skip
            client.send_message(conn, info)
            if verb == "stop":
                self.why = "asked to stop (contextfork server stop)"
                self.stopping = True
        except (OSError, EOFError, ValueError):
            pass
        conn.close()
        return True

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is None:
                continue
            self.last_activity = time.monotonic()
            if os.WIFSIGNALED(status):
                outcome = {"signal": os.WTERMSIG(status)}
            else:
                outcome = {"exit": os.waitstatus_to_exitcode(status)}
            with contextlib.suppress(OSError):
                client.send_message(conn, outcome)
            conn.close()


def run_child(conn: socket.socket, key: str) -> int:
    """Become the client's command and run it; the return value is the exit status."""
    for s in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
        signal.signal(s, signal.SIG_DFL if s != signal.SIGINT else signal.default_int_handler)
    signal.set_wakeup_fd(-1)
    atexit._clear()  # the server's handlers are not the command's
    try:
        frame, fds, _flags, _addr = socket.recv_fds(conn, FIRST_READ, 3)
        request = _parse_request(frame, conn, fds)
    except (OSError, EOFError, ValueError) as exc:
        with contextlib.suppress(OSError):
            client.send_message(conn, {"refused": str(exc)})
        return 1
    if request.get("key") != key:
        for fd in fds:
            os.close(fd)
        with contextlib.suppress(OSError):
            client.send_message(conn, {"refused": "stale"})
        return 1
    try:
        _become(request, fds)
    except (OSError, ValueError, TypeError) as exc:
        with contextlib.suppress(OSError):
            client.send_message(conn, {"refused": f"set-up failed: {exc}"})
        return 1
    # Its own process group, so a signal for the command reaches its git children too, as a
    # terminal's ^C reaches a cold command's whole foreground group.
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    client.send_message(conn, {"pid": os.getpid()})
    threading.Thread(target=_watch_client, args=(conn,), daemon=True).start()
    argv = [str(a) for a in request["argv"]]
    from contextfork import entry

    code = 1
    try:
        code = entry.main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if isinstance(exc.code, str):
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
        client.send_message(conn, {"exit": code})


def _parse_request(frame: bytes, conn: socket.socket, fds: list[int]) -> dict[str, Any]:
    if len(fds) != 3:
        raise ValueError("expected three descriptors")
    if len(frame) < 4:
        raise ValueError("short request")
    size = int.from_bytes(frame[:4], "big")
    body = frame[4:]
    if size > client.MAX_MESSAGE:
        raise ValueError("request too large")
    if len(body) < size:
        body += client.recv_exact(conn, size - len(body))
    request = client.decode(body[:size], size)
    if not isinstance(request.get("argv"), list):
        raise ValueError("malformed request")  # noqa: TRY004 - a protocol error
    return request


def _become(request: dict[str, Any], fds: list[int]) -> None:
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    env = request["env"]
    if not isinstance(env, dict):
        raise TypeError("env is not an object")
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in env.items()})
    os.umask(int(request["umask"]))
    _reopen_stdio()
    sys.argv = [str(request.get("argv0") or "contextfork"), *map(str, request["argv"])]


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


def _reopen_stdio() -> None:
    enc, errors = _stdio_encoding()
    tty = os.isatty(1)
    # Open for the rest of the process, like the interpreter's own (sys.__stdout__ & co. keep
    # writing to descriptors 0-2, which now are the client's).
    sys.stdin = io.TextIOWrapper(open(0, "rb", closefd=False), encoding=enc, errors=errors)  # noqa: SIM115
    sys.stdout = io.TextIOWrapper(
        open(1, "wb", closefd=False), encoding=enc, errors=errors, line_buffering=tty  # noqa: SIM115
    )
    sys.stderr = io.TextIOWrapper(
        open(2, "wb", closefd=False), encoding=enc, errors="backslashreplace",  # noqa: SIM115
        line_buffering=True,
    )  # fmt: skip


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


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m contextfork.server.daemon SOCKET KEY", file=sys.stderr)
        return 2
    path, key = argv
    directory = os.path.dirname(path)
    if client.ensure_dir(directory) is not None:
        return 1
    if key != client.build_key():
        log("not started: the installed code changed since the client looked")
        return 1
    idle = float(envvars.positive_int(client.ENV_IDLE, DEFAULT_IDLE))
    started = time.monotonic()
    preload()
    gc.collect()
    gc.freeze()  # a child's collections never walk (and so copy) the server's objects
    server = Server(path, key, idle)
    try:
        server.bind()
    except OSError as exc:
        log(f"not started: cannot listen on {path}: {exc.strerror}")
        if exc.errno not in (errno.EADDRINUSE, errno.ENAMETOOLONG):
            raise
        return 1
    log(f"started for build {key} in {time.monotonic() - started:.2f} s "
        f"(python {sys.version.split()[0]}, exits after {idle:.0f} s idle)")
    server.loop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
