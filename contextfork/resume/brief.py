"""The resume brief: what a new agent session reads first, rendered from a template.

Failed approaches are turned into explicit "DO NOT RETRY" lines because that is the part an
agent loses first after a handoff and the one that costs most to rediscover.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextfork.package.models import Handoff, SessionMetadata
from contextfork.resources import render_template
from contextfork.resume.apply import ApplyOutcome
from contextfork.resume.drift import DriftReport
from contextfork.resume.models import ConsumedState

FILE_LIMIT = 20


def render(
    package_id: str,
    meta: SessionMetadata,
    handoff: Handoff,
    drift: DriftReport,
    consumed: ConsumedState,
    applied: ApplyOutcome | None = None,
    root: Path | None = None,
    record: dict[str, Any] | None = None,
    origin: dict[str, Any] | None = None,
    shown_summary: str | None = None,
) -> str:
    """``record``: the package's ``handoff_claims.json`` (where each part came from);
    ``origin``: its provenance record (``contextfork.provenance``); ``shown_summary``: SHA-256
    of the harness's compaction summary the reader already has in its context (a fork carries
    it): a part harvested from that summary is named, not repeated."""
    from contextfork.provenance import describe, is_foreign

    parts: dict[str, Any] = (record or {}).get("parts") or {}
    files: list[tuple[str, list[str]]] = [
        ("Changed since export", drift.changed),
        ("Missing (in the package, not here)", drift.missing),
        ("New (here, not in the package)", drift.new),
        ("Not captured at export", drift.not_captured),
    ]
    ctx: dict[str, Any] = {
        "package_id": package_id,
        "meta": meta.model_dump(),
        "h": handoff.model_dump(),
        "drift_lines": drift.summary_lines(),
        "drift_files": files,
        "limit": FILE_LIMIT,
        "applied": applied.to_json() if applied else None,
        "consumed_before": [c.model_dump() for c in consumed.consumptions],
        "session": meta.parent_session_id,
        "cold_stores": _cold_stores(root, meta.cold_store_refs),
        "parts": parts,
        "shown": shown_parts(parts, shown_summary),
        "counts": (record or {}).get("counts") if (record or {}).get("claims") else None,
        "origin": describe(origin) if origin else "unknown (no provenance record)",
        "foreign": origin is None or is_foreign(origin),
    }
    return render_template("resume_brief.md.j2", **ctx)


def shown_parts(parts: dict[str, Any], shown_summary: str | None) -> set[str]:
    """The parts taken whole from the compaction summary the reader already sees."""
    if not shown_summary:
        return set()
    return {name for name, prov in parts.items() if isinstance(prov, dict)
            and prov.get("source") == "harness-summary" and prov.get("sha256") == shown_summary}


def _cold_stores(root: Path | None, refs: list[str]) -> list[dict[str, object]]:
    """Each store the package names, whether this checkout has it, and the command to fetch it."""
    if not refs:
        return []
    from contextfork.cold.missing import store_state

    if root is None:
        return [{"ref": r, "session": None, "present": False, "fetch": None} for r in refs]
    return store_state(root, refs)
