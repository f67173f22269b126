"""A Claude Code line decoded by msgspec into only the fields ``status`` reads, then its ``Line``.

``msgspec`` decodes a line into these ``Struct`` types in C and skips every other field (a
call's result as the harness kept it, thinking signatures, images' data) without building a
Python object for it: most of a line's bytes. ``line`` returns None whenever this decode cannot
promise what the generic pass (``ccread``: pydantic-core, else ``json``) makes of the line, and
that pass then reads it as before:

- msgspec refuses the line or a field is not of the declared type (a number where a string is
  read, a ``NaN``, a lone surrogate, an integer outside 64 bits, anything unexpected);
- a byte that is not UTF-8 (msgspec does not check the fields it skips; ``json`` refuses the
  line), nesting deep enough for ``json`` to give up, or an integer longer than Python's
  ``int`` parses (``sys.get_int_max_str_digits``): ``json`` refuses those lines, msgspec skips
  them;
- a compaction boundary (rare: the generic digest reads its metadata).

The ``Line`` built here equals ``Line.of`` of the same line's dict (tests/telemetry/
test_status_fast.py compares the reports and the cached lines on real and hostile input).
"""

from __future__ import annotations

import functools
import re
import sys
from typing import Any

import msgspec

from contextfork.forkstub import STUB_PREFIX
from contextfork.telemetry.ccline import Block, Line, Unsupported, estimate
from contextfork.telemetry.scan import ScanState

__all__ = ["Rec", "decode", "feed", "line", "long_digits", "scan_obj"]


class Part(msgspec.Struct):
    """One part of a tool result's content (or of a user message's)."""

    type: str | None = None
    text: str | None = None


class CBlock(msgspec.Struct):
    """One block of a message's content list, any type: the fields any block type reads."""

    type: str | None = None
    text: str | None = None
    thinking: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None
    tool_use_id: str | None = None
    content: str | list[Part | str] | None = None
    is_error: bool | None = None


class Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None


class Message(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    content: str | list[CBlock | str] | None = None
    usage: Usage | None = None


class Fork(msgspec.Struct):
    sessionId: str | None = None


class Rec(msgspec.Struct):
    type: str | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    logicalParentUuid: str | None = None
    isSidechain: bool | None = None
    forkedFrom: Fork | None = None
    cwd: str | None = None
    gitBranch: str | None = None
    sessionId: str | None = None
    timestamp: str | None = None
    requestId: str | None = None
    subtype: str | None = None
    message: Message | None = None


_DECODER = msgspec.json.Decoder(Rec)
#: ``json`` gives up near the interpreter's recursion limit (1000 deep, less the caller's
#: frames), msgspec a little later: a line with more brackets than this is left to ``json``.
_NESTING = 900
#: every byte but ``[`` and ``{``: deleting them leaves the openings (one pass, not two counts)
_NOT_OPENING = bytes(c for c in range(256) if c not in b"[{")
_STRIDE = 64  # the digit-run check samples every 64th byte first


@functools.cache
def _digit_runs(limit: int) -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    """(in the strided sample, in the line) a run of ``limit + 1`` digits: every ``_STRIDE``-th
    byte of such a run is a digit, so the sample holds a run of ``(limit + 1) // _STRIDE``."""
    sample = max(1, (limit + 1) // _STRIDE)
    return re.compile(rb"[0-9]{%d}" % sample), re.compile(rb"[0-9]{%d}" % (limit + 1))


def _long_digits(raw: bytes) -> bool:
    """A run of digits longer than ``int`` parses (``json`` refuses such a number)."""
    limit = sys.get_int_max_str_digits()
    if not limit or len(raw) <= limit:
        return False
    sample, whole = _digit_runs(limit)
    return sample.search(raw[::_STRIDE]) is not None and whole.search(raw) is not None


def long_digits(raw: bytes) -> bool:
    """``raw`` (a line, or many) holds a run of digits longer than ``int`` parses: when a
    chunk of lines holds none, none of its lines does (``decode(..., digits=False)``)."""
    return _long_digits(raw)


def decode(raw: bytes, *, digits: bool = True) -> Rec | None:
    """The line's ``Rec``, or None: the generic pass reads it (``raw`` is a complete line that
    does not start with white space; ``digits=False``: it is known to hold no run of digits
    longer than ``int`` parses)."""
    if not raw.isascii():
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if len(raw) > 2 * _NESTING and len(raw.translate(None, _NOT_OPENING)) > _NESTING:
        return None
    if digits and _long_digits(raw):
        return None
    try:
        rec = _DECODER.decode(raw)
    except (msgspec.MsgspecError, RecursionError, UnicodeDecodeError, ValueError):
        return None
    if rec.type == "system" and rec.subtype == "compact_boundary":
        return None
    return rec


def line(rec: Rec) -> Line:
    """``Line.of`` of the line ``rec`` was decoded from."""
    kind, msg = rec.type, rec.message  # ids are strings or None by type: ``check`` passes
    if rec.isSidechain:
        raise Unsupported("sidechain lines in the main file")
    ln = Line()
    ln.kind, ln.uuid, ln.parent_uuid = kind, rec.uuid, rec.parentUuid
    ln.parent = rec.parentUuid or rec.logicalParentUuid
    ln.forked = rec.forkedFrom is not None
    ln.cwd, ln.branch = rec.cwd, rec.gitBranch
    if kind == "assistant":
        ln.d = _assistant(rec, msg)
    elif kind == "user":
        ln.d = _user(msg)
    elif kind == "system":
        ln.d = ["s", False]  # boundaries are read by the generic pass
    else:
        ln.d = None
    return ln


_MARKERS = {"image": "[image]", "document": "[document]"}
_EXIT_RE = re.compile(r"^Exit code (-?\d+)")


def _text(content: str | list[Part | str] | list[CBlock | str] | None) -> str:
    """``ccline.content_text``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for c in content:
        if isinstance(c, str):
            parts.append(c)
            continue
        kind = c.type
        if kind == "text" and c.text is not None:
            parts.append(c.text)
        elif kind is not None and kind in _MARKERS:
            parts.append(_MARKERS[kind])
    return "\n".join(parts)


def _assistant(rec: Rec, msg: Message | None) -> list[Any]:
    if msg is None:
        key = rec.requestId or rec.uuid
        return ["a", None, key, [], [], None, None]
    key = msg.id or rec.requestId or rec.uuid
    content = msg.content
    calls: list[str] = []
    blocks: list[Block] = []
    if isinstance(content, str):
        if content:
            blocks.append(("est", "assistant_history", estimate(content)))
    elif content is not None:
        for b in content:
            if isinstance(b, str):
                continue
            kind = b.type
            if kind == "tool_use":
                calls.append(str(b.id))
            if kind == "text" and b.text is not None:
                blocks.append(("est", "assistant_history", estimate(b.text)))
            elif kind == "thinking":
                blocks.append(("est", "assistant_history", estimate(b.thinking or "")))
            elif kind == "redacted_thinking":
                blocks.append(("est", "assistant_history", estimate("[redacted thinking]")))
            elif kind in ("tool_use", "server_tool_use"):
                inp = b.input
                blocks.append(("call", b.id or "", b.name or "",
                               inp if type(inp) is dict else {"value": inp}))  # fmt: skip
    u = msg.usage
    usage = None if u is None else (u.input_tokens or 0, u.cache_creation_input_tokens or 0,
                                    u.cache_read_input_tokens or 0, u.output_tokens or 0)  # fmt: skip
    return ["a", msg.id, key, calls, blocks, usage, msg.model]


def _user(msg: Message | None) -> list[Any]:
    content = None if msg is None else msg.content
    if content is not None and not isinstance(content, str):
        results = [b for b in content if not isinstance(b, str) and b.type == "tool_result"]
        if results:
            return ["u", [str(b.tool_use_id) for b in results], [_result(b) for b in results]]
    text = _text(content)
    return ["u", [], [("est", "user_history", estimate(text))] if text else []]


def _result(b: CBlock) -> Block:
    text = _text(b.content)
    is_error = bool(b.is_error)
    m = _EXIT_RE.match(text)
    code = int(m.group(1)) if m else None
    failed = is_error or (code is not None and code != 0)
    return ("result", b.tool_use_id or "", estimate(text), is_error, code,
            text if failed else None, text.startswith(STUB_PREFIX))  # fmt: skip


def scan_obj(rec: Rec) -> dict[str, Any]:
    """What ``scan._feed`` reads of the line, as the dict it reads it from."""
    obj: dict[str, Any] = {"timestamp": rec.timestamp, "sessionId": rec.sessionId, "cwd": rec.cwd,
                           "type": rec.type, "isSidechain": rec.isSidechain,
                           "subtype": rec.subtype, "requestId": rec.requestId}  # fmt: skip
    if rec.forkedFrom is not None:
        obj["forkedFrom"] = {"sessionId": rec.forkedFrom.sessionId}
    msg = rec.message
    if msg is not None:
        m: dict[str, Any] = {"id": msg.id, "model": msg.model}
        u = msg.usage
        if u is not None:
            m["usage"] = {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                          "cache_creation_input_tokens": u.cache_creation_input_tokens,
                          "cache_read_input_tokens": u.cache_read_input_tokens}  # fmt: skip
        obj["message"] = m
    return obj


def feed(state: ScanState, seen_ids: set[str], rec: Rec) -> None:
    """``scan._feed(state, seen_ids, scan_obj(rec))`` without the dict: the struct's types
    stand for ``_feed``'s checks (a string or None, an int that is not a bool or None).
    tests/telemetry/test_status_struct.py compares the two states on every recorded line."""
    _moved(state, rec)
    kind = rec.type
    sidechain = bool(rec.isSidechain)  # (a compaction boundary is never decoded here)
    msg = rec.message
    if msg is None or msg.usage is None:
        return
    u = msg.usage
    inp, out = u.input_tokens or 0, u.output_tokens or 0
    cc, cr = u.cache_creation_input_tokens or 0, u.cache_read_input_tokens or 0
    mid = msg.id
    if mid:
        rid = rec.requestId
        key = f"{mid}:{rid if rid is not None else ''}"
        entry = [0 if sidechain else 1, inp + out + cc + cr, inp, out, cc, cr]
        old = state.billing.get(key)
        if old is None or (entry[0], entry[1]) > (old[0], old[1]):
            state.billing[key] = entry
    else:
        unkeyed = state.unkeyed
        unkeyed[0] += 1
        unkeyed[1] += inp
        unkeyed[2] += out
        unkeyed[3] += cc
        unkeyed[4] += cr
    if kind != "assistant" or sidechain:
        return
    model = msg.model
    context = inp + cc + cr
    if model == "<synthetic>" or context == 0:
        return
    origin = rec.forkedFrom
    if origin is not None:  # copied by a fork: recorded for the original session
        if origin.sessionId is not None:
            state.forked_from = origin.sessionId
        state.inherited_tokens = context
        if mid is not None and mid not in seen_ids:
            seen_ids.add(mid)
            state.inherited_ids.append(mid)
        return
    if model is not None:
        state.model = model
    state.active_tokens = context
    state.active_output = out
    if mid is not None and mid not in seen_ids:
        seen_ids.add(mid)
        state.message_ids.append(mid)


def _moved(state: ScanState, rec: Rec) -> None:
    """What any line fed moves: the scan's first and last timestamps, session id and cwd."""
    ts = rec.timestamp
    if ts is not None:
        state.saw(ts)
    if state.session_id is None and rec.sessionId is not None:
        state.session_id = rec.sessionId
    if rec.cwd is not None:
        state.cwd = rec.cwd
