"""Flattening message ``content`` (a string or a list of typed parts) to plain text.

Every harness writes content the same way: a bare string, or a list of ``{"type": ..., "text":
...}`` parts, some of which (images, documents) stand in as a placeholder. The formats differ
only in which part types carry text, which get a placeholder, whether bare strings may appear in
the list and whether a non-string ``text`` is kept, so those are the parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

IMAGE: Mapping[str, str] = {"image": "[image]"}


def flatten_text(
    content: Any,
    *,
    kinds: tuple[str, ...] | None = ("text",),
    markers: Mapping[str, str] = IMAGE,
    strings: bool = False,
    coerce: bool = False,
) -> str:
    """The text parts of ``content`` joined by newlines (a string is returned as it is).

    ``kinds``: the part types whose ``text`` counts (``None``: any part that has a ``text``).
    ``markers``: part type → placeholder for parts with no text of their own (``[image]``).
    ``strings``: bare strings in the list count as text. ``coerce``: keep a non-string ``text``
    as ``str(text)`` (a missing one as ``""``) instead of skipping the part.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for c in content:
        if isinstance(c, str):
            if strings:
                parts.append(c)
            continue
        if not isinstance(c, dict):
            continue
        kind = c.get("type")
        if kind in kinds if kinds is not None else "text" in c:
            text = c.get("text")
            if isinstance(text, str):
                parts.append(text)
                continue
            if coerce:
                parts.append(str(c.get("text", "")))
                continue
        if isinstance(kind, str) and kind in markers:
            parts.append(markers[kind])
    return "\n".join(parts)
