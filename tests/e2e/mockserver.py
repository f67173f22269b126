"""A tiny loopback HTTP server shared by the Anthropic and OpenAI mocks.

The real clients are driven against it, so it must be boring and robust: bind 127.0.0.1 on a
free port, serve each request in a daemon thread, log every request (method, path, headers,
parsed JSON body) for the test to assert on, and stop by itself — at the end of the ``with``
block, or after ``max_lifetime`` seconds even if a test forgets, so a hung client never keeps
a port or a thread alive past the suite.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    """One request as the client sent it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes
    at: float = field(default_factory=time.time)


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Response]


def json_response(obj: Any, status: int = 200) -> Response:
    return Response(status, json.dumps(obj).encode("utf-8"))


def sse(events: list[tuple[str | None, dict[str, Any]]]) -> Response:
    """A complete ``text/event-stream`` body (sent at once; clients parse it incrementally)."""
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(data)}\n\n")
    return Response(
        200, "".join(out).encode("utf-8"), "text/event-stream", {"Cache-Control": "no-cache"}
    )


class MockServer:
    """Loopback HTTP server; subclasses implement ``handle``."""

    def __init__(self, max_lifetime: float = 900.0) -> None:
        self.requests: list[Request] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._max_lifetime = max_lifetime
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    # -- to override
    def handle(self, req: Request) -> Response:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- lifecycle
    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MockServer:
        mock = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                req = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body, raw)
                with mock._lock:
                    mock.requests.append(req)
                try:
                    resp = mock.handle(req)
                except Exception as err:  # a bug in a test's responder: answer 500, remember it
                    mock.errors.append(f"{type(err).__name__}: {err}")
                    resp = json_response(
                        {"type": "error", "error": {"type": "api_error", "message": str(err)}}, 500
                    )
                self.send_response(resp.status)
                self.send_header("Content-Type", resp.content_type)
                self.send_header("Content-Length", str(len(resp.body)))
                for k, v in resp.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(resp.body)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="mock-api", daemon=True
        )
        self._thread.start()
        self._timer = threading.Timer(self._max_lifetime, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if self._timer is not None:
            self._timer.cancel()
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> MockServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
