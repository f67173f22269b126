"""Where each member of a JSON object and each element of a JSON array sits in the text.

The proxy forwards a request it edits by splicing: every byte outside what it changes is the
client's own (key order, escapes, number spelling, ``cache_control`` and thinking signatures),
so an untouched message is byte-identical and a prefix the vendor cached stays a prefix.
``json.loads`` loses positions, so this walks the document with the C decoder's ``raw_decode``
(one parse in all: each value is decoded once, where it stands) and records spans.
A document with a duplicated key is refused: which of two values counts would be the parser's
choice, and the proxy and the vendor might not choose alike.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")

Span = tuple[int, int]


class SpanError(ValueError):
    """The text is not the JSON shape asked for (the proxy then forwards it untouched)."""


def _skip(text: str, i: int) -> int:
    m = _WS.match(text, i)
    return m.end() if m else i


def _value(text: str, i: int) -> tuple[Any, int]:
    try:
        return _DECODER.raw_decode(text, i)
    except json.JSONDecodeError as err:
        raise SpanError(f"invalid JSON at {err.pos}: {err.msg}") from None


def _key(text: str, i: int) -> tuple[str, int]:
    """A member's key at ``text[i]`` and where its value starts (past the ``:``)."""
    if i >= len(text) or text[i] != '"':
        raise SpanError(f"expected a key at {i}")
    try:
        key, i = scanstring(text, i + 1)
    except json.JSONDecodeError as err:
        raise SpanError(f"invalid key at {err.pos}") from None
    i = _skip(text, i)
    if i >= len(text) or text[i] != ":":
        raise SpanError(f"expected ':' at {i}")
    return key, _skip(text, i + 1)


def members(text: str, start: int = 0) -> tuple[dict[str, tuple[Any, Span]], int]:
    """The object at ``text[start:]``: key -> (value, span of the value), and its end."""
    i = _skip(text, start)
    if i >= len(text) or text[i] != "{":
        raise SpanError("expected a JSON object")
    out: dict[str, tuple[Any, Span]] = {}
    i = _skip(text, i + 1)
    if i < len(text) and text[i] == "}":
        return out, i + 1
    while True:
        key, i = _key(text, i)
        value, end = _value(text, i)
        if key in out:
            raise SpanError(f"duplicate key {key!r}")
        out[key] = (value, (i, end))
        i = _skip(text, end)
        if i < len(text) and text[i] == "}":
            return out, i + 1
        if i >= len(text) or text[i] != ",":
            raise SpanError(f"expected ',' or '}}' at {i}")
        i = _skip(text, i + 1)


def elements(text: str, start: int,
             known: tuple[list[str], list[Any]] | None = None) -> tuple[list[tuple[Any, Span]], int]:
    """The array at ``text[start:]``: each element's value and span, and the array's end.

    ``known``: the texts and values of the elements a previous document had at the start of
    this array; an element whose text is again exactly there is taken without decoding (a
    complete JSON object cannot continue past its closing brace)."""
    i = _skip(text, start)
    if i >= len(text) or text[i] != "[":
        raise SpanError("expected a JSON array")
    out: list[tuple[Any, Span]] = []
    i = _skip(text, i + 1)
    if i < len(text) and text[i] == "]":
        return out, i + 1
    texts, values = known if known is not None else ([], [])
    while True:
        n = len(out)
        old = texts[n] if n < len(texts) else None
        if old is not None and old[:1] == "{" and text.startswith(old, i):
            value, end = values[n], i + len(old)
        else:
            value, end = _value(text, i)
        out.append((value, (i, end)))
        i = _skip(text, end)
        if i < len(text) and text[i] == "]":
            return out, i + 1
        if i >= len(text) or text[i] != ",":
            raise SpanError(f"expected ',' or ']' at {i}")
        i = _skip(text, i + 1)


def document(text: str, array_key: str,
             known: list[tuple[list[str], list[Any]]] | None = None,
             ) -> tuple[dict[str, tuple[Any, Span]], list[tuple[Any, Span]], int | None]:
    """A top-level object, the elements of its array member ``array_key`` ([] when absent),
    and which of ``known`` (earlier arrays: texts and values) this one starts like.

    The array is walked element by element, so the body is decoded once in all; with a known
    array whose first element is again there, only what changed since is decoded."""
    i = _skip(text, 0)
    if i >= len(text) or text[i] != "{":
        raise SpanError("the body is not a JSON object")
    out: dict[str, tuple[Any, Span]] = {}
    items: list[tuple[Any, Span]] = []
    matched: int | None = None
    i = _skip(text, i + 1)
    if i < len(text) and text[i] == "}":
        return out, items, matched
    while True:
        key, i = _key(text, i)
        if key in out:
            raise SpanError(f"duplicate key {key!r}")
        if key == array_key and i < len(text) and text[i] == "[":
            first = _skip(text, i + 1)
            matched = next((n for n, (texts, _) in enumerate(known or [])
                            if texts and text.startswith(texts[0], first)), None)
            items, end = elements(text, i, (known or [])[matched] if matched is not None
                                  else None)
            out[key] = ([v for v, _ in items], (i, end))
        else:
            value, end = _value(text, i)
            out[key] = (value, (i, end))
        i = _skip(text, end)
        if i < len(text) and text[i] == "}":
            if _skip(text, i + 1) != len(text):
                raise SpanError("text after the JSON object")
            return out, items, matched
        if i >= len(text) or text[i] != ",":
            raise SpanError(f"expected ',' or '}}' at {i}")
        i = _skip(text, i + 1)


def dumps(value: Any) -> str:
    """New JSON the way the clients write theirs (compact, UTF-8 kept)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def splice(text: str, edits: list[tuple[Span, str]]) -> str:
    """``text`` with each span replaced (spans sorted, not overlapping)."""
    out: list[str] = []
    pos = 0
    for (a, b), new in sorted(edits, key=lambda e: e[0]):
        if a < pos:
            raise SpanError("overlapping edits")
        out.append(text[pos:a])
        out.append(new)
        pos = b
    out.append(text[pos:])
    return "".join(out)


__all__ = ["SpanError", "document", "dumps", "elements", "members", "splice"]
