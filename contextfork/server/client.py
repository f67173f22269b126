"""The console script's first step: hand the command to a warm server, or say it cannot.

Stdlib only and cheap (this runs before every command). ``serve`` returns the command's exit
status when a server ran it, or None when the caller must run it in this process. None is only
ever returned before the server has started the command: a command never runs twice.
"""

from __future__ import annotations

import marshal
import os
import stat as _stat  # loaded by os already
import sys
import time

TYPE_CHECKING = False  # not typing's: importing typing costs ~9 ms on every command's path
if TYPE_CHECKING:
    import _socket
    import signal
    from typing import Any
else:
    # The C modules (`signal` and `socket` import enum, ~4 ms each); `_socket` and `zlib` are
    # imported where a server is really asked, so a command never served (the status line,
    # CONTEXTFORK_SERVER=off) pays for neither.
    import _signal as signal

ENV_MODE = "CONTEXTFORK_SERVER"  # off | auto (default)
ENV_DIR = "CONTEXTFORK_SERVER_DIR"
ENV_IDLE = "CONTEXTFORK_SERVER_IDLE"  # seconds without a command before the server exits
OFF = ("off", "0", "no", "false")
#: Never served: long-lived commands (nothing to gain, they own their stdio for minutes), the
#: server's own verbs, and the status line, whose cold path is already lean (measured: 34 ms cold,
#: 37 ms served, bench/hook_latency.py).
NOT_SERVED = frozenset({"mcp", "pi-worker", "proxy", "run", "server", "statusline", "--version",
                        "-V"})
_SHELL_FLAGS = ("--install-completion", "--show-completion")
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
_HEADER_SIZE = 4  # a big-endian length before each marshal body
MAX_MESSAGE = 16 << 20
LOG_LIMIT = 256 << 10
_SPAWN_BACKOFF = 10.0  # seconds between two attempts to start a server that does not come up


def enabled(env: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    return env.get(ENV_MODE, "auto").strip().lower() not in OFF and _supported()


def _supported() -> bool:
    if not hasattr(os, "fork"):
        return False
    import _socket

    return hasattr(_socket, "AF_UNIX") and hasattr(_socket, "SCM_RIGHTS")


def runtime_dir(env: dict[str, str] | os._Environ[str] = os.environ) -> str:
    explicit = env.get(ENV_DIR)
    if explicit:
        return explicit
    base = env.get("XDG_RUNTIME_DIR") or env.get("TMPDIR") or "/tmp"  # noqa: S108 - checked below
    return os.path.join(base, f"contextfork-{os.getuid()}")


def unsafe_dir_reason(path: str) -> str | None:
    """Why ``path`` must not hold our socket (None when it may): it has to be a real directory
    of ours that nobody else can write to, or another user could answer in our place."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot stat {path}: {exc.strerror}"
    if not _stat.S_ISDIR(st.st_mode):  # lstat: a symlink to a directory is refused too
        return f"{path} is not a directory"
    if st.st_uid != os.getuid():
        return f"{path} belongs to uid {st.st_uid}"
    if st.st_mode & 0o077:
        return f"{path} is open to other users (mode {st.st_mode & 0o777:o})"
    return None


def ensure_dir(path: str) -> str | None:
    """Create the directory when it is missing (on every command: one lstat when it exists)."""
    if not os.path.lexists(path):
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError as exc:
            return f"cannot create {path}: {exc.strerror}"
    return unsafe_dir_reason(path)


def package_dir() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_key(pkg: str | None = None) -> str:
    """Names the code a server runs: the interpreter, this package's files (path, size, mtime)
    and the site directory it was installed into. An edit, an upgrade or another venv gives
    another key, so a server never runs stale code; it is a cache key, not a security check."""
    pkg = pkg or package_dir()
    parts = [sys.executable, sys.version, pkg]
    stack = [pkg, os.path.join(os.path.dirname(pkg), "templates")]
    while stack:
        top = stack.pop()
        try:
            entries = sorted(os.scandir(top), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            if e.name == "__pycache__" or e.name.startswith("."):
                continue
            if e.is_dir(follow_symlinks=False):
                stack.append(e.path)
            elif e.name.endswith((".py", ".j2", ".json", ".ts", ".md", ".toml")):
                st = e.stat(follow_symlinks=False)
                parts.append(f"{e.path}:{st.st_size}:{st.st_mtime_ns}")
    site = os.path.dirname(pkg)
    try:  # noqa: SIM105 - contextlib is one more import on every command's path
        parts.append(str(os.stat(site).st_mtime_ns))  # a package installed or removed beside us
    except OSError:
        pass
    blob = "\n".join(parts).encode("utf-8", "surrogateescape")
    import zlib

    return f"{zlib.crc32(blob):08x}{zlib.adler32(blob):08x}{len(parts):04x}"


def socket_path(key: str, env: dict[str, str] | os._Environ[str] = os.environ) -> str:
    return os.path.join(runtime_dir(env), f"s-{key}")


def send_message(sock: _socket.socket, obj: Any, fds: list[int] | None = None) -> None:
    """One frame: a 4-byte length and a marshal body (both ends are this package, same user:
    the socket's directory and the peer's uid are checked before anything is read)."""
    import _socket

    frame = len(body := marshal.dumps(obj)).to_bytes(_HEADER_SIZE, "big") + body
    if fds:
        rights = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)
        sent = sock.sendmsg([frame], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)])
        frame = frame[sent:]
    if frame:
        sock.sendall(frame)


def recv_exact(sock: _socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return bytes(buf)


def recv_message(sock: _socket.socket) -> dict[str, object]:
    size = int.from_bytes(recv_exact(sock, _HEADER_SIZE), "big")
    return decode(recv_exact(sock, size), size)


def decode(body: bytes, size: int) -> dict[str, object]:
    if size > MAX_MESSAGE:
        raise ValueError(f"message of {size} bytes")
    # Only ever from this package in a process of the same user (directory mode and peer uid
    # checked before a byte is read), who could run any code as us anyway.
    obj = marshal.loads(body)  # noqa: S302
    if not isinstance(obj, dict):
        raise ValueError("message is not an object")  # noqa: TRY004 - a protocol error
    return obj


def peer_uid(sock: _socket.socket) -> int | None:
    import _socket

    so_peercred: int | None = getattr(_socket, "SO_PEERCRED", None)
    if so_peercred is None:
        return None
    creds = sock.getsockopt(_socket.SOL_SOCKET, so_peercred, 12)  # struct ucred: pid, uid, gid
    return int.from_bytes(creds[4:8], sys.byteorder, signed=True)


def _connect(path: str) -> _socket.socket | None:
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    uid = peer_uid(sock)
    if uid is not None and uid != os.getuid():
        sock.close()
        return None
    return sock


def _request(args: list[str], key: str) -> dict[str, object]:
    mask = os.umask(0o022)
    os.umask(mask)
    return {
        "argv": args,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "umask": mask,
        "key": key,
        "argv0": sys.argv[0] if sys.argv else "contextfork",
    }


def spawn(path: str, key: str) -> bool:
    """Start a server for ``key`` in the background, detached from this process's session and
    stdio (a harness waiting for a hook's output must not wait for the server too). At most one
    attempt per ``_SPAWN_BACKOFF`` seconds, so a server that cannot start costs nothing more."""
    marker = path + ".starting"
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        try:
            if time.time() - os.stat(marker).st_mtime < _SPAWN_BACKOFF:
                return False
            os.unlink(marker)
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except OSError:
            return False
    except OSError:
        return False
    os.close(fd)
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    log = _open_log(path)
    try:
        subprocess.Popen(
            [sys.executable, "-m", "contextfork.server.daemon", path, key],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=log if log is not None else subprocess.DEVNULL,
            start_new_session=True, close_fds=True, cwd="/", env=env,
        )  # fmt: skip
    except OSError:
        return False
    finally:
        if log is not None:
            os.close(log)
    return True


def log_path(path: str) -> str:
    return path + ".log"


def _open_log(path: str) -> int | None:
    """The server's stderr: its starts, stops and failures, for `contextfork server status`.
    Kept short: a log grown past LOG_LIMIT starts over with the next server."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(log_path(path), flags, 0o600)
    except OSError:
        return None
    try:
        if os.fstat(fd).st_size > LOG_LIMIT:
            os.ftruncate(fd, 0)
    except OSError:
        pass
    return fd


def _served(args: list[str]) -> bool:
    if not args or args[0] in NOT_SERVED:
        return False
    # Shell detection walks this process's parents, which a served command does not have.
    return not any(a.startswith(_SHELL_FLAGS) for a in args) and plain_interpreter()


def plain_interpreter() -> bool:
    """False when this interpreter runs with settings a warm server, started before, would not
    have: warning filters (-W, PYTHONWARNINGS), -X options, -O, dev mode, -v, -b, -I, -d. Such a
    command runs cold, exactly as asked."""
    f = sys.flags
    return not (sys.warnoptions or sys._xoptions or f.optimize or f.dev_mode or f.verbose
                or f.bytes_warning or f.isolated or f.debug)


def serve(args: list[str]) -> int | None:
    """Run ``args`` in a warm server; None: run it here (no server, or it refused before
    starting the command). A server is started for the next command when none answers."""
    if not _served(args) or not enabled():
        return None
    directory = runtime_dir()
    if ensure_dir(directory) is not None:
        return None  # `contextfork server status` says why
    try:
        key = build_key()
        path = socket_path(key)
        request = _request(args, key)
    except (OSError, ValueError):
        return None
    sock = _connect(path)
    if sock is None:
        spawn(path, key)
        return None
    try:
        return _run_remote(sock, request)
    finally:
        sock.close()


def _run_remote(sock: _socket.socket, request: dict[str, object]) -> int | None:
    try:
        send_message(sock, request, [0, 1, 2])
        first = recv_message(sock)
    except (OSError, EOFError, ValueError):
        return None  # nothing started yet
    pid = first.get("pid")
    if not isinstance(pid, int):
        return None  # refused (a stale key, a failed set-up): the command did not start
    previous = {s: signal.signal(s, lambda n, _f: _forward(pid, n)) for s in _FORWARDED}
    try:
        while True:
            try:
                done = recv_message(sock)
            except (OSError, EOFError, ValueError):
                print("contextfork: the command server went away before the command ended "
                      "(run it again with CONTEXTFORK_SERVER=off)", file=sys.stderr)  # fmt: skip
                return 1
            if "exit" in done or "signal" in done:
                break
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    sig = done.get("signal")
    if isinstance(sig, int) and sig > 0:
        sys.stdout.flush()
        try:  # noqa: SIM105 - see build_key
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL and SIGSTOP have no handler to reset
        os.kill(os.getpid(), sig)  # end the way the command ended (a test's kill -9, a ^C)
        time.sleep(1)
        return 128 + sig
    code = done.get("exit")
    return code if isinstance(code, int) else 1


def _forward(pid: int, signum: int) -> None:
    """To the command's process group (it leads one: its git children share the signal)."""
    try:
        os.killpg(pid, signum)
    except OSError:
        try:  # noqa: SIM105 - see build_key
            os.kill(pid, signum)
        except OSError:
            pass
