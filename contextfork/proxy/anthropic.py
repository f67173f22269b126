"""Anthropic Messages requests ↔ contextfork steps, and the rendered view back as an edit.

A request's ``messages`` are read as pi's are (``harness.pi.messages``): every assistant message
is one model call (one step); the user, system and other parts before it are its lead (never
touched); a ``tool_result`` part joins the step whose ``tool_use`` caused it. Unlike pi's array,
one Anthropic message holds several parts (a user message carries the results of the last call
and the next prompt), so steps point at *parts*: flat ids into ``at`` (message, part).

The answer is an edit of the original array, as pi's plan is: a message the view leaves alone
keeps its exact bytes (tool-use ids, thinking signatures, images, ``cache_control``); a dedupe
stub replaces only the ``content`` of one ``tool_result`` part (every other byte of that part
stays); a folded step loses its assistant message *and* the ``tool_result`` parts of its calls,
so pairs stay valid by construction; a fold note is a new user message before the first folded
step. ``check`` proves the result (pairs, roles, breakpoints) before anything is sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from contextfork.hashing import sha256_text
from contextfork.proxy import jsonspan
from contextfork.proxy.steps import Edit, PartSteps
from contextfork.transcript.claude_code import _assistant_blocks, _to_result, is_harness_text
from contextfork.transcript.model import Block, TextBlock

_THINKING = frozenset({"thinking", "redacted_thinking"})


def parts_of(msg: dict[str, Any]) -> list[Any]:
    """A message's content as parts (a string is one text part)."""
    content = msg.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _strip_cc(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_cc(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cc(v) for v in value]
    return value


def message_identity(msg: Any) -> str:
    """What must not change for a message to be the same one on the next call: its role and
    parts, without ``cache_control`` (Claude Code moves its breakpoints every call, and sends a
    string as a one-part list when it carries one) and without thinking (a client may drop old
    thinking; it is never part of the rendered prompt)."""
    if not isinstance(msg, dict):
        return sha256_text(jsonspan.dumps(msg))
    parts = [_strip_cc(p) for p in parts_of(msg)
             if not (isinstance(p, dict) and p.get("type") in _THINKING)]
    return sha256_text(json.dumps([msg.get("role"), parts], sort_keys=True, ensure_ascii=False))


def _lead_text(part: Any) -> str:
    if not isinstance(part, dict):
        return str(part)
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text") or "")
    if kind == "tool_result":
        return _to_result(part).content
    return f"[{kind}]"


class MessageSteps(PartSteps):
    """Anthropic ``messages`` as steps (see the module docstring)."""

    def whole(self, s: int) -> list[int]:
        return [self.assistant_at[s - 1]]

    def parts(self, value: Any) -> list[Any]:
        return parts_of(value) if isinstance(value, dict) else []

    def replaceable(self, part: Any) -> bool:
        return (isinstance(part, dict) and part.get("type") == "tool_result"
                and _text_only(part.get("content")))

    def edited_value(self, value: Any, drops: set[int], subs: dict[int, str]) -> Any:
        if not isinstance(value.get("content"), list):
            raise jsonspan.SpanError("parts to edit in a string content")
        kept = [({**p, "content": subs[j]} if j in subs else p)
                for j, p in enumerate(value["content"]) if j not in drops]
        return {**value, "content": kept} if kept else None

    def edited_text(self, raw: str, drops: set[int], subs: dict[int, str]) -> str:
        cspan, spans = _part_spans(raw)
        texts = [(_replace_member(raw[a:b], "content", subs[j]) if j in subs else raw[a:b])
                 for j, (a, b) in enumerate(spans) if j not in drops]
        return jsonspan.splice(raw, [(cspan, "[" + ",".join(texts) + "]")])

    def note_item(self, text: str) -> dict[str, Any]:
        return {"role": "user", "content": [{"type": "text", "text": text}]}

    def extend(self, new: list[Any]) -> None:
        for raw in new:
            msg = raw if isinstance(raw, dict) else {"role": "unknown", "content": str(raw)}
            i = len(self.messages)
            self.messages.append(msg)
            self.fps.append("")
            parts = parts_of(msg)
            if msg.get("role") == "assistant":
                self._assistant(i, msg, parts)
                continue
            calls = {c.id for c in self.steps[-1].tool_calls} if self.steps else set()
            for j, part in enumerate(parts):
                is_result = isinstance(part, dict) and part.get("type") == "tool_result"
                if is_result and not self.pending and str(part.get("tool_use_id")) in calls:
                    self.add_result(self.flat(i, j), _to_result(part))
                    continue
                text = _lead_text(part)
                meta = msg.get("role") != "user" or is_result or is_harness_text(text)
                self.pending.append((TextBlock(role="user", text=text, meta=meta),
                                     self.flat(i, j)))

    def _assistant(self, i: int, msg: dict[str, Any], parts: list[Any]) -> None:
        blocks: list[Block] = [b for b, _ in self.pending]
        srcs = [f for _, f in self.pending]
        lead = len(blocks)
        for j, part in enumerate(parts):
            if not isinstance(part, dict):
                continue
            got = _assistant_blocks({"content": [part]})
            if got:
                blocks.append(got[0])
                srcs.append(self.flat(i, j))
        model = msg.get("model")
        self.add_step(i, blocks, srcs, lead, model if isinstance(model, str) else None)


# -- the view as an edit (contextfork.proxy.edit builds it; these say how for this format) -----
def _part_spans(raw: str) -> tuple[tuple[int, int], list[tuple[int, int]]]:
    """The span of a message's ``content`` array in its text, and each part's span."""
    top, _ = jsonspan.members(raw)
    if "content" not in top:
        raise jsonspan.SpanError("a message without content")
    cspan = top["content"][1]
    items, _ = jsonspan.elements(raw, cspan[0])
    return cspan, [span for _, span in items]


def _replace_member(part_raw: str, key: str, text: str) -> str:
    """An object's text with member ``key`` replaced by the string ``text``; every other byte
    kept."""
    top, _ = jsonspan.members(part_raw)
    if key not in top:
        return part_raw[:-1] + "," + jsonspan.dumps({key: text})[1:]
    return jsonspan.splice(part_raw, [(top[key][1], jsonspan.dumps(text))])


def _text_only(content: Any) -> bool:
    """Content a stub may replace: text only (a stub must never drop an image)."""
    if content is None or isinstance(content, str):
        return True
    return isinstance(content, list) and all(
        isinstance(c, dict) and c.get("type") in ("text", "input_text", "output_text")
        for c in content)


# -- the proof -----------------------------------------------------------------------------
def _ids(msg: Any, kind: str, key: str) -> list[str]:
    if not isinstance(msg, dict):
        return []
    return [str(p.get(key)) for p in parts_of(msg) if isinstance(p, dict) and p.get("type") == kind]


def pair_faults(messages: list[Any], at: list[int] | None = None) -> set[str]:
    """Tool ids the API would refuse, among the messages at ``at`` (default: all): a
    ``tool_use`` whose result is not in the very next message, a ``tool_result`` whose call is
    not in the message just before it."""
    bad: set[str] = set()
    for n in range(len(messages)) if at is None else at:
        if not 0 <= n < len(messages):
            continue
        msg = messages[n]
        if not isinstance(msg, dict):
            continue
        if msg.get("role") == "assistant":
            if n + 1 >= len(messages):
                continue  # the client's own open turn (prefill): not the proxy's to judge
            answered = set(_ids(messages[n + 1], "tool_result", "tool_use_id"))
            bad.update(c for c in _ids(msg, "tool_use", "id") if c not in answered)
        else:
            prev = messages[n - 1] if n else None
            before = (set(_ids(prev, "tool_use", "id")) if isinstance(prev, dict)
                      and prev.get("role") == "assistant" else set())
            bad.update(r for r in _ids(msg, "tool_result", "tool_use_id") if r not in before)
    return bad


BREAKPOINT = '"cache_control"'


def breakpoints(texts: list[str]) -> int:
    """How many ``cache_control`` breakpoints JSON texts carry (a key is the only place the
    quoted word can stand unescaped), counted without decoding anything."""
    return sum(t.count(BREAKPOINT) for t in texts)


def check(original: list[Any], raws: list[str], edit: Edit) -> str | None:
    """None when the edit is safe to send; else why not. Only damage the edit would do counts:
    pairs it breaks, a first message of another role, assistant messages it makes adjacent,
    breakpoints it adds (removing a block removes its breakpoint with it; a breakpoint is never
    moved, so at most the client's own four remain and none sits on a removed block). Pairs
    and roles are checked where the edit changed something and around it: two neighbours the
    edit left as they were are the client's own pair."""
    out = edit.values
    if original and out and original[0].get("role") != out[0].get("role"):
        return "the first message changed role"
    near_out, near_orig = edit.window()
    new_faults = pair_faults(out, near_out) - pair_faults(original, near_orig)
    if new_faults:
        return f"tool pairs broken: {sorted(new_faults)[:3]}"
    before = breakpoints([raws[o] for o in near_orig if o < len(raws)])
    after = breakpoints([edit.texts[k] for k in near_out])
    if after > before:
        return f"{after} cache breakpoints where the request had {before}"
    if _assistant_runs(out, near_out) > _assistant_runs(original, near_orig):
        return "two assistant messages in a row"
    return None


def _assistant_runs(messages: list[Any], at: list[int]) -> int:
    return sum(1 for n in at if 0 < n < len(messages)
               and isinstance(messages[n], dict) and isinstance(messages[n - 1], dict)
               and messages[n].get("role") == messages[n - 1].get("role") == "assistant")


# -- the Messages API as the proxy sees it ---------------------------------------------------
def _key(headers: Mapping[str, str], body: Mapping[str, Any], values: list[Any],
         raws: list[str]) -> tuple[str, str, bool]:
    """(registry key, cold-store session, is the main conversation)."""
    from contextfork.proxy.adapt import fingerprint, first_identity
    from contextfork.proxy.conversation import claude_session

    first = first_identity(values, raws, message_identity)
    sid = claude_session(headers, body)
    agent = headers.get("x-claude-code-agent-id") or ""
    if sid:
        main = not agent and bool(body.get("tools"))
        store = sid if main else (f"{sid}-agent-{agent}" if agent else f"{sid}-{first[:8]}")
        return f"claude|{sid}|{agent}|{first}", store, main
    system = body.get("system")
    fp = fingerprint(jsonspan.dumps(_strip_cc(system)), first)
    return f"anon|{fp}", f"proxy-{fp}", False


def tool_names(tools: Any, key: str = "name") -> list[str]:
    return [str(t.get(key)) for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []


def hint(body: Mapping[str, Any], store: str) -> str:
    """How a note tells this model to get the originals back: the contextfork MCP tool when
    the request offers it, else the CLI through its shell tool, else where they are kept."""
    names = tool_names(body.get("tools"))
    tool = next((n for n in names if n == "contextfork_context"
                 or n.endswith("__contextfork_context")), None)
    if tool:
        return (f'{tool} with verb "peek", session_id "{store}", args {{"step": N}} '
                "gives any back exactly")
    if "Bash" in names:
        return f"`contextfork context peek --session {store} --step N` gives any back exactly"
    return f"contextfork keeps them exactly (session {store}, step N)"


def api() -> Any:
    from contextfork.proxy.adapt import Api
    from contextfork.proxy.edit import build_edit

    return Api("messages", "messages", MessageSteps, message_identity, _key, build_edit,
               check, hint)


__all__ = ["MessageSteps", "api", "breakpoints", "check", "hint", "message_identity",
           "pair_faults", "parts_of"]
