"""Packages as the inspector shows them: validation, drift, the handoff parts, files, patch.

Each package is validated and compared with the live repository while the site is built, with
the same code as `validate` and `resume` (nothing is marked consumed), so the page says what
those commands would say.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextfork.jinjafilters import provenance
from contextfork.view.handoff import prose

HANDOFF_PARTS = [
    ("active_goal", "1 · Active goal & scope"),
    ("settled_decisions", "2 · Settled decisions, tradeoffs & evidence"),
    ("working_tree_state", "3 · Working tree state"),
    ("failed_approaches", "4 · Failed approaches & known pitfalls"),
    ("open_risks", "5 · Open risks"),
    ("next_action", "6 · Immediate next action"),
]
PATCH_MAX_LINES = 5000


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _drift(root: Path, pkg: Path) -> dict[str, Any]:
    from pydantic import ValidationError

    from contextfork.errors import ContextforkError
    from contextfork.resume import drift
    from contextfork.resume.api import _load

    try:
        meta, um, _ = _load(pkg)
        rep = drift.compute(root, pkg, meta, um)
    except (ContextforkError, ValidationError, OSError, ValueError) as err:
        return {"error": str(err).splitlines()[0]}
    return {
        "head": rep.head.relation,
        "branch_changed": rep.branch_changed,
        "tree_equal": rep.tree_equal,
        "changed": rep.changed,
        "missing": rep.missing,
        "new": rep.new,
        "notes": rep.notes,
    }


def package_rows(root: Path) -> list[dict[str, Any]]:
    from contextfork.errors import ContextforkError
    from contextfork.package import api as pkg_api
    from contextfork.package.store import list_packages

    rows = []
    for ref in reversed(list_packages(root)):  # newest first
        meta = _read_json(ref.path / "session_metadata.json") or {}
        handoff = _read_json(ref.path / "handoff.json") or {}
        goal = (handoff.get("active_goal") or {}).get("goal") if isinstance(handoff, dict) else None
        try:
            res = pkg_api.validate(root, str(ref.path))
            problems = [p.to_json() for p in res.problems]
            valid = bool(res.data["valid"])
        except ContextforkError as err:
            problems = [{"severity": "error", "code": "unreadable", "message": err.message}]
            valid = False
        rows.append({
            "id": ref.package_id,
            "path": str(ref.path),
            "created": meta.get("created_at"),
            "trigger": meta.get("trigger"),
            "head": meta.get("head"),
            "branch": meta.get("branch"),
            "session": meta.get("parent_session_id"),
            "goal": goal if isinstance(goal, str) else None,
            "valid": valid,
            "problems": problems,
            "secrets": [p for p in problems if "secret" in str(p.get("code", ""))],
            "drift": _drift(root, ref.path) if valid else {"error": "not checked: invalid package"},
        })  # fmt: skip
    return rows


def _patch_lines(pkg: Path) -> tuple[list[tuple[str, str]], bool]:
    try:
        text = (pkg / "git_diff.patch").read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return [], False
    lines = text.splitlines()
    out = []
    for line in lines[:PATCH_MAX_LINES]:
        if line.startswith(("diff --git", "index ", "--- ", "+++ ")):
            kind = "meta"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        out.append((kind, line))
    return out, len(lines) > PATCH_MAX_LINES


def package_detail(root: Path, row: dict[str, Any]) -> dict[str, Any]:
    pkg = Path(row["path"])
    handoff = _read_json(pkg / "handoff.json")
    record = _read_json(pkg / "handoff_claims.json")
    record = record if isinstance(record, dict) else {}
    raw_claims = record.get("claims")
    claims = [c for c in raw_claims if isinstance(c, dict)] if isinstance(raw_claims, list) else []
    parts = record.get("parts")
    prov: dict[str, Any] = parts if isinstance(parts, dict) else {}
    manifest = _read_json(pkg / "manifest.json") or {}
    files = manifest.get("files", []) if isinstance(manifest, dict) else []
    untracked = (_read_json(pkg / "untracked_manifest.json") or {}).get("files", [])
    patch, cut = _patch_lines(pkg)
    return {
        "handoff": prose(handoff, {str(c.get("where")): c for c in claims})
        if isinstance(handoff, dict) else None,
        "titles": dict(HANDOFF_PARTS),
        "provenance": {k: provenance(v) for k, v in prov.items()},
        "files": [f for f in files if isinstance(f, dict)],
        "package_sha256": manifest.get("package_sha256") if isinstance(manifest, dict) else None,
        "untracked": [u for u in untracked if isinstance(u, dict)],
        "patch": patch,
        "patch_cut": cut,
    }
