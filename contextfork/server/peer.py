"""Who is at the other end of a command's connection, asked of the kernel, not of the request.

A served command runs with the server's namespaces, limits and privileges (context.py), so it
is served only to a client whose own are the same: read from the client's ``/proc`` entry, whose
pid the kernel gives. A client could name any key in its request, but not another process's
pid. The pid is the one that connected: on Linux 6.5+ through a pidfd (``SO_PEERPIDFD``), which
also tells whether that process ended while it was read (its pid then free for another);
before, the pid (``SO_PEERCRED``) of a process that must have started before the connection
was accepted and still be the same one after the read.
"""

from __future__ import annotations

import os
import socket

from contextfork.server import context, wire

SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77)  # Linux's number; Python names it from 3.13


def refusal(conn: socket.socket, claimed: object, key: str, accepted: float) -> str | None:
    """Why the client at ``conn`` must run its command itself (None: serve it). ``claimed`` is
    the key the request names, ``key`` the server's, ``accepted`` when the connection was
    accepted (CLOCK_BOOTTIME seconds)."""
    if claimed != key:
        return "stale: the request names other code or another context"
    try:
        theirs = peer_confinement(conn, accepted)
        mine = context.confinement()
    except (OSError, ValueError, IndexError) as exc:
        return f"the client's context cannot be read: {exc}"
    if context.no_new_privs(theirs):
        return "the client has no_new_privs (a sandbox /proc does not show in full)"
    differ = context.difference(mine, theirs)
    return f"the client's context is not the server's: {', '.join(differ)}" if differ else None


def _pidfd_pid(pidfd: int) -> int:
    for line in context._read(f"/proc/self/fdinfo/{pidfd}").splitlines():
        if line.startswith(b"Pid:"):
            return int(line.split()[1])
    raise ValueError("a pidfd without a pid")


def peer_confinement(conn: socket.socket, accepted: float) -> list[tuple[str, str]]:
    """The confinement of the process that connected; raises when it cannot be told for sure."""
    try:
        pidfd = conn.getsockopt(socket.SOL_SOCKET, SO_PEERPIDFD)
    except OSError:
        pidfd = -1
    if pidfd >= 0:
        try:
            pid = _pidfd_pid(pidfd)
            if pid <= 0:
                raise ValueError("the client is gone, or in a pid namespace this one cannot see")
            theirs = context.confinement(str(pid))
            if _pidfd_pid(pidfd) != pid:
                raise ValueError("the client ended while it was read")
            return theirs
        finally:
            os.close(pidfd)
    creds = wire.peer_creds(conn)
    if creds is None or creds[0] <= 0:
        raise ValueError("the client's pid is unknown")
    pid_text = str(creds[0])
    started = context.stat_fields(pid_text)[19]  # field 22: start time, in clock ticks after boot
    if int(started) / os.sysconf("SC_CLK_TCK") > accepted + 0.05:
        raise ValueError("the client's pid belongs to a process started after it connected")
    theirs = context.confinement(pid_text)
    if context.stat_fields(pid_text)[19] != started:
        raise ValueError("the client ended while it was read")
    return theirs
