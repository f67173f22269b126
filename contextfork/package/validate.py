"""Validate a package: every hash, every schema, every path, HEAD, and the patch against HEAD.

Returns a list of problems (errors and warnings) instead of stopping at the first, in the style
of simonw/llm's ``verify()``. Nothing in the package is trusted.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ValidationError

from contextfork import gitstate
from contextfork.envelope import Problem, Severity
from contextfork.errors import ExitCode, NotFoundError, UsageError
from contextfork.hashing import canonical_sha256, sha256_file
from contextfork.inputfile import read_regular
from contextfork.package import handoff as handoff_mod
from contextfork.package import secrets as secrets_mod
from contextfork.package.models import (
    GitStatusFile,
    Handoff,
    Manifest,
    SessionMetadata,
    UntrackedManifest,
)
from contextfork.paths import unsafe_reason
from contextfork.resources import validate_against_schema

REQUIRED = (
    "git_diff.patch",
    "git_status.json",
    "untracked_manifest.json",
    "handoff.json",
    "handoff_summary.md",
    "session_metadata.json",
)
JSON_FILES: dict[str, tuple[str, type[BaseModel]]] = {
    "git_status.json": ("git-status.schema.json", GitStatusFile),
    "untracked_manifest.json": ("untracked-manifest.schema.json", UntrackedManifest),
    "handoff.json": ("session-handoff.schema.json", Handoff),
    "session_metadata.json": ("session-metadata.schema.json", SessionMetadata),
}
# Problem codes that mean "someone changed the bytes": they map to the integrity exit code.
INTEGRITY_CODES = frozenset(
    {
        "manifest_missing", "manifest_invalid", "hash_mismatch", "size_mismatch", "file_missing",
        "extra_file", "package_hash_mismatch", "symlink_in_package", "snapshot_mismatch",
        "unsafe_path", "id_mismatch", "not_regular_file",
    }
)  # fmt: skip


@dataclass
class Validation:
    package_dir: Path
    problems: list[Problem]
    manifest: Manifest | None = None
    metadata: SessionMetadata | None = None

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


def _check_manifest(pkg: Path, problems: list[Problem]) -> Manifest | None:
    raw = _load_json(pkg, "manifest.json", problems)
    if raw is None:
        if not (pkg / "manifest.json").exists():
            problems.append(_err("manifest_missing", "manifest.json is missing", "manifest.json"))
        else:
            problems.append(
                _err("manifest_invalid", "manifest.json is unreadable", "manifest.json")
            )
        return None
    for msg in validate_against_schema("manifest.schema.json", raw):
        problems.append(_err("manifest_invalid", f"schema: {msg}", "manifest.json"))
    try:
        manifest = Manifest.model_validate(raw)
    except ValidationError as exc:
        problems.append(
            _err("manifest_invalid", f"model: {exc.errors()[0]['msg']}", "manifest.json")
        )
        return None
    expected = canonical_sha256([e.model_dump() for e in manifest.files])
    if expected != manifest.package_sha256:
        problems.append(
            _err(
                "package_hash_mismatch",
                "package_sha256 does not match the file list",
                "manifest.json",
            )
        )
    listed: set[str] = set()
    for entry in manifest.files:
        reason = unsafe_reason(entry.path)
        if reason:
            problems.append(_err("unsafe_path", f"manifest path refused: {reason}", entry.path))
            continue
        listed.add(entry.path)
        full = pkg / entry.path
        if _through_symlink(pkg, entry.path):
            problems.append(_err("symlink_in_package", "path passes through a symlink", entry.path))
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
    for rel in _walk(pkg, problems):
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
    found = []
    for dirpath, dirnames, filenames in os.walk(pkg):
        base = Path(dirpath)
        for name in list(dirnames):
            if (base / name).is_symlink():
                rel = (base / name).relative_to(pkg).as_posix()
                problems.append(_err("symlink_in_package", "symlink inside the package", rel))
                dirnames.remove(name)
        for name in filenames:
            full = base / name
            rel = full.relative_to(pkg).as_posix()
            if full.is_symlink():
                problems.append(_err("symlink_in_package", "symlink inside the package", rel))
                continue
            if not full.is_file():
                problems.append(_err("not_regular_file", "not a regular file", rel))
                continue
            found.append(rel)
    return found


def _check_json_files(pkg: Path, problems: list[Problem]) -> dict[str, BaseModel]:
    models: dict[str, BaseModel] = {}
    for rel, (schema, model) in JSON_FILES.items():
        raw = _load_json(pkg, rel, problems)
        if raw is None:
            continue
        for msg in validate_against_schema(schema, raw):
            problems.append(_err("schema_invalid", msg, rel))
        try:
            models[rel] = model.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            problems.append(_err("schema_invalid", f"{where}: {first['msg']}", rel))
    return models


def _check_untracked(
    pkg: Path, um: UntrackedManifest, manifest: Manifest | None, problems: list[Problem]
) -> None:
    by_path = {e.path: e for e in manifest.files} if manifest else {}
    for f in um.files:
        reason = unsafe_reason(f.path)
        if reason:
            problems.append(_err("unsafe_path", f"untracked path refused: {reason}", f.path))
            continue
        if f.captured:
            entry = by_path.get(f"untracked/{f.path}")
            if entry is None or entry.sha256 != f.sha256 or entry.size != f.size:
                problems.append(
                    _err("snapshot_mismatch", "snapshot hash/size differs from manifest", f.path)
                )


def _ancestors(rel: str) -> list[str]:
    parts = PurePosixPath(rel).parts
    return [str(PurePosixPath(*parts[:i])) for i in range(1, len(parts))]


def _parents(targets: list[str]) -> list[str]:
    return sorted({a for t in targets if not unsafe_reason(t) for a in _ancestors(t)})


def _check_patch(
    root: Path | None,
    pkg: Path,
    meta: SessionMetadata | None,
    um: UntrackedManifest | None,
    problems: list[Problem],
) -> None:
    patch_file = pkg / "git_diff.patch"
    if not patch_file.is_file():
        return
    patch = patch_file.read_bytes()
    where = root or pkg
    paths, links, parse_err = gitstate.patch_paths(where, patch)
    if parse_err:
        problems.append(
            _err("patch_invalid", f"git cannot parse the patch: {parse_err}", "git_diff.patch")
        )
    link_set = set(links)
    for p in paths:
        reason = unsafe_reason(p)
        if reason:
            problems.append(_err("unsafe_path", f"patch path refused: {reason}", p))
    all_targets = paths + [f.path for f in (um.files if um else []) if f.captured]
    symlinks = set(link_set) | {f.path for f in (um.files if um else []) if f.reason == "symlink"}
    if (
        root is not None
        and meta is not None
        and meta.head
        and gitstate.commit_exists(root, meta.head)
    ):
        parents = _parents(all_targets)
        modes = gitstate.ls_tree_modes(root, meta.head, parents)
        symlinks |= {p for p, m in modes.items() if m == "120000"}
    for t in all_targets:
        parts = PurePosixPath(t).parts
        for i in range(1, len(parts)):
            parent = str(PurePosixPath(*parts[:i]))
            if parent in symlinks:
                problems.append(
                    _err("unsafe_path", f"would be written through symlink {parent!r}", t)
                )
                break
    if root is None or meta is None:
        return
    if meta.head and not gitstate.commit_exists(root, meta.head):
        problems.append(
            _err(
                "head_missing",
                f"recorded HEAD {meta.head[:12]} does not exist in this repository (fetch it, or this package is from another repository)",
                "session_metadata.json",
            )
        )
        return
    if parse_err:
        return
    apply_err, after = gitstate.apply_check(root, meta.head, patch, _parents(all_targets))
    # A rename or copy of a committed symlink carries no symlink mode in the patch text: look at
    # what each parent *is* once the patch is applied (resume --apply would refuse it there).
    reported = {p.path for p in problems if p.code == "unsafe_path"}
    for t in all_targets:
        through = next((q for q in _ancestors(t) if after.get(q) == "120000"), None)
        if through and t not in reported:
            problems.append(_err("unsafe_path", f"would be written through symlink {through!r}", t))
    if apply_err:
        problems.append(
            _err(
                "patch_does_not_apply",
                f"patch does not apply to recorded HEAD: {apply_err}",
                "git_diff.patch",
            )
        )


def _check_index_patch(
    root: Path | None, pkg: Path, meta: SessionMetadata | None, problems: list[Problem]
) -> None:
    """``git_index.patch`` (the staged changes; absent in packages from before it existed)."""
    rel = "git_index.patch"
    if not (pkg / rel).is_file():
        return
    patch = (pkg / rel).read_bytes()
    paths, _links, parse_err = gitstate.patch_paths(root or pkg, patch)
    if parse_err:
        problems.append(_err("patch_invalid", f"git cannot parse the patch: {parse_err}", rel))
        return
    for p in paths:
        reason = unsafe_reason(p)
        if reason:
            problems.append(_err("unsafe_path", f"patch path refused: {reason}", p))
    if root is None or meta is None or (meta.head and not gitstate.commit_exists(root, meta.head)):
        return
    apply_err, _modes = gitstate.apply_check(root, meta.head, patch)
    if apply_err:
        problems.append(
            _err("patch_does_not_apply", f"staged patch does not apply to recorded HEAD: {apply_err}", rel)
        )


def validate_package(pkg: Path, root: Path | None, *, strict: bool = False) -> Validation:
    problems: list[Problem] = []
    if not pkg.is_dir():
        problems.append(_err("manifest_missing", "package directory does not exist", str(pkg)))
        return Validation(pkg, problems)
    manifest = _check_manifest(pkg, problems)
    models = _check_json_files(pkg, problems)
    meta = models.get("session_metadata.json")
    um = models.get("untracked_manifest.json")
    assert meta is None or isinstance(meta, SessionMetadata)
    assert um is None or isinstance(um, UntrackedManifest)
    if manifest and meta and manifest.package_id != meta.package_id:
        problems.append(
            _err(
                "id_mismatch",
                "manifest and session_metadata name different packages",
                "manifest.json",
            )
        )
    if um is not None:
        _check_untracked(pkg, um, manifest, problems)
        problems += secrets_mod.problems(secrets_mod.scan_package(pkg))
    _check_patch(root, pkg, meta, um, problems)
    _check_index_patch(root, pkg, meta, problems)
    raw_handoff = _load_json(pkg, "handoff.json", [])
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
    return Validation(pkg, problems, manifest, meta)
