"""The command server: import once, then ``fork()`` a child per command.

It sits on top, beside ``entry.py`` (what each child runs); the rest of the server (the client,
the context check, the child's side of the protocol, the ``server`` verbs) is
``contextfork.server``, which imports nothing above it.

The parent is single-threaded (forking a threaded process copies locks held by other threads)
and never waits on a client: it accepts, tells a status request (answered in place, read as it
arrives) from a command (forked at once), reaps children, and sends each client the way its
command ended, as ``waitpid`` saw it (a command that returns has already sent its exit status
itself). A child reads its request within ``REQUEST_TIMEOUT``, checks that its client is in the
server's context (context.py: namespaces, limits, privileges… read from the client's own
``/proc`` entry) and that the environment its imports read is the client's, applies the rest
(descriptors 0-2, working directory, environment, umask, locale-dependent stdio), says it is
ready and starts the command on the client's ``go``. The server exits after
``CONTEXTFORK_SERVER_IDLE`` seconds without a command (600 by default), when its socket is
removed or replaced, on SIGTERM or SIGINT, or on ``contextfork server stop``.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import selectors
import signal
import socket
import sys
import time
from typing import Any, ClassVar

from contextfork import envvars
from contextfork.server import client, context, wire
from contextfork.server.child import REQUEST_TIMEOUT, log, run_child

#: Every contextfork module is imported before the server forks, except these: the MCP server and
#: the mini-swe-agent bridge pull in large third-party stacks (and mini-swe-agent reads its
#: config on import), and a long-lived command (``client.NOT_SERVED``) imports them itself.
NOT_PRELOADED = (
    "contextfork.__main__",
    "contextfork.daemon",  # this module: it runs as __main__
    "contextfork.githooks",
    "contextfork.harness.mcp",
    "contextfork.harness.minisweagent",
    "contextfork.server",
)
#: Third-party modules commands import lazily (templates, the store lock, Typer's help/errors).
THIRD_PARTY = ("jinja2", "filelock", "rich.console")
#: Read while importing, but of no effect on what a command does: the user's site directory
#: (its effect, a sys.path entry, is part of the key), the interpreter's build, and where the
#: tokenizer's vocabulary is cached (the same vocabulary from any cache).
IMPORT_ENV_IGNORED = frozenset({"HOME", "PYTHONUSERBASE", "_PYTHON_PROJECT_BASE",
                                "_PYTHON_SYSCONFIGDATA_NAME", "XDG_CACHE_HOME"})  # fmt: skip
DEFAULT_IDLE = 600  # seconds
TICK = 1.0
MAX_PENDING = 256  # connections that have not said what they are yet


def preload_names() -> list[str]:
    import pkgutil

    import contextfork

    ours = [m.name for m in pkgutil.walk_packages(contextfork.__path__, "contextfork.")]
    return [n for n in ours if not n.startswith(NOT_PRELOADED)] + list(THIRD_PARTY)


class _Recording(os._Environ):  # type: ignore[type-arg]
    """``os.environ`` while the server imports: which variables the imports read (a module
    that reads one at import keeps its value for every command; "*": the whole environment)."""

    read: ClassVar[set[str]] = set()

    def __getitem__(self, key: str) -> str:
        _Recording.read.add(key)
        return str(super().__getitem__(key))

    def __iter__(self) -> Any:
        _Recording.read.add("*")
        return super().__iter__()


def preload() -> dict[str, str | None]:
    """Import what commands need; what fails is logged and left to the command to import (and
    report) itself. Returns what the imports read of the environment: a command is served only
    with the same values (``_env_refusal``)."""
    _Recording.read = set()
    os.environ.__class__ = _Recording
    try:
        _import_all()
    finally:
        os.environ.__class__ = os._Environ
    names = _Recording.read - IMPORT_ENV_IGNORED
    if "*" in names:
        log("an import read the whole environment: only a caller with the same one is served")
        names = set(os.environ) | {"*"}
    unkeyed = sorted(names - set(context.KEYED_ENV) - {"*"})
    if unkeyed:
        log(f"imports read {', '.join(unkeyed)}: a caller with other values runs cold")
    return {n: os.environ.get(n) for n in sorted(names)}


def _import_all() -> None:
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


class _Pending:
    """A connection whose first byte has not come yet, or a status request still arriving."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.accepted = time.clock_gettime(time.CLOCK_BOOTTIME)
        self.status: bytearray | None = None


class Server:
    def __init__(self, path: str, key: str, idle: float, import_env: dict[str, str | None] | None = None) -> None:  # fmt: skip
        self.path, self.key, self.idle = path, key, idle
        self.import_env = import_env or {}
        self.children: dict[int, socket.socket] = {}
        self.running: set[int] = set()  # children whose command has started
        self.pending: dict[socket.socket, _Pending] = {}
        self.last_activity = time.monotonic()
        self.served = 0
        self.started = time.time()
        self.stopping = False
        self.why = "stopped"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.inode: int | None = None
        # A child writes its pid here when its command starts: `served` counts commands, not
        # connections (a status request, a refusal, a silent client).
        self.started_r, self.started_w = os.pipe()
        os.set_blocking(self.started_r, False)
        self.sel: selectors.BaseSelector | None = None

    def bind(self) -> None:
        """Bind beside the final name and rename over it: a client never sees a socket that is
        not listening yet, and two servers starting at once leave one (the other sees its name
        replaced and exits). A path longer than a socket address holds is bound through its
        directory's descriptor (client.address)."""
        tmp = os.path.join(os.path.dirname(self.path), f"t-{os.getpid()}")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        where, dirfd = client.address(tmp)
        try:
            self.sock.bind(where)
        finally:
            if dirfd is not None:
                os.close(dirfd)
        os.chmod(tmp, 0o600)
        self.sock.listen(64)
        self.sock.setblocking(False)
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
        self.sel = sel = selectors.DefaultSelector()
        sel.register(self.sock, selectors.EVENT_READ, "accept")
        sel.register(rfd, selectors.EVENT_READ, "signal")
        sel.register(self.started_r, selectors.EVENT_READ, "started")
        try:
            while not self.stopping:
                wait = min([TICK, *(p.deadline - time.monotonic() for p in self.pending.values())])
                for key, _ in sel.select(max(wait, 0.01)):
                    if key.data == "accept":
                        self._accept()
                    elif key.data == "signal":
                        with contextlib.suppress(BlockingIOError):
                            os.read(rfd, 512)
                    elif key.data == "pending":
                        self._readable(key.fileobj)  # type: ignore[arg-type]
                self._drain_started()
                self._expire()
                self._reap()
                if not self.children and not self.pending:
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
        for conn in list(self.pending):
            self._drop(conn)
        for pid in list(self.children):  # stopped while commands ran: they finish on their own
            self.children.pop(pid).close()

    def _accept(self) -> None:
        """Every connection waiting, none read here: a client that says nothing (or slowly)
        holds up nobody but itself."""
        while True:
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # EMFILE and the like: the client runs cold
                log(f"cannot accept a connection: {exc.strerror}")
                return
            self.last_activity = time.monotonic()
            if wire.peer_uid(conn) not in (None, os.getuid()):
                conn.close()
                continue
            conn.setblocking(False)
            if len(self.pending) >= MAX_PENDING:  # a flood of silent clients: the oldest goes
                self._drop(next(iter(self.pending)))
            self.pending[conn] = _Pending(time.monotonic() + REQUEST_TIMEOUT)
            if self.sel is not None:
                self.sel.register(conn, selectors.EVENT_READ, "pending")

    def _drop(self, conn: socket.socket) -> None:
        self.pending.pop(conn, None)
        if self.sel is not None:
            with contextlib.suppress(KeyError, ValueError):
                self.sel.unregister(conn)
        conn.close()

    def _expire(self) -> None:
        now = time.monotonic()
        for conn in [c for c, p in self.pending.items() if p.deadline < now]:
            self._drop(conn)

    def _readable(self, conn: socket.socket) -> None:
        """`contextfork server status|stop` talk to the parent itself: a one-byte tag tells
        them from a command, whose request always starts with a length header (never 0xff)."""
        state = self.pending[conn]
        try:
            if state.status is None:
                tag = conn.recv(1, socket.MSG_PEEK)
                if tag != b"\xff":
                    if tag:
                        self._fork(conn)
                    else:
                        self._drop(conn)
                    return
                state.status = bytearray()
            chunk = conn.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            self._drop(conn)
            return
        if not chunk:
            self._drop(conn)
            return
        state.status += chunk
        body = bytes(state.status[1:])
        if len(body) >= 4 and len(body) >= 4 + (size := int.from_bytes(body[:4], "big")):
            self._answer(conn, body[4 : 4 + size], size)

    def _answer(self, conn: socket.socket, body: bytes, size: int) -> None:
        try:
            verb = wire.decode(body, size).get("verb")
            info = {"pid": os.getpid(), "key": self.key, "served": self.served,
                    "running": len(self.running), "since": self.started, "idle": self.idle,
                    "socket": self.path}  # fmt: skip
            conn.setblocking(True)
            conn.settimeout(1)  # a few hundred bytes into an empty socket buffer
            wire.send_message(conn, info)
            if verb == "stop":
                self.why = "asked to stop (contextfork server stop)"
                self.stopping = True
        except (OSError, EOFError, ValueError):
            pass
        self._drop(conn)

    def _fork(self, conn: socket.socket) -> None:
        accepted = self.pending.pop(conn).accepted
        if self.sel is not None:
            self.sel.unregister(conn)
        try:
            pid = os.fork()
        except OSError as exc:  # EAGAIN/ENOMEM: this command runs cold, the server goes on
            log(f"cannot fork a command: {exc.strerror}")
            conn.close()
            return
        if pid == 0:  # the child never returns from here
            code = 1
            try:
                self._become_child(conn)
                from contextfork import entry  # lazy: preload imported it under its recording

                code = run_child(conn, self.key, self.import_env, self.started_w, accepted,
                                 entry.main)
            finally:
                os._exit(code)
        self.children[pid] = conn

    def _become_child(self, conn: socket.socket) -> None:
        """Nothing of the parent's but its code: its socket, other clients' connections (they
        must see EOF when the server is gone), its selector and pipes."""
        if self.sel is not None:
            with contextlib.suppress(OSError):
                self.sel.close()
        self.sock.close()
        for other in [*self.children.values(), *self.pending]:
            other.close()
        os.close(self.started_r)
        conn.setblocking(True)

    def _drain_started(self) -> None:
        while True:
            try:
                data = os.read(self.started_r, 4096)
            except (BlockingIOError, InterruptedError):
                return
            if not data:
                return
            for i in range(0, len(data) - 3, 4):
                pid = int.from_bytes(data[i : i + 4], sys.byteorder)
                self.served += 1
                if pid in self.children:
                    self.running.add(pid)

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            self.running.discard(pid)
            if conn is None:
                continue
            self.last_activity = time.monotonic()
            if os.WIFSIGNALED(status):
                outcome = {"signal": os.WTERMSIG(status)}
            else:
                outcome = {"exit": os.waitstatus_to_exitcode(status)}
            with contextlib.suppress(OSError):
                conn.settimeout(1)
                wire.send_message(conn, outcome)
            conn.close()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m contextfork.daemon SOCKET KEY", file=sys.stderr)
        return 2
    path, key = argv
    directory = os.path.dirname(path)
    if client.ensure_dir(directory) is not None:
        return 1
    own = client.server_key()
    if own is None or own.split("-")[0] != key.split("-")[0]:
        log("not started: the installed code changed since the client looked" if own else
            "not started: this process's context cannot be read, or it has no_new_privs")  # fmt: skip
        return 1
    if own != key:
        log("not started: its context (namespaces, limits, privileges, interpreter) is not its "
            "client's")  # fmt: skip
        return 1
    idle = float(envvars.positive_int(client.ENV_IDLE, DEFAULT_IDLE))
    started = time.monotonic()
    import_env = preload()
    gc.collect()
    gc.freeze()  # a child's collections never walk (and so copy) the server's objects
    server = Server(path, key, idle, import_env)
    try:
        server.bind()
    except OSError as exc:
        log(f"not started: cannot listen on {path}: {exc.strerror or exc}")
        return 1
    log(f"started for build {key} in {time.monotonic() - started:.2f} s "
        f"(python {sys.version.split()[0]}, exits after {idle:.0f} s idle)")
    server.loop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
