"""The command server's wire: length-prefixed marshal frames over a Unix socket, and who the peer is.

Both ends are this package in processes of the same user: the socket's directory mode and the
peer's uid (``peer_uid``, from the kernel) are checked before a byte is read. A frame is a
4-byte big-endian length and a marshal body, at most ``MAX_MESSAGE`` bytes; descriptors (the
caller's stdio) travel beside the first frame as ``SCM_RIGHTS``. Stdlib only: the client runs
this before every served command.
"""

from __future__ import annotations

import marshal
import sys

TYPE_CHECKING = False  # not typing's: importing typing costs ~9 ms on every command's path
if TYPE_CHECKING:
    import _socket
    from collections.abc import Callable
    from typing import Any

HEADER_SIZE = 4  # a big-endian length before each marshal body
MAX_MESSAGE = 16 << 20


def send_message(sock: _socket.socket, obj: Any, fds: list[int] | None = None) -> None:
    """One frame: a 4-byte length and a marshal body (both ends are this package, same user:
    the socket's directory and the peer's uid are checked before anything is read)."""
    import _socket

    frame = len(body := marshal.dumps(obj)).to_bytes(HEADER_SIZE, "big") + body
    if fds:
        rights = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)
        sent = sock.sendmsg([frame], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)])
        frame = frame[sent:]
    if frame:
        sock.sendall(frame)


def recv_exact(sock: _socket.socket, n: int, patience: Callable[[], None] | None = None) -> bytes:
    """``n`` bytes; on a socket with a timeout, ``patience`` is asked at each one whether to
    wait on (it raises when not)."""
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except TimeoutError:
            if patience is None:
                raise
            patience()
            continue
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return bytes(buf)


def recv_message(sock: _socket.socket, patience: Callable[[], None] | None = None) -> dict[str, object]:
    size = int.from_bytes(recv_exact(sock, HEADER_SIZE, patience), "big")
    if size > MAX_MESSAGE:
        raise ValueError(f"message of {size} bytes")
    return decode(recv_exact(sock, size, patience), size)


def decode(body: bytes, size: int) -> dict[str, object]:
    if size > MAX_MESSAGE:
        raise ValueError(f"message of {size} bytes")
    # Only ever from this package in a process of the same user (directory mode and peer uid
    # checked before a byte is read), who could run any code as us anyway.
    obj = marshal.loads(body)  # noqa: S302
    if not isinstance(obj, dict):
        raise ValueError("message is not an object")  # noqa: TRY004 - a protocol error
    return obj


def peer_creds(sock: _socket.socket) -> tuple[int, int, int] | None:
    """The peer's pid, uid and gid as the kernel saw them at connect() (at listen() for the
    server's socket), in this process's namespaces."""
    import _socket

    so_peercred: int | None = getattr(_socket, "SO_PEERCRED", None)
    if so_peercred is None:
        return None
    creds = sock.getsockopt(_socket.SOL_SOCKET, so_peercred, 12)  # struct ucred: pid, uid, gid
    pid, uid, gid = (int.from_bytes(creds[i : i + 4], sys.byteorder, signed=True) for i in (0, 4, 8))
    return pid, uid, gid


def peer_uid(sock: _socket.socket) -> int | None:
    creds = peer_creds(sock)
    return None if creds is None else creds[1]
