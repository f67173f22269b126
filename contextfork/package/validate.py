"""Validate a package: every hash, every schema, every path, HEAD, and the patch against HEAD.

Returns a list of problems (errors and warnings) instead of stopping at the first, in the style
of simonw/llm's ``verify()``. Nothing in the package is trusted.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from contextfork.envelope import Problem
from contextfork.errors import ExitCode, NotFoundError, UsageError
from contextfork.hashing import canonical_sha256, sha256_file
from contextfork.inputfile import read_regular
from contextfork.package import handoff as handoff_mod
from contextfork.package import secrets as secrets_mod
from contextfork.package.patchcheck import check_patches
from contextfork.paths import unsafe_reason
from contextfork.resources import validate_against_schema

if TYPE_CHECKING:
    from contextfork.envelope import Severity

REQUIRED = (
    "git_diff.patch",
    "git_status.json",
    "untracked_manifest.json",
    "handoff.json",
    "handoff_summary.md",
    "session_metadata.json",
)
# Each JSON file and its schema (generated from the pydantic model in ``package.models``). The
# schema is checked by ``jsoncheck`` (no pydantic or jsonschema import: see that module); the
# checks below read the documents through the small views that follow.
JSON_FILES: dict[str, str] = {
    "git_status.json": "git-status.schema.json",
    "untracked_manifest.json": "untracked-manifest.schema.json",
    "handoff.json": "session-handoff.schema.json",
    "session_metadata.json": "session-metadata.schema.json",
}
# Files a package carries only sometimes (the model-written parts' claims, a carried
# conversation): checked against their schema when present.
OPTIONAL_JSON_FILES: dict[str, str] = {
    "handoff_claims.json": "handoff-claims.schema.json",
    "conversation.json": "conversation.schema.json",
}
# Problem codes that mean "someone changed the bytes": they map to the integrity exit code.
INTEGRITY_CODES = frozenset(
    {
        "manifest_missing", "manifest_invalid", "hash_mismatch", "size_mismatch", "file_missing",
        "extra_file", "package_hash_mismatch", "symlink_in_package", "snapshot_mismatch",
        "unsafe_path", "id_mismatch", "not_regular_file",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Entry:
    """One manifest entry (``package.models.ManifestEntry``)."""

    path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class ManifestView:
    """What validate reads of manifest.json (the format is ``package.models.Manifest``)."""

    package_id: str
    package_sha256: str
    files: list[Entry] = field(default_factory=list)


@dataclass
class Validation:
    package_dir: Path
    problems: list[Problem]
    manifest: ManifestView | None = None

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def exit_code(self) -> int:
        if not self.errors:
            return ExitCode.OK
        if any(p.code in INTEGRITY_CODES for p in self.errors):
            return ExitCode.INTEGRITY
        return ExitCode.CHECK_FAILED


def _err(code: str, msg: str, path: str | None = None) -> Problem:
    return Problem("error", code, msg, path)


def _load_json(pkg: Path, rel: str, problems: list[Problem]) -> Any:
    try:
        # read_regular: a FIFO or device planted in a package must not hang validate
        return json.loads(read_regular(pkg / rel, "package file").decode("utf-8"))
    except (FileNotFoundError, NotFoundError):
        return None
    except UsageError as exc:
        problems.append(_err("not_regular_file", exc.message, rel))
        return None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        problems.append(_err("json_invalid", f"not valid JSON: {exc}", rel))
        return None


def _int(v: Any) -> int | None:
    """A JSON integer (1.0 counts, as in JSON Schema); None for anything else."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    return int(v) if isinstance(v, float) and v.is_integer() else None


def _manifest_view(raw: dict[str, Any]) -> ManifestView:
    """The manifest once its schema holds (None otherwise: it was reported already)."""
    entries = []
    for e in raw["files"]:
        size = _int(e["size"])
        assert size is not None  # the schema says integer
        entries.append(Entry(e["path"], e["sha256"], size))
    return ManifestView(raw["package_id"], raw["package_sha256"], entries)


def _check_manifest(pkg: Path, problems: list[Problem]) -> ManifestView | None:  # noqa: C901 - complexity 17, over the cap when it came (issue 27)
    raw = _load_json(pkg, "manifest.json", problems)
    if raw is None:
        if not (pkg / "manifest.json").exists():
            problems.append(_err("manifest_missing", "manifest.json is missing", "manifest.json"))
        else:
            problems.append(
                _err("manifest_invalid", "manifest.json is unreadable", "manifest.json")
            )
        return None
    bad = validate_against_schema("manifest.schema.json", raw)
    for msg in bad:
        problems.append(_err("manifest_invalid", f"schema: {msg}", "manifest.json"))
    if bad:
        return None
    manifest = _manifest_view(raw)
    expected = canonical_sha256(
        [{"path": e.path, "sha256": e.sha256, "size": e.size} for e in manifest.files]
    )
    if expected != manifest.package_sha256:
        problems.append(
            _err(
                "package_hash_mismatch",
                "package_sha256 does not match the file list",
                "manifest.json",
            )
        )
    listed: set[str] = set()
    walk_problems: list[Problem] = []
    found = _walk(pkg, walk_problems)  # regular files reached without passing a symlink
    plain = set(found)
    for entry in manifest.files:
        reason = unsafe_reason(entry.path)
        if reason:
            problems.append(_err("unsafe_path", f"manifest path refused: {reason}", entry.path))
            continue
        listed.add(entry.path)
        full = pkg / entry.path
        if entry.path not in plain:  # else the walk saw a regular file there (no symlink on the way)
            if _through_symlink(pkg, entry.path):
                problems.append(
                    _err("symlink_in_package", "path passes through a symlink", entry.path)
                )
                continue
            if not full.is_file():
                problems.append(_err("file_missing", "listed in manifest but missing", entry.path))
                continue
        digest, size = sha256_file(full)
        if size != entry.size:
            problems.append(
                _err("size_mismatch", f"size {size} != manifest {entry.size}", entry.path)
            )
        if digest != entry.sha256:
            problems.append(_err("hash_mismatch", "sha256 differs from manifest", entry.path))
    problems += walk_problems
    for rel in found:
        if rel != "manifest.json" and rel not in listed:
            problems.append(_err("extra_file", "file not listed in manifest", rel))
    for rel in REQUIRED:
        if rel not in listed:
            problems.append(_err("file_missing", "required package file not in manifest", rel))
    return manifest


def _through_symlink(root: Path, rel: str) -> bool:
    cur = root
    for part in PurePosixPath(rel).parts:
        cur = cur / part
        if cur.is_symlink():
            return True
    return False


def _walk(pkg: Path, problems: list[Problem]) -> list[str]:
    """Every regular file below ``pkg`` reached without passing a symlink (posix paths relative
    to ``pkg``); symlinks and special files are reported, never followed."""
    found: list[str] = []
    stack = [(str(pkg), "")]
    while stack:
        path, prefix = stack.pop()
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError:
            continue  # unreadable directory: as os.walk, skipped (its files are then missing)
        for e in entries:
            rel = prefix + e.name
            if e.is_symlink():
                problems.append(_err("symlink_in_package", "symlink inside the package", rel))
            elif e.is_dir(follow_symlinks=False):
                stack.append((e.path, rel + "/"))
            elif e.is_file(follow_symlinks=False):
                found.append(rel)
            else:
                problems.append(_err("not_regular_file", "not a regular file", rel))
    return found


def _check_json_files(pkg: Path, problems: list[Problem]) -> dict[str, dict[str, Any]]:
    """Each JSON file checked against its schema; the documents that hold, by name."""
    docs: dict[str, dict[str, Any]] = {}
    optional = {r: s for r, s in OPTIONAL_JSON_FILES.items() if os.path.lexists(pkg / r)}
    for rel, schema in {**JSON_FILES, **optional}.items():
        raw = _load_json(pkg, rel, problems)
        if raw is None:
            continue
        bad = validate_against_schema(schema, raw)
        for msg in bad:
            problems.append(_err("schema_invalid", msg, rel))
        if not bad:
            docs[rel] = raw
    return docs


def _check_untracked(
    um: dict[str, Any], manifest: ManifestView | None, problems: list[Problem]
) -> None:
    by_path = {e.path: e for e in manifest.files} if manifest else {}
    for f in um["files"]:
        reason = unsafe_reason(f["path"])
        if reason:
            problems.append(_err("unsafe_path", f"untracked path refused: {reason}", f["path"]))
            continue
        if f["captured"]:
            entry = by_path.get(f"untracked/{f['path']}")
            if entry is None or entry.sha256 != f["sha256"] or entry.size != _int(f["size"]):
                problems.append(
                    _err("snapshot_mismatch", "snapshot hash/size differs from manifest", f["path"])
                )


def validate_package(pkg: Path, root: Path | None, *, strict: bool = False) -> Validation:
    problems: list[Problem] = []
    if not pkg.is_dir():
        problems.append(_err("manifest_missing", "package directory does not exist", str(pkg)))
        return Validation(pkg, problems)
    manifest = _check_manifest(pkg, problems)
    docs = _check_json_files(pkg, problems)
    meta = docs.get("session_metadata.json")
    um = docs.get("untracked_manifest.json")
    if manifest and meta and manifest.package_id != meta["package_id"]:
        problems.append(
            _err(
                "id_mismatch",
                "manifest and session_metadata name different packages",
                "manifest.json",
            )
        )
    if um is not None:
        _check_untracked(um, manifest, problems)
    secret_problems: list[Problem] = []

    def scan_secrets() -> None:  # runs while git checks the patches (the two longest checks)
        if um is not None:
            secret_problems.extend(secrets_mod.problems(secrets_mod.scan_package(pkg)))

    before_patches = len(problems)  # check_patches reads the earlier reports: same list
    check_patches(root, pkg, meta, um, problems, meanwhile=scan_secrets)
    problems[before_patches:before_patches] = secret_problems  # reported before, as they were
    raw_handoff = docs.get("handoff.json") or _load_json(pkg, "handoff.json", [])
    if raw_handoff is not None:
        sev: Severity = "error" if strict else "warning"
        for where in handoff_mod.unfilled(raw_handoff):
            problems.append(
                Problem(
                    sev,
                    "unfilled_placeholder",
                    "handoff part still a placeholder",
                    f"handoff.json#{where}",
                )
            )
    return Validation(pkg, problems, manifest)
