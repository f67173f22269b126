"""A fork's compaction boundaries pointed at its new uuids (``harness.fork``)."""

from __future__ import annotations

from typing import Any


def rename_preserved(obj: dict[str, Any], renamed: dict[str, str]) -> None:
    """Point a boundary's preserved segment at the fork's uuids.

    Claude Code 2.1 rebuilds the live view on resume from ``compactMetadata.preservedSegment``
    (walk ``tailUuid`` back to ``headUuid``, hang it after ``anchorUuid``, the summary); left on
    the original's uuids the walk fails and the resumed fork silently drops those messages.
    """
    meta = obj.get("compactMetadata")
    if not isinstance(meta, dict):
        return
    seg = meta.get("preservedSegment")
    if isinstance(seg, dict):
        for k in ("headUuid", "anchorUuid", "tailUuid"):
            if isinstance(seg.get(k), str) and seg[k] in renamed:
                seg[k] = renamed[seg[k]]
    listed = meta.get("preservedMessages")
    if isinstance(listed, dict):
        if isinstance(listed.get("anchorUuid"), str) and listed["anchorUuid"] in renamed:
            listed["anchorUuid"] = renamed[listed["anchorUuid"]]
        for k in ("uuids", "allUuids"):
            if isinstance(listed.get(k), list):
                listed[k] = [renamed.get(u, u) if isinstance(u, str) else u for u in listed[k]]
