"""A loopback mock of the Anthropic Messages API, enough for the real Claude Code to run a turn.

``POST /v1/messages`` answers from a scripted queue of replies, streaming (SSE: message_start,
content_block_start / delta / stop for text and tool_use with input_json_delta, message_delta
with the usage, message_stop) or as one JSON message when the request does not ask to stream.
Every request is kept in ``requests`` (parsed body included) so a test can assert on exactly
what the client sent — the injected hook context, the messages a resumed fork replays, the
compaction request.

Claude Code sends three kinds of ``/v1/messages`` requests, told apart by ``kind``:
- ``compact``: the summarisation request of ``/compact`` or auto-compaction, recognisable by
  its summary instruction in the last user message;
- ``main``: a turn of the conversation (it carries the tool definitions);
- ``side``: anything else (titles, topic detection, …), answered with a harmless text.
Scripted replies are consumed in order by the requests whose kind they accept (``main`` by
default); an unscripted ``main`` or ``compact`` request gets a harmless default answer so a
client never hangs on the mock. ``count_tokens`` and any other endpoint answer something
harmless too.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.e2e.mockserver import MockServer, Request, Response, json_response, sse

# The summary instruction Claude Code 2.1 puts in the compaction request (checked against the
# real client by test_claude_compact…: if a new version words it differently, that test fails).
COMPACT_MARKERS = (
    "create a detailed summary of the conversation",
    "Your task is to create a detailed summary",
)
DEFAULT_SUMMARY = (
    "<analysis>The user asked for work on the repository.</analysis>\n"
    "<summary>1. Primary Request and Intent: the user is working on the repository.\n"
    "2. Pending Tasks: none.</summary>"
)

_ids = itertools.count(1)


@dataclass
class Usage:
    input_tokens: int = 1200
    output_tokens: int = 40
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    # True: input_tokens is what the request really holds (o200k over its system prompt, tool
    # schemas and messages), as a real API would report it, instead of the scripted figure
    measured: bool = False

    @property
    def context(self) -> int:
        """What Claude Code (and contextfork's ``recorded`` source) counts as the window."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }


@dataclass
class ToolUse:
    name: str
    input: dict[str, Any]
    id: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            self.id = f"toolu_mock{next(_ids):06d}"


@dataclass
class Reply:
    """One scripted model answer: some text, then tool calls (stop_reason follows)."""

    text: str = ""
    tool_uses: list[ToolUse] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    kind: str = "main"  # which requests may take it: main | compact | side | any
    when: Callable[[dict[str, Any]], bool] | None = None  # extra condition on the request body
    # an upstream error instead of a message: (status, JSON body, headers), sent as is
    error: tuple[int, dict[str, Any], dict[str, str]] | None = None
    # a reply computed from the request body (e.g. a command naming what a note says)
    make: Callable[[dict[str, Any]], Reply] | None = None

    @property
    def stop_reason(self) -> str:
        return "tool_use" if self.tool_uses else "end_turn"


def text_of(content: Any) -> str:
    """All the text of a message's content (string or blocks, tool results included)."""
    if isinstance(content, str):
        return content
    out: list[str] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                out.append(str(block.get("text", "")))
            elif block.get("type") == "tool_result":
                out.append(text_of(block.get("content")))
    return "\n".join(out)


def request_tokens(body: dict[str, Any]) -> int:
    """o200k tokens of everything a request sends: system prompt, tool schemas, messages."""
    from contextfork.tokens import count_tokens

    system = body.get("system")
    parts = [text_of(system) if isinstance(system, list) else str(system or "")]
    parts.append(json.dumps(body.get("tools") or [], ensure_ascii=False))
    for m in body.get("messages") or []:
        content = m.get("content")
        parts.append(text_of(content))
        if isinstance(content, list):
            parts += [json.dumps(b.get("input"), ensure_ascii=False) for b in content
                      if isinstance(b, dict) and b.get("type") == "tool_use"]
    return sum(count_tokens(p) for p in parts if p)


def request_text(body: dict[str, Any]) -> str:
    """Everything the model would read in this request: system + every message, as text."""
    parts: list[str] = []
    system = body.get("system")
    parts.append(text_of(system) if not isinstance(system, str) else system)
    for msg in body.get("messages", []):
        parts.append(text_of(msg.get("content")))
    return "\n".join(parts)


def classify(body: Any) -> str:
    if not isinstance(body, dict):
        return "side"
    msgs = body.get("messages") or []
    last = text_of(msgs[-1].get("content")) if msgs else ""
    if any(m in last for m in COMPACT_MARKERS):
        return "compact"
    if body.get("tools"):
        return "main"
    return "side"


class MockAnthropic(MockServer):
    """The Anthropic Messages API on 127.0.0.1, scripted per test."""

    def __init__(self, model: str = "claude-sonnet-4-5-20250929", **kw: Any) -> None:
        super().__init__(**kw)
        self.model = model
        self.queue: list[Reply] = []
        self.default_usage = Usage()
        self._qlock = threading.Lock()
        # (request, reply) for every /v1/messages request, in arrival order
        self.answered: list[tuple[Request, str, Reply]] = []

    # -- scripting
    def script(self, *replies: Reply) -> None:
        with self._qlock:
            self.queue.extend(replies)

    def pending(self) -> list[Reply]:
        with self._qlock:
            return list(self.queue)

    def _take(self, kind: str, body: dict[str, Any]) -> Reply | None:
        with self._qlock:
            for i, r in enumerate(self.queue):
                if r.kind in (kind, "any") and (r.when is None or r.when(body)):
                    return self.queue.pop(i)
        return None

    # -- views for assertions
    def message_requests(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [req.body for req, k, _ in self.answered if kind is None or k == kind]

    def main_requests(self) -> list[dict[str, Any]]:
        return self.message_requests("main")

    # -- serving
    def handle(self, req: Request) -> Response:
        path = req.path.split("?", 1)[0]
        if req.method == "POST" and path.endswith("/v1/messages/count_tokens"):
            return json_response({"input_tokens": 1000})
        if req.method == "POST" and path.endswith("/v1/messages"):
            body = req.body if isinstance(req.body, dict) else {}
            kind = classify(body)
            reply = self._take(kind, body)
            if reply is not None and reply.usage.measured:
                reply = dataclasses.replace(reply, usage=dataclasses.replace(
                    reply.usage, input_tokens=request_tokens(body), measured=False))
            if reply is None:
                if kind == "compact":
                    reply = Reply(text=DEFAULT_SUMMARY, usage=Usage(input_tokens=2000))
                elif kind == "main":
                    reply = Reply(text="Done.", usage=self.default_usage)
                else:
                    reply = Reply(text="OK", usage=Usage(input_tokens=50, output_tokens=5))
            if reply.make is not None:
                reply = reply.make(body)
            self.answered.append((req, kind, reply))
            if reply.error is not None:
                status, payload, headers = reply.error
                return Response(status, json.dumps(payload).encode("utf-8"), headers=headers)
            if body.get("stream"):
                return self._stream(reply)
            return json_response(self._message(reply, full=True))
        # anything else the client asks (feature flags, quotas, …): empty and harmless
        return json_response({})

    def _message(self, reply: Reply, *, full: bool) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if full:
            if reply.text:
                content.append({"type": "text", "text": reply.text})
            for tu in reply.tool_uses:
                content.append({"type": "tool_use", "id": tu.id, "name": tu.name, "input": tu.input})
        usage = reply.usage.as_dict()
        if not full:
            usage = {**usage, "output_tokens": 1}
        return {
            "id": f"msg_mock{next(_ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": reply.stop_reason if full else None,
            "stop_sequence": None,
            "usage": usage,
        }

    def _stream(self, reply: Reply) -> Response:
        events: list[tuple[str | None, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": self._message(reply, full=False)}),
            ("ping", {"type": "ping"}),
        ]
        index = 0
        if reply.text:
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                )
            )
            half = len(reply.text) // 2
            for chunk in (reply.text[:half], reply.text[half:]):
                if chunk:
                    events.append(
                        (
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": index,
                                "delta": {"type": "text_delta", "text": chunk},
                            },
                        )
                    )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        for tu in reply.tool_uses:
            events.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "tool_use", "id": tu.id, "name": tu.name, "input": {}},
                    },
                )
            )
            raw = json.dumps(tu.input)
            cut = len(raw) // 2
            for chunk in (raw[:cut], raw[cut:]):
                events.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": chunk},
                        },
                    )
                )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                    "usage": reply.usage.as_dict(),
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return sse(events)


def dump(bodies: list[dict[str, Any]]) -> str:
    """A compact rendering of request bodies for assertion messages."""
    return json.dumps(bodies, indent=1)[:4000]
