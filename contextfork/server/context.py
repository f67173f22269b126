"""What shapes a process besides its arguments, read from ``/proc`` (stdlib only, ~0.2 ms).

A served command runs in a child of the server, not of its caller: it has the caller's argv,
working directory, environment, umask and descriptors, and the server's everything else. So a
caller is served only when that everything else is the same as its own (issue 22): otherwise a
command run under ``unshare -n``, ``ulimit -f 8`` or a seccomp/namespace sandbox would run with
the server's network, limits and privileges. ``confinement(pid)`` is what the server compares,
for the real peer of a connection (its pid from the kernel, never from the request), against
itself; ``interpreter()`` is what only the client can tell (its flags and import path), part of
the socket's name, as Mercurial's chg names its socket after the config that shapes a process.
"""

from __future__ import annotations

import os
import sys

#: Every namespace type (``/proc/<pid>/ns``); a type this kernel lacks reads as missing on both
#: sides alike.
NAMESPACES = ("cgroup", "ipc", "mnt", "net", "pid", "pid_for_children", "time",
              "time_for_children", "user", "uts")  # fmt: skip
#: The lines of ``/proc/<pid>/status`` that are a confinement: ids and groups, capabilities,
#: no_new_privs, seccomp, and the CPUs and memory nodes it may use.
STATUS_FIELDS = (b"Uid:", b"Gid:", b"Groups:", b"CapInh:", b"CapPrm:", b"CapEff:", b"CapBnd:",
                 b"CapAmb:", b"NoNewPrivs:", b"Seccomp:", b"Seccomp_filters:",
                 b"Cpus_allowed_list:", b"Mems_allowed_list:")  # fmt: skip
#: Read by the modules the server imports before it forks (typer, pydantic, zoneinfo) or by the
#: interpreter itself: a caller with other values gets a server of its own. The server records
#: what its imports really read and refuses a caller whose values differ (daemon.preload), so a
#: name missing here costs a cold run, never a wrong one.
KEYED_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONHASHSEED", "PYTHONTZPATH", "TYPER_USE_RICH",
             "_TYPER_STANDARD_TRACEBACK", "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION",
             "PYDANTIC_DISABLE_PLUGINS")  # fmt: skip


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 1 << 16)
    finally:
        os.close(fd)


def stat_fields(pid: str) -> list[bytes]:
    """``/proc/<pid>/stat`` from its third field (the state) on: the name before it may hold
    spaces and parentheses, so the split starts after its last ``)``."""
    data = _read(f"/proc/{pid}/stat")
    return data[data.rindex(b")") + 2 :].split()


def confinement(pid: str = "self") -> list[tuple[str, str]]:
    """Everything about process ``pid`` a served command would take from the server instead,
    as (what, value) pairs: namespaces, root directory, cgroup, resource limits, ids and
    groups, capabilities, no_new_privs, seccomp, CPU and memory affinity, niceness and
    scheduling policy, LSM label. Raises OSError when ``pid`` cannot be read (gone, or not
    ours): then nothing is served."""
    base = f"/proc/{pid}"
    out = []
    for ns in NAMESPACES:
        try:
            out.append((f"{ns} namespace", os.readlink(f"{base}/ns/{ns}")))
        except FileNotFoundError:
            if not os.path.isdir(base):
                raise
            out.append((f"{ns} namespace", "-"))
    root = os.stat(f"{base}/root")  # a chroot: the same path names another file
    out.append(("root directory", f"{root.st_dev}:{root.st_ino}"))
    for line in _read(f"{base}/status").splitlines():
        if line.startswith(STATUS_FIELDS):
            name, _, value = line.decode("ascii", "replace").partition(":")
            out.append((name, " ".join(value.split())))
    out.append(("resource limits", _read(f"{base}/limits").decode("ascii", "replace")))
    out.append(("cgroup", _read(f"{base}/cgroup").decode("utf-8", "replace")))
    fields = stat_fields(pid)
    out.append(("niceness", fields[16].decode()))
    out.append(("scheduling", f"{fields[38].decode()}/{fields[37].decode()}"))
    try:
        out.append(("LSM label", _read(f"{base}/attr/current").decode("utf-8", "replace")))
    except OSError:  # no LSM that labels processes: the same for every process
        out.append(("LSM label", "-"))
    return out


def difference(mine: list[tuple[str, str]], theirs: list[tuple[str, str]]) -> list[str]:
    """What differs between two ``confinement`` lists, by name."""
    return [a[0] for a, b in zip(mine, theirs, strict=False) if a != b] or (
        ["everything"] if len(mine) != len(theirs) else []
    )


def no_new_privs(lines: list[tuple[str, str]]) -> bool:
    """True when no_new_privs is set: what an unprivileged sandbox sets before it adds seccomp
    filters or a Landlock domain, neither of which ``/proc`` shows in full (two sandboxes can
    have the same count of filters). Such a process is never served."""
    return any(name == "NoNewPrivs" and value != "0" for name, value in lines)


def interpreter() -> list[str]:
    """What shaped this interpreter and what the server's imports read from the environment:
    its flags, -X and -W options, its import path (``sys.path[0]`` aside: the script's or the
    working directory, the server's is ``/``) and the values of ``KEYED_ENV``."""
    env = os.environ
    return [sys.executable, sys.version, repr(tuple(sys.flags)), repr(sorted(sys._xoptions.items())),
            repr(sys.warnoptions), *sys.path[1:], *(f"{n}={env.get(n)}" for n in KEYED_ENV)]  # fmt: skip


def digest(parts: list[str]) -> str:
    """A short name for ``parts`` (a socket's name: chosen by, and only ever fooling, the
    caller; the server checks the confinement itself)."""
    import zlib

    blob = "\n".join(parts).encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(blob):08x}{zlib.adler32(blob):08x}"
