"""OpenAI Responses requests (as Codex sends them) ↔ contextfork steps.

Codex 0.169 sends ``POST /responses`` with ``store: false`` and the whole conversation in
``input`` on every call (no ``previous_response_id``), keyed by ``prompt_cache_key`` (its
thread id). ``input`` is a flat list of items: messages (``developer``/``user`` ones are a
step's lead, never touched; ``assistant`` ones are model output), ``reasoning`` (encrypted:
kept or dropped whole, never edited), tool calls (``function_call``, ``custom_tool_call``,
``local_shell_call``, …) and their outputs (``*_call_output``, matched by ``call_id``).

A step is one model call: the run of output items up to the next output of a tool or the next
lead. Folding it drops all its output items and exactly the outputs of its calls; a dedupe stub
replaces an output's text (``output`` as a string only); a note is a user message item.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from contextfork.hashing import sha256_text
from contextfork.proxy import jsonspan
from contextfork.proxy.steps import Edit, PartSteps
from contextfork.transcript.codex import _META_PREFIXES, _call, _output_text, _texts
from contextfork.transcript.model import Block, TextBlock, ThinkingBlock, ToolResult

OUTPUTS = frozenset({"reasoning", "function_call", "custom_tool_call", "local_shell_call",
                     "web_search_call", "image_generation_call", "code_interpreter_call",
                     "file_search_call", "computer_call", "mcp_call", "tool_search_call"})
RESULTS = frozenset({"function_call_output", "custom_tool_call_output",
                     "local_shell_call_output", "computer_call_output", "mcp_call_output",
                     "tool_search_output"})


def _kind(item: Any) -> str:
    """output | result | lead."""
    if not isinstance(item, dict):
        return "lead"
    t = item.get("type")
    if t in OUTPUTS or ((t in (None, "message")) and item.get("role") == "assistant"):
        return "output"
    if t in RESULTS:
        return "result"
    return "lead"


def _block(item: dict[str, Any]) -> Block:
    t = item.get("type")
    if t == "reasoning":
        text = _texts(item.get("summary")) or _texts(item.get("content"))
        return ThinkingBlock(text=text or "[encrypted reasoning]")
    if t in (None, "message"):
        return TextBlock(role="assistant", text=_texts(item.get("content")))
    return _call(item)


def item_identity(item: Any) -> str:
    """An item's identity: its whole JSON (Codex does not move anything between calls)."""
    return sha256_text(json.dumps(item, sort_keys=True, ensure_ascii=False))


class ResponseSteps(PartSteps):
    """Responses ``input`` items as steps: each item is one part of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.outputs: list[list[int]] = []
        self.open_output = False  # the last item was a model output: the next continues it

    def extend(self, new: list[Any]) -> None:
        for raw in new:
            item = raw if isinstance(raw, dict) else {"type": "message", "role": "user",
                                                      "content": str(raw)}
            i = len(self.messages)
            self.messages.append(item)
            self.fps.append("")
            kind = _kind(item)
            if kind == "output":
                block = _block(item)
                if self.open_output and not self.pending and self.steps:
                    self.steps[-1].blocks.append(block)
                    self.sources[-1].append(self.flat(i, 0))
                    self.outputs[-1].append(i)
                else:
                    blocks = [b for b, _ in self.pending]
                    srcs = [f for _, f in self.pending]
                    lead = len(blocks)
                    self.add_step(i, [*blocks, block], [*srcs, self.flat(i, 0)], lead, None)
                    self.outputs.append([i])
                self.open_output = True
                continue
            self.open_output = False
            calls = {c.id for c in self.steps[-1].tool_calls} if self.steps else set()
            if kind == "result" and not self.pending and str(item.get("call_id")) in calls:
                text, ok = _output_text(item.get("output"))
                self.add_result(self.flat(i, 0), ToolResult(
                    call_id=str(item.get("call_id")), content=text, is_error=ok is False))
                continue
            role = item.get("role")
            text = (_output_text(item.get("output"))[0] if kind == "result"
                    else _texts(item.get("content")))
            meta = role != "user" or text.lstrip().startswith(_META_PREFIXES)
            self.pending.append((TextBlock(role="user", text=text, meta=meta), self.flat(i, 0)))

    # -- edits: an item is its own one part ------------------------------------------------
    def whole(self, s: int) -> list[int]:
        return self.outputs[s - 1]

    def parts(self, value: Any) -> list[Any]:
        return [value]

    def replaceable(self, part: Any) -> bool:
        return isinstance(part, dict) and _kind(part) == "result" and isinstance(
            part.get("output"), str)

    def edited_value(self, value: Any, drops: set[int], subs: dict[int, str]) -> Any:
        if 0 in drops:
            return None
        return {**value, "output": subs[0]} if 0 in subs else value

    def edited_text(self, raw: str, drops: set[int], subs: dict[int, str]) -> str:
        if 0 in drops or 0 not in subs:
            raise jsonspan.SpanError("nothing to splice")
        top, _ = jsonspan.members(raw)
        if "output" not in top:
            raise jsonspan.SpanError("an output item without output")
        return jsonspan.splice(raw, [(top["output"][1], jsonspan.dumps(subs[0]))])

    def note_item(self, text: str) -> dict[str, Any]:
        return {"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": text}]}


# -- the proof -----------------------------------------------------------------------------
def pair_faults(items: list[Any]) -> set[str]:
    """Call ids the API would refuse: a call without its output after it, an output without
    its call before it."""
    calls: set[str] = set()
    answered: set[str] = set()
    bad: set[str] = set()
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = _kind(item)
        cid = item.get("call_id")
        if kind == "output" and isinstance(cid, str) and item.get("type") != "reasoning":
            calls.add(cid)
        elif kind == "result" and isinstance(cid, str):
            if cid not in calls:
                bad.add(cid)
            answered.add(cid)
    return bad | (calls - answered)


def check(original: list[Any], raws: list[str], edit: Edit) -> str | None:
    """None when the edit is safe to send (only faults the edit adds count)."""
    del raws
    out = edit.values
    if original and out and _kind(original[0]) != _kind(out[0]):
        return "the first item changed kind"
    new = pair_faults(out) - pair_faults(original)
    if new:
        return f"tool pairs broken: {sorted(new)[:3]}"
    return None


# -- the Responses API as the proxy sees it -----------------------------------------------
def _key(headers: Mapping[str, str], body: Mapping[str, Any], values: list[Any],
         raws: list[str]) -> tuple[str, str, bool]:
    from contextfork.proxy.adapt import fingerprint, first_identity

    first = first_identity(values, raws, item_identity)
    key = body.get("prompt_cache_key")
    sid = key if isinstance(key, str) and key else headers.get("session-id") or ""
    if sid:
        return f"codex|{sid}|{first}", sid, True
    fp = fingerprint(str(body.get("instructions") or ""), first)
    return f"anon|{fp}", f"proxy-{fp}", False


def hint(body: Mapping[str, Any], store: str) -> str:
    """The contextfork MCP tool when Codex offers it, else the CLI through its shell."""
    names = [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]
    tool = next((n for n in names if n == "contextfork_context"
                 or n.endswith("__contextfork_context")), None)
    if tool:
        return (f'{tool} with verb "peek", session_id "{store}", args {{"step": N}} '
                "gives any back exactly")
    if any(n in ("exec_command", "shell", "local_shell") for n in names):
        return f"`contextfork context peek --session {store} --step N` gives any back exactly"
    return f"contextfork keeps them exactly (session {store}, step N)"


def api() -> Any:
    from contextfork.proxy.adapt import Api
    from contextfork.proxy.edit import build_edit

    return Api("responses", "input", ResponseSteps, item_identity, _key, build_edit, check,
               hint)


__all__ = ["ResponseSteps", "api", "check", "hint", "item_identity", "pair_faults"]
