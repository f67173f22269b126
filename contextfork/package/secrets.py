"""Secrets in a package's untracked snapshots and patch: found at export, checked before sharing.

Snapshots stay byte-exact (they are the user's working state, and ``resume --apply`` restores
them), so a secret in an untracked file (a ``.env``, a token pasted into notes) is never removed:
``export`` records the rule kinds (``contextfork.redact``) per file in untracked_manifest.json
(``secrets``), ``export`` and ``validate`` warn, and ``push`` refuses to send such a package to a
remote unless told ``--allow-secrets``. The lines ``git_diff.patch`` adds to tracked files are
scanned the same way when the package is validated or pushed. Only text is scanned (no NUL byte in the first 8 KiB);
the bytes are already in memory at export, so the scan costs one ``find_secrets`` per file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextfork.envelope import Problem, Severity
from contextfork.paths import unsafe_reason

SNIFF = 8192
PATCH_PREFIX = "git_diff.patch:"


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
    out.update(scan_patch(pkg / "git_diff.patch"))
    for key, staged in scan_patch(pkg / "git_index.patch").items():  # the staged versions
        out[key] = sorted(set(out.get(key, [])) | set(staged))
    return out


def patch_added_text(patch: bytes) -> dict[str, str]:
    """The lines each file gains in a git patch (binary hunks are base85 and carry no '+')."""
    added: dict[str, list[str]] = {}
    current: str | None = None
    for raw in patch.split(b"\n"):
        if raw.startswith(b"+++ "):
            name = raw[4:].decode("utf-8", "replace")
            current = None if name == "/dev/null" else name.removeprefix("b/")
        elif raw.startswith(b"diff --git "):
            current = None
        elif current is not None and raw.startswith(b"+"):
            added.setdefault(current, []).append(raw[1:].decode("utf-8", "replace"))
    return {path: "\n".join(lines) for path, lines in added.items()}


def scan_patch(patch_file: Path) -> dict[str, list[str]]:
    """``git_diff.patch:<path>`` → kinds for secrets in lines the patch adds to tracked files."""
    if not patch_file.is_file() or patch_file.is_symlink():
        return {}
    from contextfork.redact import find_secrets

    out: dict[str, list[str]] = {}
    for path, text in patch_added_text(patch_file.read_bytes()).items():
        kinds = sorted({kind for _s, _e, kind in find_secrets(text)})
        if kinds:
            out[PATCH_PREFIX + path] = kinds
    return out


def describe(path: str) -> str:
    if path.startswith(PATCH_PREFIX):
        return f"lines the patch adds to {path.removeprefix(PATCH_PREFIX)}"
    return f"untracked snapshot {path}"


def problems(found: dict[str, list[str]], severity: Severity = "warning") -> list[Problem]:
    return [
        Problem(
            severity,
            "patch_secret" if path.startswith(PATCH_PREFIX) else "untracked_secret",
            f"{describe(path)} hold(s) a secret ({', '.join(kinds)}); kept byte-exact, so "
            "`contextfork push` refuses this package unless --allow-secrets",
            path,
        )
        for path, kinds in sorted(found.items())
    ]


__all__ = ["describe", "kinds_in", "patch_added_text", "problems", "scan_package", "scan_patch"]
