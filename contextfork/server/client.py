"""The console script's first step: hand the command to a warm server, or say it cannot.

Stdlib only and cheap (this runs before every command). ``serve`` returns the command's exit
status when a server ran it, or None when the caller must run it in this process. None is only
ever returned before the server has started the command: a command never runs twice.
"""

from __future__ import annotations

import os
import stat as _stat  # loaded by os already
import sys
import time

from contextfork.server import context

TYPE_CHECKING = False  # not typing's: importing typing costs ~9 ms on every command's path
if TYPE_CHECKING:
    import _socket
    import signal
    import subprocess
else:
    # The C modules (`signal` and `socket` import enum, ~4 ms each); `_socket` and `zlib` are
    # imported where a server is really asked, so a command never served (the status line,
    # the server off) pays for neither.
    import _signal as signal

ENV_MODE = "CONTEXTFORK_SERVER"  # on | off | auto (default: what `server enable|disable` chose)
ENV_DIR = "CONTEXTFORK_SERVER_DIR"
ENV_IDLE = "CONTEXTFORK_SERVER_IDLE"  # seconds without a command before the server exits
ON = ("on", "1", "yes", "true")
OFF = ("off", "0", "no", "false")
#: Never served: long-lived commands (nothing to gain, they own their stdio for minutes), the
#: server's own verbs, and the status line, whose cold path is already lean (measured: 34 ms cold,
#: 37 ms served, bench/hook_latency.py).
NOT_SERVED = frozenset({"mcp", "pi-worker", "proxy", "run", "server", "statusline", "--version",
                        "-V"})
_SHELL_FLAGS = ("--install-completion", "--show-completion")
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
LOG_LIMIT = 256 << 10
_SPAWN_BACKOFF = 10.0  # seconds between two attempts to start a server that does not come up
SUN_PATH_MAX = 107  # bytes of a Unix socket's path (sockaddr_un.sun_path, its NUL aside)
CONNECT_TIMEOUT = 1.0  # a server whose queue is full (stopped, swamped): run cold
START_TIMEOUT = 5.0  # the server's child has not said it is ready: run cold
POLL = 0.1  # how often the server is looked at while its child is awaited
WATCH = 1.0  # how often a running command's process is looked at
GRACE = 3.0  # a command that ended: how long its server may take to say how


def setting_path(env: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """Where `server enable|disable` keep their choice: the user's config directory, as it must
    outlive the runtime directory (cleared at logout) that holds the sockets."""
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "contextfork", "server")


def read_setting(env: dict[str, str] | os._Environ[str] = os.environ) -> str | None:
    """``on`` or ``off`` as `server enable|disable` wrote it (None: never chosen, or a file
    that is not a regular file of ours)."""
    try:
        fd = os.open(setting_path(env), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid() or not _stat.S_ISREG(st.st_mode):
            return None
        word = os.read(fd, 64).decode("ascii", "replace").strip().lower()
    except OSError:
        return None
    finally:
        os.close(fd)
    return word if word in ("on", "off") else None


def mode(env: dict[str, str] | os._Environ[str] = os.environ) -> tuple[bool, str]:
    """Whether commands are to be served, and what decided it: ``$CONTEXTFORK_SERVER`` (on or
    off) over the setting `server enable|disable` wrote; off when neither says."""
    value = env.get(ENV_MODE, "").strip().lower()
    if value in OFF or value in ON:
        return value in ON, f"{ENV_MODE}={value}"
    setting = read_setting(env)
    if setting is not None:
        return setting == "on", f"{setting_path(env)} says {setting}"
    return False, "the default"


def enabled(env: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    return mode(env)[0] and _supported()


def _supported() -> bool:
    if not hasattr(os, "fork") or not os.path.isdir("/proc/self/ns"):
        return False  # the context a caller is served in is read from /proc (Linux)
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
    and every directory of the import path (their mtimes: a dependency installed, upgraded or
    removed renames its ``*.dist-info`` there, also beside an editable install of ours). An
    edit, an upgrade or another venv gives another key, so a server never runs stale code; it
    is a cache key, not a security check."""
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
    root = os.path.dirname(pkg)
    for site in (root, *sys.path[1:]):
        # A source checkout (editable install) holds our package and pyproject.toml beside
        # whatever coverage, hypothesis, a build or an editor drops there: its files above,
        # and pyproject.toml (the dependencies), name the code, not the directory's mtime.
        if site == root and os.path.isfile(probe := os.path.join(root, "pyproject.toml")):
            site = probe
        try:  # noqa: SIM105 - contextlib is one more import on every command's path
            parts.append(f"{site}:{os.stat(site).st_mtime_ns}")
        except OSError:
            pass
    blob = "\n".join(parts).encode("utf-8", "surrogateescape")
    import zlib

    return f"{zlib.crc32(blob):08x}{zlib.adler32(blob):08x}{len(parts):04x}"


def server_key() -> str | None:
    """The build key and a digest of this process's context (context.py): a caller only ever
    reaches a server started from the same context. None: never serve this process (its
    context cannot be read, or no_new_privs hides part of it)."""
    try:
        confinement = context.confinement()
    except (OSError, ValueError, IndexError):
        return None
    if context.no_new_privs(confinement):
        return None
    parts = [*context.interpreter(), *(f"{what}={value}" for what, value in confinement)]
    return f"{build_key()}-{context.digest(parts)}"


def socket_path(key: str, env: dict[str, str] | os._Environ[str] = os.environ) -> str:
    return os.path.join(runtime_dir(env), f"s-{key}")


def address(path: str) -> tuple[str, int | None]:
    """What bind() and connect() are given for ``path``: itself, or when it is longer than a
    socket's address can hold, the same file reached through a descriptor of its directory
    (``/proc/self/fd/N/name``; close N after the call)."""
    if len(os.fsencode(path)) <= SUN_PATH_MAX:
        return path, None
    fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    return f"/proc/self/fd/{fd}/{os.path.basename(path)}", fd


def connect(path: str, timeout: float = CONNECT_TIMEOUT) -> tuple[_socket.socket, int] | None:
    """A connection to the server at ``path`` and the server's pid (0: unknown), or None."""
    import _socket

    from contextfork.server.wire import peer_creds  # like _socket: only when a server is asked

    try:
        where, dirfd = address(path)
    except OSError:
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(where)
        creds = peer_creds(sock)
    except OSError:
        sock.close()
        return None
    finally:
        if dirfd is not None:
            os.close(dirfd)
    if creds is not None and creds[1] != os.getuid():
        sock.close()
        return None
    return sock, (creds[0] if creds else 0)


def process_state(pid: int) -> str | None:
    """``R``, ``S``, ``T`` (stopped), ``Z`` (dead, not yet reaped)…; None: no such process."""
    try:
        return context.stat_fields(str(pid))[0].decode("ascii", "replace")
    except (OSError, ValueError, IndexError):
        return None


def stopped(state: str | None) -> bool:
    return state is None or state in ("T", "t", "Z", "X")


def _request(args: list[str], key: str, closed: list[int]) -> dict[str, object]:
    mask = os.umask(0o022)
    os.umask(mask)
    return {
        "argv": args,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "umask": mask,
        "key": key,
        "argv0": sys.argv[0] if sys.argv else "contextfork",
        "closed": closed,  # of descriptors 0-2: closed here, so closed in the command too
    }


def spawn(path: str, key: str) -> subprocess.Popen[bytes] | None:
    """Start a server for ``key`` in the background, detached from this process's session and
    stdio (a harness waiting for a hook's output must not wait for the server too), with this
    interpreter's flags (they are part of the key). At most one attempt per ``_SPAWN_BACKOFF``
    seconds, so a server that cannot start costs nothing more. Returns the server's process
    (None: not started)."""
    marker = path + ".starting"
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        try:
            if time.time() - os.stat(marker).st_mtime < _SPAWN_BACKOFF:
                return None
            os.unlink(marker)
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except OSError:
            return None
    except OSError:
        return None
    os.close(fd)
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    flags = subprocess._args_from_interpreter_flags()  # type: ignore[attr-defined]
    log = _open_log(path)
    try:
        return subprocess.Popen(
            [sys.executable, *flags, "-m", "contextfork.daemon", path, key],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=log if log is not None else subprocess.DEVNULL,
            start_new_session=True, close_fds=True, cwd="/", env=env,
        )  # fmt: skip
    except OSError:
        return None
    finally:
        if log is not None:
            os.close(log)


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


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def serve(args: list[str]) -> int | None:
    """Run ``args`` in a warm server; None: run it here (no server, or it refused before
    starting the command). A server is started for the next command when none answers."""
    if not _served(args) or not enabled():
        return None
    # Before this process opens anything: a closed 0-2 would be our socket's number, and the
    # command would read or write the connection instead (issue 22).
    closed = [fd for fd in (0, 1, 2) if not _is_open(fd)]
    directory = runtime_dir()
    if ensure_dir(directory) is not None:
        return None  # `contextfork server status` says why
    try:
        key = server_key()
        if key is None:
            return None
        path = socket_path(key)
        request = _request(args, key, closed)
    except (OSError, ValueError):
        return None
    conn = connect(path)
    if conn is None:
        spawn(path, key)
        return None
    sock, server_pid = conn
    try:
        return _run_remote(sock, request, server_pid, [fd for fd in (0, 1, 2) if fd not in closed])
    finally:
        sock.close()


class _Ended(Exception):
    """The command's process is gone and its server did not say how it ended."""

    def __init__(self, status: int | None) -> None:
        super().__init__(status)
        self.status = status


def _start(sock: _socket.socket, request: dict[str, object], server_pid: int,
           fds: list[int]) -> int | None:  # fmt: skip
    """Hand the command over; the child's pid once it is ready, None when it did not get there
    within START_TIMEOUT or its server stopped (then nothing ran: the caller runs it cold).
    ``go``, with descriptors 0-2, is the point of no return: the child starts the command only
    when it has read it."""
    from contextfork.server.wire import recv_message, send_message

    deadline = time.monotonic() + START_TIMEOUT

    def waiting() -> None:
        if time.monotonic() > deadline or (server_pid > 0 and stopped(process_state(server_pid))):
            raise TimeoutError("the command server did not start the command")

    try:
        sock.settimeout(START_TIMEOUT)
        send_message(sock, request)
        sock.settimeout(POLL)
        first = recv_message(sock, waiting)
        pid = first.get("pid")
        if not isinstance(pid, int):
            return None  # refused (a stale key, another context, a failed set-up)
        # Our descriptors only now: sent earlier, they would wait in the queue of a server that
        # does not answer, and our caller for an end of file that never comes.
        send_message(sock, {"go": True}, fds)
    except (OSError, EOFError, ValueError):
        return None  # nothing started yet
    return pid


def _run_remote(sock: _socket.socket, request: dict[str, object], server_pid: int = 0,
                fds: list[int] | None = None) -> int | None:  # fmt: skip
    from contextfork.server.wire import recv_message

    pid = _start(sock, request, server_pid, [0, 1, 2] if fds is None else fds)
    if pid is None:
        return None
    ended: list[float] = []

    def watching() -> None:
        state = process_state(pid)
        if state is not None and state not in ("Z", "X"):
            return
        ended.append(time.monotonic())
        if ended[-1] - ended[0] > GRACE:
            raise _Ended(_exit_status(pid) if state == "Z" else None)

    previous = {s: signal.signal(s, lambda n, _f: _forward(pid, n)) for s in _FORWARDED}
    try:
        sock.settimeout(WATCH)
        done = recv_message(sock, watching)
    except _Ended as lost:
        if lost.status is None:
            print("contextfork: the command ended but its server did not say how "
                  "(run it again with CONTEXTFORK_SERVER=off)", file=sys.stderr)  # fmt: skip
            return 1
        done = _outcome(lost.status)
    except (OSError, EOFError, ValueError):
        print("contextfork: the command server went away before the command ended "
              "(run it again with CONTEXTFORK_SERVER=off)", file=sys.stderr)  # fmt: skip
        return 1
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    sig = done.get("signal")
    if isinstance(sig, int) and sig > 0:
        if sys.stdout is not None:
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


def _exit_status(pid: int) -> int | None:
    """A dead, unreaped process's wait status (``/proc/<pid>/stat``, field 52)."""
    try:
        return int(context.stat_fields(str(pid))[49])
    except (OSError, ValueError, IndexError):
        return None


def _outcome(status: int) -> dict[str, object]:
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return {"exit": os.waitstatus_to_exitcode(status)}


def _forward(pid: int, signum: int) -> None:
    """To the command's process group (it leads one: its git children share the signal)."""
    try:
        os.killpg(pid, signum)
    except OSError:
        try:  # noqa: SIM105 - see build_key
            os.kill(pid, signum)
        except OSError:
            pass
