"""``view --serve``: a loopback HTTP server that rebuilds the site when the transcript grows.

The live session view: every request for a page first checks the transcript's size and mtime
(and the repo's cold store and packages directories), rebuilds the site if any changed, then
serves the file. Binds 127.0.0.1 unless the user asked for another address.
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Callable
from pathlib import Path


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


def make_server(
    out: Path, host: str, port: int, rebuilder: Rebuilder
) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0].endswith((".html", "/", ".js")):
                try:
                    rebuilder.maybe()
                except Exception as err:  # noqa: BLE001 - keep serving the last good site
                    self.log_message("rebuild failed: %s", err)
            super().do_GET()

        def log_message(self, format: str, *args: object) -> None:
            return  # quiet: the terminal shows the URL, not every request

    handler = functools.partial(Handler, directory=str(out))
    return http.server.ThreadingHTTPServer((host, port), handler)
