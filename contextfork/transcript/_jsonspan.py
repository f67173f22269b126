"""Byte-exact spans of the elements of a JSON array inside a JSON document.

Whole-document formats (mini-swe-agent trajectories, plain message arrays) have no lines, but
the cold store still needs each message's exact source bytes and offset; ``json.load`` loses
them, so this walks the document with ``raw_decode`` and records where each element sits.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextfork.errors import UsageError
from contextfork.inputfile import read_regular

_WS = " \t\n\r"
_DECODER = json.JSONDecoder()


@dataclass
class Element:
    offset: int  # byte offset in the file
    text: str  # exact source text of the element
    value: Any


def read_text(path: Path) -> str:
    """The file as text; a FIFO or device is refused (``open_regular``), a BOM is kept."""
    data = read_regular(path, "transcript")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(f"{path}: byte {err.start}: not UTF-8 text") from None


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _bad(path: Path, text: str, pos: int, what: str) -> UsageError:
    return UsageError(f"{path}: line {_line_of(text, pos)}: {what}")


def _array(path: Path, text: str, i: int) -> tuple[list[Element], int]:
    out: list[Element] = []
    i = _skip(text, i + 1)
    byte_pos = len(text[:i].encode("utf-8"))
    last = i
    if i < len(text) and text[i] == "]":
        return out, i + 1
    while True:
        i = _skip(text, i)
        byte_pos += len(text[last:i].encode("utf-8"))
        try:
            value, end = _DECODER.raw_decode(text, i)
        except json.JSONDecodeError as err:
            raise _bad(path, text, err.pos, f"invalid JSON ({err.msg})") from None
        chunk = text[i:end]
        out.append(Element(byte_pos, chunk, value))
        byte_pos += len(chunk.encode("utf-8"))
        last = end
        i = _skip(text, end)
        if i >= len(text):
            raise _bad(path, text, i, "unterminated array")
        if text[i] == "]":
            return out, i + 1
        if text[i] != ",":
            raise _bad(path, text, i, "expected ',' or ']' in array")
        i += 1


def document(path: Path, key: str) -> tuple[Any, list[Element]]:
    """Parse ``path``; return the whole value and the spans of its array (top level or ``key``)."""
    text = read_text(path)
    bom = 1 if text.startswith("\ufeff") else 0  # a BOM is no part of the document
    i = _skip(text, bom)
    if i >= len(text):
        raise UsageError(f"{path}: empty file, not a transcript")
    try:
        whole = json.loads(text[bom:])
    except json.JSONDecodeError as err:
        raise _bad(path, text, err.pos + bom, f"invalid JSON ({err.msg})") from None
    except RecursionError:
        raise UsageError(f"{path}: JSON nested too deeply, not a transcript") from None
    if text[i] == "[":
        elements, _ = _array(path, text, i)
        return whole, elements
    if text[i] != "{" or not isinstance(whole, dict):
        raise _bad(path, text, i, "expected a JSON object or array")
    i = _skip(text, i + 1)
    while i < len(text) and text[i] != "}":
        name, i = _DECODER.raw_decode(text, i)
        i = _skip(text, i)
        i = _skip(text, i + 1)  # ':'
        if name == key and text[i] == "[":
            elements, _ = _array(path, text, i)
            return whole, elements
        _, i = _DECODER.raw_decode(text, i)
        i = _skip(text, i)
        if i < len(text) and text[i] == ",":
            i = _skip(text, i + 1)
    raise UsageError(f"{path}: no '{key}' list in this JSON document: not a transcript")
