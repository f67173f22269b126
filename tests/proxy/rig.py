"""A proxy in a thread and a scripted upstream behind it, both on loopback, for the tests.

The upstream answers each request from a queue of ``Answer``s: a status, headers and body
chunks, each chunk sent (and flushed) only after its ``gate`` event is set, so a test can prove
that the proxy passes a stream on before the upstream has finished it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from contextfork.proxy.proxylog import ProxyLog
from contextfork.proxy.server import Proxy, serve


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    chunks: list[bytes] = field(default_factory=lambda: [b'{"ok":true}'])
    gates: dict[int, threading.Event] = field(default_factory=dict)  # chunk -> wait for it


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class Upstream:
    def __init__(self) -> None:
        self.answers: list[Answer] = []
        self.seen: list[Seen] = []
        up = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                up.seen.append(Seen(self.command, self.path, dict(self.headers.items()), body))
                ans = up.answers.pop(0) if up.answers else Answer()
                self.send_response(ans.status)
                for k, v in ans.headers.items():
                    self.send_header(k, v)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for i, chunk in enumerate(ans.chunks):
                    gate = ans.gates.get(i)
                    if gate is not None and not gate.wait(10):
                        chunk = b"GATE-TIMEOUT: the client never saw the chunks before this"
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            do_GET = do_POST = do_PUT = do_DELETE = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def running(upstream: str, root: Path | None, log: Path | None = None,
            clients: Path | None = None) -> Iterator[tuple[Proxy, int]]:
    proxy = Proxy(upstream, root, clients_dir=clients, log=ProxyLog(log))
    ready = threading.Event()
    port: list[int] = []
    box: dict[str, Any] = {}

    def main() -> None:
        async def go() -> None:
            stop = asyncio.Event()
            box["loop"], box["stop"] = asyncio.get_running_loop(), stop

            def up(bound: int) -> None:
                port.append(bound)
                ready.set()

            await serve(proxy, "127.0.0.1", 0, ready=up, stop=stop)

        asyncio.run(go())

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    assert ready.wait(20), "the proxy did not start"
    try:
        yield proxy, port[0]
    finally:
        box["loop"].call_soon_threadsafe(box["stop"].set)
        thread.join(20)
