"""A loopback mock of the OpenAI Responses API, enough for the real Codex CLI to run a turn.

``POST /v1/responses`` streams (SSE) ``response.created``, the output items
(``response.output_item.added`` / ``response.output_text.delta`` / ``response.output_item.done``
for a message, a ``function_call`` item for a tool call), and ``response.completed`` with the
usage. Replies come from a scripted queue; an unscripted request gets a harmless text answer.
Every request is logged so a test can assert on what Codex sent (hook output included).
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from tests.e2e.mockserver import MockServer, Request, Response, json_response, sse

_ids = itertools.count(1)


@dataclass
class Call:
    """A function call the model makes (Codex's shell tool is ``shell`` / ``exec_command``)."""

    name: str
    arguments: dict[str, Any]
    call_id: str = ""

    def __post_init__(self) -> None:
        if not self.call_id:
            self.call_id = f"call_mock{next(_ids):06d}"


@dataclass
class OAReply:
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    input_tokens: int = 1500
    output_tokens: int = 30
    cached_tokens: int = 0
    reasoning: str | None = None  # an encrypted reasoning item first (opaque to the client)


def input_text(body: dict[str, Any]) -> str:
    """Every piece of text in a Responses request (instructions + input items)."""
    parts: list[str] = [str(body.get("instructions") or "")]

    def walk(v: Any) -> None:
        if isinstance(v, str):
            parts.append(v)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for k, x in v.items():
                if k in ("text", "content", "output", "arguments", "input"):
                    walk(x)

    walk(body.get("input"))
    return "\n".join(parts)


class MockOpenAI(MockServer):
    def __init__(self, model: str = "gpt-5-codex", **kw: Any) -> None:
        super().__init__(**kw)
        self.model = model
        self.queue: list[OAReply] = []
        self._qlock = threading.Lock()
        self.answered: list[tuple[Request, OAReply]] = []

    def script(self, *replies: OAReply) -> None:
        with self._qlock:
            self.queue.extend(replies)

    def response_requests(self) -> list[dict[str, Any]]:
        return [req.body for req, _ in self.answered]

    def codex_config(self) -> str:
        """``$CODEX_HOME/config.toml`` that points Codex at this mock and nowhere else."""
        return (
            f'model = "{self.model}"\n'
            'model_provider = "mock"\n'
            'approval_policy = "never"\n'
            'sandbox_mode = "danger-full-access"\n'
            "[model_providers.mock]\n"
            'name = "mock"\n'
            f'base_url = "{self.url}/v1"\n'
            'env_key = "OPENAI_API_KEY"\n'
            'wire_api = "responses"\n'
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n"
        )

    def handle(self, req: Request) -> Response:
        path = req.path.split("?", 1)[0]
        if req.method == "POST" and path.endswith("/responses"):
            with self._qlock:
                reply = self.queue.pop(0) if self.queue else OAReply(text="Done.")
            self.answered.append((req, reply))
            return self._stream(reply)
        if path.endswith("/models"):
            return json_response({"object": "list", "data": [], "models": []})
        return json_response({})

    def _stream(self, reply: OAReply) -> Response:
        rid = f"resp_mock{next(_ids):06d}"
        base = {"id": rid, "object": "response", "model": self.model, "status": "in_progress", "output": []}
        events: list[tuple[str | None, dict[str, Any]]] = [
            ("response.created", {"type": "response.created", "response": base}),
        ]
        output: list[dict[str, Any]] = []
        idx = 0
        if reply.reasoning is not None:
            item = {"type": "reasoning", "id": f"rs_mock{next(_ids):06d}", "summary": [],
                    "encrypted_content": reply.reasoning}
            events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": idx, "item": item}))
            events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": idx, "item": item}))
            output.append(item)
            idx += 1
        if reply.text:
            mid = f"msg_mock{next(_ids):06d}"
            item = {"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}
            events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": idx, "item": item}))
            events.append(
                (
                    "response.output_text.delta",
                    {"type": "response.output_text.delta", "item_id": mid, "output_index": idx, "content_index": 0, "delta": reply.text},
                )
            )
            done = {
                **item,
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
            events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": idx, "item": done}))
            output.append(done)
            idx += 1
        for call in reply.calls:
            item = {
                "type": "function_call",
                "id": f"fc_mock{next(_ids):06d}",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": json.dumps(call.arguments),
                "status": "completed",
            }
            events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": idx, "item": item}))
            events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": idx, "item": item}))
            output.append(item)
            idx += 1
        usage = {
            "input_tokens": reply.input_tokens,
            "input_tokens_details": {"cached_tokens": reply.cached_tokens},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.input_tokens + reply.output_tokens,
        }
        events.append(
            (
                "response.completed",
                {"type": "response.completed", "response": {**base, "status": "completed", "output": output, "usage": usage}},
            )
        )
        return sse(events)
