"""Secrets in a package's untracked snapshots: found at export, checked again before sharing.

Snapshots stay byte-exact (they are the user's working state, and ``resume --apply`` restores
them), so a secret in an untracked file (a ``.env``, a token pasted into notes) is never removed:
``export`` records the rule kinds (``contextfork.redact``) per file in untracked_manifest.json
(``secrets``), ``export`` and ``validate`` warn, and ``push`` refuses to send such a package to a
remote unless told ``--allow-secrets``. Only text is scanned (no NUL byte in the first 8 KiB);
the bytes are already in memory at export, so the scan costs one ``find_secrets`` per file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextfork.envelope import Problem, Severity
from contextfork.paths import unsafe_reason

SNIFF = 8192


def kinds_in(data: bytes) -> list[str]:
    """The secret kinds in a snapshot, sorted; [] for binary data."""
    if b"\0" in data[:SNIFF]:
        return []
    from contextfork.redact import find_secrets

    return sorted({kind for _start, _end, kind in find_secrets(data.decode("utf-8", "replace"))})


def scan_package(pkg: Path) -> dict[str, list[str]]:
    """path → kinds for every captured snapshot of ``pkg``: what the manifest records, joined
    with a fresh scan of the snapshot (a package from an older contextfork, or an edited
    manifest, is not taken at its word)."""
    try:
        um: Any = json.loads((pkg / "untracked_manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    out: dict[str, list[str]] = {}
    files = um.get("files") if isinstance(um, dict) else None
    for f in files if isinstance(files, list) else []:
        if not isinstance(f, dict) or not f.get("captured") or not isinstance(f.get("path"), str):
            continue
        rel = f["path"]
        if unsafe_reason(rel):
            continue
        declared = f.get("secrets")
        kinds = {str(k) for k in declared} if isinstance(declared, list) else set()
        snap = pkg / "untracked" / rel
        if snap.is_file() and not snap.is_symlink():
            kinds.update(kinds_in(snap.read_bytes()))
        if kinds:
            out[rel] = sorted(kinds)
    return out


def problems(found: dict[str, list[str]], severity: Severity = "warning") -> list[Problem]:
    return [
        Problem(
            severity,
            "untracked_secret",
            f"untracked snapshot holds a secret ({', '.join(kinds)}); kept byte-exact, so "
            "`contextfork push` refuses this package unless --allow-secrets",
            path,
        )
        for path, kinds in sorted(found.items())
    ]


__all__ = ["kinds_in", "problems", "scan_package"]
