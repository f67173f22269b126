"""Secrets in a package's untracked snapshots and patch: found at export, checked before sharing.

Snapshots stay byte-exact (they are the user's working state, and ``resume --apply`` restores
them), so a secret in an untracked file (a ``.env``, a token pasted into notes) is never removed:
``export`` records the rule kinds (``contextfork.redact``) per file in untracked_manifest.json
(``secrets``), ``export`` and ``validate`` warn, and ``push`` refuses to send such a package to a
remote unless told ``--allow-secrets``. The lines ``git_diff.patch`` adds to tracked files are
scanned the same way when the package is validated or pushed. Only text is scanned (no NUL byte in the first 8 KiB);
the bytes are already in memory at export, so the scan costs one ``find_secrets`` per file.

Every other package file (handoff, summary, metadata, status, manifests) is scrubbed at export;
``scan_files`` still scans each of them (``package:<name>``), as raw text and, for JSON, every
decoded string, so a scrubber miss or an edited file is refused by ``push`` like a snapshot.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

from contextfork.envelope import Problem
from contextfork.paths import unsafe_reason

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's path)
if TYPE_CHECKING:
    from typing import Any

    from contextfork.envelope import Severity

SNIFF = 8192
PATCH_PREFIX = "git_diff.patch:"
PACKAGE_PREFIX = "package:"


def _text(data: bytes) -> str | None:
    """The text a snapshot is scanned as; None for binary data (a NUL in the first 8 KiB)."""
    return None if b"\0" in data[:SNIFF] else data.decode("utf-8", "replace")


def kinds_in(data: bytes) -> list[str]:
    """The secret kinds in a snapshot, sorted; [] for binary data."""
    return kinds_in_many([data])[0]


def kinds_in_many(blobs: list[bytes]) -> list[list[str]]:
    """``kinds_in`` of each snapshot, with the rule keywords looked up once for all of them."""
    from contextfork.redact import find_secrets, rules_by_text

    texts = [_text(b) or "" for b in blobs]
    return [
        sorted({kind for _s, _e, kind in find_secrets(t, rules)}) if rules else []
        for t, rules in zip(texts, rules_by_text([t.lower() for t in texts]), strict=True)
    ]


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
        if kinds:
            out[rel] = sorted(kinds)
    for key, kinds_found in scan_files(_read_files(pkg)).items():
        out[key] = sorted(set(out.get(key, [])) | set(kinds_found))
    return out


def _read_files(pkg: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for f in sorted(pkg.rglob("*")):
        if f.is_file() and not f.is_symlink():
            files[f.relative_to(pkg).as_posix()] = f.read_bytes()
    return files


def json_strings(obj: Any) -> list[str]:
    """Every string in a decoded JSON value, keys included (what a secret may hide in)."""
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, list):
        return [s for v in obj for s in json_strings(v)]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() for s in [str(k), *json_strings(v)]]
    return []


def _texts_of(rel: str, data: bytes) -> list[tuple[str, str]]:
    """(key, text) pairs to scan for one package file (see ``scan_files`` for the keys)."""
    if rel in ("git_diff.patch", "git_index.patch"):  # the index patch: staged versions
        return [(PATCH_PREFIX + path, text) for path, text in patch_added_text(data).items()]
    if rel.startswith("untracked/"):
        text = _text(data)
        return [] if text is None else [(rel.removeprefix("untracked/"), text)]
    key, text = PACKAGE_PREFIX + rel, _text(data)
    if text is None:
        return []
    out = [(key, text)]
    if rel.endswith(".json"):
        with contextlib.suppress(ValueError, RecursionError):  # not JSON: the raw text only
            out += [(key, s) for s in json_strings(json.loads(data))]
    return out


def scan_files(files: dict[str, bytes]) -> dict[str, list[str]]:
    """Secrets in a package's files as they will be sent (path in the package → bytes): snapshot
    path for ``untracked/…``, ``git_diff.patch:<path>`` for added lines, ``package:<name>`` else.

    Every text (each file, each decoded JSON string, each file's added patch lines) is scanned
    on its own, by the rules whose keywords it holds (``redact.rules_by_text``, one search per
    keyword for all texts): the same result as every rule on every text, for far less work."""
    from contextfork.redact import find_secrets, rules_by_text

    texts = [pair for rel, data in sorted(files.items()) for pair in _texts_of(rel, data)]
    out: dict[str, list[str]] = {}
    candidates = rules_by_text([text.lower() for _key, text in texts])
    for (key, text), rules in zip(texts, candidates, strict=True):
        kinds = {kind for _s, _e, kind in find_secrets(text, rules)} if rules else set()
        if kinds:
            out[key] = sorted(set(out.get(key, [])) | kinds)
    return out


# The only lines ``patch_added_text`` looks at (found by ``re`` rather than by splitting the
# whole patch into lines in Python: most lines of a patch are context). Matched after a line end
# (the text is given one in front): a pattern that starts with a literal lets ``re`` jump from
# line end to line end instead of trying every position as ``^`` with MULTILINE would.
_PATCH_LINE = re.compile(rb"\n((?:diff --git |\+)[^\n]*)")


def patch_added_text(patch: bytes) -> dict[str, str]:
    """The lines each file gains in a git patch (binary hunks are base85 and carry no '+')."""
    added: dict[str, list[bytes]] = {}
    current: list[bytes] | None = None
    for m in _PATCH_LINE.finditer(b"\n" + patch):
        raw = m.group(1)
        if raw.startswith(b"+++ "):
            name = raw[4:].decode("utf-8", "replace")
            current = None if name == "/dev/null" else added.setdefault(name.removeprefix("b/"), [])
        elif raw.startswith(b"diff --git "):
            current = None
        elif current is not None:
            current.append(raw[1:])
    # Decoded once per file: "\n" never sits inside a UTF-8 sequence, so this is the text the
    # lines decoded one by one and joined would give.
    return {path: b"\n".join(lines).decode("utf-8", "replace") for path, lines in added.items() if lines}


def describe(path: str) -> str:
    if path.startswith(PATCH_PREFIX):
        return f"lines the patch adds to {path.removeprefix(PATCH_PREFIX)}"
    if path.startswith(PACKAGE_PREFIX):
        return f"package file {path.removeprefix(PACKAGE_PREFIX)}"
    return f"untracked snapshot {path}"


def code_of(path: str) -> str:
    if path.startswith(PATCH_PREFIX):
        return "patch_secret"
    return "package_secret" if path.startswith(PACKAGE_PREFIX) else "untracked_secret"


def problems(found: dict[str, list[str]], severity: Severity = "warning") -> list[Problem]:
    return [
        Problem(
            severity,
            code_of(path),
            f"{describe(path)} hold(s) a secret ({', '.join(kinds)}); "
            + ("not scrubbed at export (edited?)" if path.startswith(PACKAGE_PREFIX) else
               "kept byte-exact")
            + ", so `contextfork push` refuses this package unless --allow-secrets",
            path,
        )
        for path, kinds in sorted(found.items())
    ]


__all__ = [
    "code_of",
    "describe",
    "kinds_in",
    "kinds_in_many",
    "patch_added_text",
    "problems",
    "scan_files",
    "scan_package",
]
