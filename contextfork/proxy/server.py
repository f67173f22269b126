"""The HTTP side of the proxy (aiohttp): loopback only, streaming both ways, failing open.

``POST …/v1/messages`` (Anthropic) and ``POST …/responses`` (OpenAI Responses) are rendered
(``adapt``) in a worker thread under a time budget; ``…/messages/count_tokens`` is rendered with
the conversation's last view; every other path and method is forwarded as it came. Responses
come back byte for byte as they arrive (``iter_any``: no buffering of a stream), with the
upstream's status and headers (``retry-after``, request ids, rate limits), errors included.

Routes: ``/c/<client>/…`` is a client that ``contextfork run`` registered (its upstream and its
project, from a file in the user's private runtime directory); any other path goes to the
proxy's own ``--upstream`` and project. ``/_contextfork/health`` and ``/_contextfork/status``
are the proxy's own.

Refused before anything is read: a ``Host`` that is not loopback (DNS rebinding), any browser
``Origin``, a body over the bound. Credentials (``x-api-key``, ``authorization``) are forwarded
and never logged, stored or echoed: the log records path, status, sizes, timing and reasons.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextfork.proxy.adapt import Api, Outcome, adapt
from contextfork.proxy.conversation import Registry, env_int
from contextfork.proxy.proxylog import ProxyLog
from contextfork.proxy.usage import UsageTap

if TYPE_CHECKING:
    from aiohttp import ClientSession, web

ANTHROPIC = "https://api.anthropic.com"
OPENAI = "https://api.openai.com/v1"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
MAX_BODY = 64 << 20
HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                 "trailer", "trailers", "transfer-encoding", "upgrade", "host",
                 "content-length"})
CONTROL = "/_contextfork/"
# A render that is late sends the whole history (fail open), which costs far more than the wait
# and can make the client compact: the budget is for a proxy that is stuck, not slow.
BUDGET_MS = 10_000
ADAPTED = frozenset({"messages", "count", "responses"})


@dataclass(frozen=True)
class Route:
    """Where a request goes and whose project its conversations belong to."""

    upstream: str
    root: Path | None
    client: str | None = None


def host_is_loopback(host: str | None) -> bool:
    """``Host`` names a loopback address (with or without a port)."""
    if not host:
        return False
    name = host.strip().lower()
    if name.startswith("["):
        name = name[1 : name.find("]")] if "]" in name else name
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    return name in LOOPBACK


def endpoint(path: str) -> str | None:
    """Which adapter a path is for: messages | count | responses | None (pass through)."""
    p = path.rstrip("/")
    if p.endswith("/messages/count_tokens"):
        return "count"
    if p.endswith("/v1/messages"):
        return "messages"
    if p.endswith("/responses") and "responses" in ADAPTED:
        return "responses"
    return None


def error_body(message: str, kind: str = "api_error") -> bytes:
    """An error in the Anthropic shape (the OpenAI clients read ``error.message`` as well)."""
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


class Proxy:
    """The aiohttp application and what it shares between requests."""

    def __init__(self, upstream: str, root: Path | None, clients_dir: Path | None = None,
                 log: ProxyLog | None = None) -> None:
        self.default = Route(upstream.rstrip("/"), root)
        self.clients_dir = clients_dir
        self.registry = Registry()
        self.log = log or ProxyLog(None)
        self.budget = (env_int("CONTEXTFORK_PROXY_TIMEOUT_MS", BUDGET_MS) or BUDGET_MS) / 1000
        self.max_body = env_int("CONTEXTFORK_PROXY_MAX_BODY", MAX_BODY) or MAX_BODY
        self.session: ClientSession | None = None
        self.started = time.time()
        self.served = 0
        self._apis: dict[str, Api] = {}
        self._pending: set[Any] = set()

    # -- application ----------------------------------------------------------------------
    def app(self) -> web.Application:
        from aiohttp import web

        app = web.Application(client_max_size=self.max_body)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_startup.append(self._open)
        app.on_cleanup.append(self._close)
        return app

    async def _open(self, _app: web.Application) -> None:
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=900)
        self.session = aiohttp.ClientSession(
            timeout=timeout, auto_decompress=False, skip_auto_headers=("User-Agent",),
            connector=aiohttp.TCPConnector(limit=0))
        self._background(warm)  # the first fold must not pay the imports and the tokenizer

    async def _close(self, _app: web.Application) -> None:
        if self.session is not None:
            await self.session.close()
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
        await asyncio.to_thread(self.flush)

    def api(self, kind: str) -> Api:
        got = self._apis.get(kind)
        if got is None:
            if kind == "responses":
                from contextfork.proxy import responses

                got = responses.api()
            else:
                from contextfork.proxy import anthropic

                got = anthropic.api()
            self._apis[kind] = got
        return got

    # -- one request -------------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        import aiohttp.web_protocol
        from aiohttp import web

        if not host_is_loopback(request.headers.get("Host")):
            self.log.write(None, event="refused", why="Host is not loopback", path=request.path)
            return _json(403, "contextfork proxy: the Host header is not a loopback address")
        if "Origin" in request.headers:
            self.log.write(None, event="refused", why="browser Origin", path=request.path)
            return _json(403, "contextfork proxy: requests from a browser page are refused")
        path = request.raw_path
        if path.startswith(CONTROL):
            return await self._control(request)
        route, path = self._route(path)
        if route is None:
            return _json(502, "contextfork proxy: unknown client (the launcher that "
                              "registered it has exited)")
        try:
            body = await request.read()  # a Content-Encoding is decoded here (aiohttp)
        except aiohttp.web_protocol.RequestPayloadError:
            self.log.write(route.root, event="refused", why="body cannot be decoded",
                           path=_path_only(path))
            return _json(400, "contextfork proxy: the request body cannot be decoded",
                         "invalid_request_error")
        except web.HTTPRequestEntityTooLarge:
            self.log.write(route.root, event="refused", why="body too large",
                           path=_path_only(path))
            return _json(413, f"contextfork proxy: request body over {self.max_body} bytes",
                         "request_too_large")
        self.served += 1
        kind = endpoint(path.split("?", 1)[0]) if request.method == "POST" else None
        started = time.perf_counter()
        outcome = Outcome()
        if kind is not None:
            outcome = await self._adapt(kind, route, request, body)
        overhead = (time.perf_counter() - started) * 1000
        headers = _forward_headers(request, identity=kind is not None)
        record: dict[str, Any] = {"event": "request", "path": _path_only(path),
                                  "endpoint": kind, "bytes_in": len(body),
                                  "ms": round(overhead, 2)}
        if kind is not None:
            record.update(_outcome_record(outcome, len(body)))
        tap = UsageTap() if kind in ("messages", "responses") else None
        if outcome.conv is not None and kind in ("messages", "responses"):
            self._background(outcome.conv.prestore)  # while the model answers
        resp = await self._forward(request, route.upstream + path, headers,
                                   outcome.body if outcome.body is not None else body, tap,
                                   record)
        if outcome.conv is not None and kind in ("messages", "responses"):
            self._account(outcome, len(body), overhead, tap)
            self._save(route.root, outcome.conv)
        self.log.write(route.root, **record)
        return resp

    async def _adapt(self, kind: str, route: Route, request: web.Request,
                     body: bytes) -> Outcome:
        api = self.api("messages" if kind == "count" else kind)
        headers = {k.lower(): v for k, v in request.headers.items()}
        deadline = time.monotonic() + self.budget
        queued = time.perf_counter()

        def work() -> Outcome:
            waited = (time.perf_counter() - queued) * 1000
            cpu = time.thread_time()
            got = adapt(api, self.registry, route.root, headers, body, deadline=deadline,
                        count_only=kind == "count")
            got.info["thread_wait_ms"] = round(waited, 2)
            got.info["cpu_ms"] = round((time.thread_time() - cpu) * 1000, 2)
            return got

        try:
            return await asyncio.wait_for(asyncio.to_thread(work), self.budget)
        except TimeoutError:
            return Outcome(why=f"time budget: no view within {int(self.budget * 1000)} ms")

    def _route(self, path: str) -> tuple[Route | None, str]:
        if not path.startswith("/c/"):
            return self.default, path
        token, _, rest = path[3:].partition("/")
        return self._client(token), "/" + rest

    def _client(self, token: str) -> Route | None:
        """A launcher's registration: its upstream and project (files in our private dir)."""
        if self.clients_dir is None or not token or not token.isalnum() or len(token) > 64:
            return None
        try:
            data = json.loads((self.clients_dir / f"{token}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        upstream = data.get("upstream") if isinstance(data, dict) else None
        root = data.get("root") if isinstance(data, dict) else None
        if not isinstance(upstream, str) or not upstream.startswith(("http://", "https://")):
            return None
        return Route(upstream.rstrip("/"), Path(root) if isinstance(root, str) else None, token)

    async def _forward(self, request: web.Request, url: str, headers: dict[str, str],
                       body: bytes, tap: UsageTap | None,
                       record: dict[str, Any]) -> web.StreamResponse:
        import aiohttp
        from aiohttp import web

        assert self.session is not None
        try:
            up = await self.session.request(request.method, url, headers=headers,
                                            data=body if body else None,
                                            allow_redirects=False)
        except (aiohttp.ClientError, OSError, TimeoutError) as err:
            record.update(status=502, upstream_error=type(err).__name__)
            return _json(502, f"contextfork proxy: upstream unreachable ({type(err).__name__})")
        async with up:
            resp = web.StreamResponse(status=up.status, reason=up.reason)
            for k, v in up.headers.items():
                if k.lower() not in HOP:
                    resp.headers.add(k, v)
            if up.content_length is not None and "Transfer-Encoding" not in up.headers:
                resp.content_length = up.content_length
            record["status"] = up.status
            if tap is not None:
                tap.start(up.headers.get("Content-Type", ""), up.headers.get("Content-Encoding"))
            await resp.prepare(request)
            try:
                async for chunk in up.content.iter_any():
                    if tap is not None:
                        tap.feed(chunk)
                    await resp.write(chunk)
                await resp.write_eof()
                if tap is not None:
                    tap.finish()
            except (ConnectionResetError, aiohttp.ClientError) as err:
                record["stream_error"] = type(err).__name__
            return resp

    def _account(self, outcome: Outcome, size_in: int, ms: float, tap: UsageTap | None) -> None:
        conv = outcome.conv
        assert conv is not None
        st = conv.stats
        st.requests += 1
        st.bytes_in += size_in
        out = len(outcome.body) if outcome.body is not None else size_in
        st.bytes_out += out
        st.largest_out = max(st.largest_out, out)
        st.ms.append(ms)
        if outcome.body is not None:
            st.edited += 1
        elif outcome.why:
            st.pass_through(outcome.why)
        st.last_bytes = (size_in, out)
        st.folds = int(outcome.info.get("folds", st.folds))
        st.epochs = int(outcome.info.get("epochs", st.epochs))
        if tap is not None and tap.usage:
            st.add_usage(tap.usage)

    def _save(self, root: Path | None, conv: Any, force: bool = False) -> None:
        """The conversation's figures to ``.contextfork/proxy/`` (at most once a second, in a
        thread: never on the request's path)."""
        st = conv.stats
        now = time.monotonic()
        if root is None or (not force and now - st.written < 1.0):
            return
        st.written = now
        sid = conv.session.session_id
        data = {"session": sid, **st.to_json()}

        def write() -> None:
            from contextfork.errors import ContextforkError

            with contextlib.suppress(OSError, ContextforkError):
                save_stats(root, sid, data)

        self._background(write)

    def _background(self, fn: Any) -> None:
        task = asyncio.get_running_loop().run_in_executor(None, fn)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def flush(self) -> None:
        """Every conversation's last figures, now (at shutdown)."""
        for conv in self.registry.snapshot():
            root = conv.session.root
            if root is not None and conv.stats.requests:
                from contextfork.errors import ContextforkError

                with contextlib.suppress(OSError, ContextforkError):
                    save_stats(root, conv.session.session_id,
                               {"session": conv.session.session_id, **conv.stats.to_json()})

    async def _control(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        from contextfork import __version__

        name = request.path[len(CONTROL):]
        if name == "health":
            data: dict[str, Any] = {"ok": True, "pid": os.getpid(), "version": __version__,
                                    "served": self.served}
        elif name == "status":
            data = {"ok": True, "pid": os.getpid(), "served": self.served,
                    "conversations": self.registry.totals()}
        else:
            return _json(404, f"contextfork proxy: no control endpoint {name!r}")
        return web.json_response(data)


def save_stats(root: Path, session_id: str, data: dict[str, Any]) -> None:
    """One conversation's figures, atomically (``stats`` reads them)."""
    from contextfork.atomic import write_bytes
    from contextfork.layout import ensure_state_dir, proxy_stats

    ensure_state_dir(root)
    path = proxy_stats(root, session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(path, json.dumps(data, sort_keys=True).encode("utf-8"), mode=0o600)


def warm() -> None:
    """Load what a first render and a first store need, before a request waits for it."""
    from contextfork.proxy import anthropic, responses
    from contextfork.render import coldsource, engine
    from contextfork.tokens import count_tokens

    del anthropic, responses, coldsource, engine
    count_tokens("warm")


def _json(status: int, message: str, kind: str = "api_error") -> web.Response:
    from aiohttp import web

    return web.Response(status=status, body=error_body(message, kind),
                        content_type="application/json")


def _path_only(path: str) -> str:
    return path.split("?", 1)[0]


def _forward_headers(request: web.Request, *, identity: bool) -> dict[str, str]:
    """The client's headers minus hop-by-hop ones and ``Content-Encoding`` (aiohttp decoded
    the body as it read it; it goes on plain). An adapted endpoint asks for an uncompressed
    answer so the usage in it can be read (the client sees no difference)."""
    out: dict[str, str] = {}
    for k, v in request.headers.items():
        low = k.lower()
        if low in HOP or low == "content-encoding":  # the body was decoded on reading
            continue
        if identity and low == "accept-encoding":
            continue
        out[k] = v
    if identity:
        out["Accept-Encoding"] = "identity"
    return out


def _outcome_record(outcome: Outcome, size_in: int) -> dict[str, Any]:
    action = "edit" if outcome.body is not None else "pass-through" if outcome.why else "as-is"
    rec: dict[str, Any] = {"action": action}
    if outcome.why:
        rec["why"] = outcome.why
    if outcome.body is not None:
        rec["bytes_out"] = len(outcome.body)
        rec["saved"] = size_in - len(outcome.body)
    for k in ("session", "sync", "t", "boundary", "epochs", "folds", "folded_steps", "stubs",
              "notes", "phases_ms", "thread_wait_ms", "cpu_ms"):
        if k in outcome.info:
            rec[k] = outcome.info[k]
    return rec


async def serve(proxy: Proxy, host: str, port: int,
                ready: Any = None, stop: asyncio.Event | None = None) -> None:
    """Run until ``stop`` is set (or cancelled); ``ready(port)`` once listening."""
    from aiohttp import web

    runner = web.AppRunner(proxy.app(), access_log=None, handle_signals=False)
    await runner.setup()
    try:
        # SO_REUSEADDR: a proxy started again on its port must not wait out TIME_WAIT (a live
        # listener on the port still refuses the bind on Linux)
        site = web.TCPSite(runner, host, port, reuse_address=True)
        await site.start()
        if ready is not None:
            ready(_bound_port(runner, port))
        await (stop.wait() if stop is not None else asyncio.Event().wait())
    finally:
        await runner.cleanup()


def _bound_port(runner: web.AppRunner, asked: int) -> int:
    """The port the kernel gave (``asked`` 0: any free one)."""
    for addr in runner.addresses:
        if isinstance(addr, tuple) and len(addr) >= 2:
            return int(addr[1])
    return asked


__all__ = ["ANTHROPIC", "OPENAI", "Proxy", "Route", "endpoint", "host_is_loopback", "serve"]
