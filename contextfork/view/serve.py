"""``view --serve``: a loopback HTTP server that rebuilds the site when the transcript grows.

The live session view: every request for a page first checks the transcript's size and mtime
(and the repo's cold store and packages directories), rebuilds the site if any changed, then
serves the file. Binds 127.0.0.1 unless the user asked for another address.

Binding loopback keeps other machines out, not other web sites: a page on ``evil.example``
whose DNS name is re-pointed at 127.0.0.1 (DNS rebinding) is same-origin with the inspector in
the browser's eyes and could read every page (code, diffs, tool output). So every request,
whatever its method, must name this server in ``Host`` (``localhost``, a 127.0.0.0/8 address
or ``[::1]``, with the served port; with ``--allow-remote``, also the bound address), and a
browser request from any other origin (``Origin``, ``Sec-Fetch-Site``) is refused: 403 and one
line on stderr for each distinct refusal.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import ipaddress
import re
import socket
import sys
import threading
from collections.abc import Callable
from email.message import Message
from pathlib import Path

_PORT = re.compile(r"[0-9]{1,5}")
#: ``Sec-Fetch-Site`` values a page of this server (or the user typing the URL) sends.
_OWN_FETCH_SITES = frozenset({"same-origin", "none"})
_LOG_MAX = 64  # distinct refusals logged; a page looping on requests cannot flood the terminal


def _stamp(paths: list[Path]) -> tuple[tuple[int, int], ...]:
    out = []
    for p in paths:
        try:
            st = p.stat()
            out.append((st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((-1, -1))
    return tuple(out)


class Rebuilder:
    """Rebuild at most once per change, one request at a time."""

    def __init__(self, watch: list[Path], rebuild: Callable[[], object]) -> None:
        self.watch = watch
        self.rebuild = rebuild
        self.lock = threading.Lock()
        self.stamp = _stamp(watch)
        self.rebuilds = 0

    def maybe(self) -> None:
        with self.lock:
            now = _stamp(self.watch)
            if now != self.stamp:
                self.rebuild()
                self.stamp = now
                self.rebuilds += 1


def split_host(value: str) -> tuple[str, int] | None:
    """``name[:port]`` or ``[v6]:port`` as (lowercased name, port; 80 when absent), None when
    it is neither (userinfo, paths, two colons, a bad port)."""
    value = value.strip()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
    else:
        name, colon, port = value.partition(":")
        rest = colon + port
    if not name:
        return None
    if not rest:
        return name.lower(), 80
    if rest[0] != ":" or not _PORT.fullmatch(rest[1:]):
        return None
    return name.lower(), int(rest[1:])


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


class Gate:
    """Decides which requests reach the files: this server's own names and origins only."""

    def __init__(self, bound: str, port: int) -> None:
        self.port = port
        addr = _ip(bound)
        # --allow-remote: the bound address is a name of this server too; bound to every
        # interface, any address literal is (an address literal cannot be re-pointed by DNS).
        self.extra = None if addr is None or addr.is_loopback else addr
        self.lock = threading.Lock()
        self.logged: set[str] = set()

    def own_name(self, name: str, port: int, *, bracketed: bool) -> bool:
        if port != self.port:
            return False
        if name == "localhost":
            return not bracketed
        addr = _ip(name)
        if addr is None or (addr.version == 6) != bracketed:
            return False
        if addr.is_loopback:
            return True
        if self.extra is None:
            return False
        return addr == self.extra or self.extra.is_unspecified

    def own_host(self, value: str) -> bool:
        parts = split_host(value)
        return parts is not None and self.own_name(*parts, bracketed=value.strip().startswith("["))

    def own_origin(self, value: str) -> bool:
        scheme, sep, rest = value.strip().partition("://")
        return sep == "://" and scheme.lower() == "http" and self.own_host(rest)

    def refusal(self, headers: Message) -> str | None:
        """Why this request is refused (a line for the log), or None to serve it."""
        hosts = headers.get_all("Host") or []
        if len(hosts) != 1:
            return f"refused a request with {len(hosts)} Host headers (exactly one is needed)"
        if not self.own_host(hosts[0]):
            return (f"refused a request for Host {_shown(hosts[0])}: not a loopback name of this "
                    f"server on port {self.port} (DNS rebinding?)")  # fmt: skip
        origins = headers.get_all("Origin") or []
        if len(origins) > 1 or (origins and not self.own_origin(origins[0])):
            return (f"refused a request from Origin {_shown(', '.join(origins))}: another site "
                    "may not read the inspector")  # fmt: skip
        site = headers.get("Sec-Fetch-Site")
        if site is not None and site.strip().lower() not in _OWN_FETCH_SITES:
            return (f"refused a request with Sec-Fetch-Site {_shown(site)}: another site may not "
                    "read the inspector")  # fmt: skip
        return None

    def log(self, line: str) -> None:
        """One stderr line per distinct refusal (repeats of the same one are not logged again)."""
        with self.lock:
            if line in self.logged or len(self.logged) >= _LOG_MAX:
                return
            self.logged.add(line)
        with contextlib.suppress(OSError, ValueError):  # a closed terminal: keep serving
            print(f"contextfork view: {line}", file=sys.stderr, flush=True)


def _shown(value: str) -> str:
    """A header value safe to print on a terminal (no escape sequences), at most 120 chars."""
    text = ascii(value)
    return text if len(text) <= 120 else text[:117] + "…'"


def make_server(
    out: Path, host: str, port: int, rebuilder: Rebuilder
) -> http.server.ThreadingHTTPServer:
    gate: list[Gate] = []  # set once the socket is bound (port 0: the kernel picks)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def parse_request(self) -> bool:
            if not super().parse_request():
                return False
            why = gate[0].refusal(self.headers)
            if why is None:
                return True
            gate[0].log(why)
            self.send_error(403, "Forbidden", "contextfork view answers only its own address "
                                              "and origin (see the server's terminal)")  # fmt: skip
            return False

        def do_GET(self) -> None:
            if self.path.split("?")[0].endswith((".html", "/", ".js")):
                try:
                    rebuilder.maybe()
                except Exception as err:  # noqa: BLE001 - keep serving the last good site
                    self.log_message("rebuild failed: %s", err)
            super().do_GET()

        def log_message(self, format: str, *args: object) -> None:
            return  # quiet: the terminal shows the URL and refusals, not every request

    class Server(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

    handler = functools.partial(Handler, directory=str(out))
    server = Server((host, port), handler)
    gate.append(Gate(host, int(server.server_address[1])))
    return server


def url_of(host: str, port: int) -> str:
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"
