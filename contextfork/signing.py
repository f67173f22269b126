"""Signed packages: git's own commit signing (ssh or gpg) over the package commit.

A package whose every hash was recomputed passes the hash checks: the manifest can only prove the
files agree with each other. When the user has commit signing configured (``commit.gpgSign``,
or ``contextfork.signPackages``), ``push`` signs the package commit under
``refs/contextfork/packages/<id>`` (and ``fold push`` its cold commits) with ``user.signingKey``;
``pull`` asks ``git verify-commit`` (the user's ``gpg.ssh.allowedSignersFile`` or gpg keyring
decides who is trusted) and refuses a signature that does not verify, and an unsigned package
when ``contextfork.requireSignedPackages`` is true.

What was verified at pull is kept in the package's provenance record (``contextfork.provenance``,
in the git dir): the signed commit's sha and its signer. Every later reader (``validate``,
``resume``, the SessionStart hook, the MCP tools) re-checks the package against THAT commit:
the signature once more, and every file of the package against the signed tree. A ref under
``refs/contextfork/packages/`` is never asked whether a package is signed, so deleting it or
pointing it at an unsigned commit changes nothing. With ``requireSignedPackages`` a package is
accepted only when it was exported here or pulled with a verified signature.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from contextfork import gitstate, provenance
from contextfork.envelope import Problem
from contextfork.errors import GitError

REF_PREFIX = "refs/contextfork/packages/"
CODES = frozenset(
    {"signature_invalid", "signed_content_differs", "unsigned_package", "provenance_mismatch"}
)
_TRUE = {"true", "yes", "on", "1"}


def _flag(root: Path, key: str) -> bool | None:
    value = gitstate.config_get(root, key)
    return None if value is None else value.strip().lower() in _TRUE


def wanted(root: Path) -> bool:
    """Sign package commits: ``contextfork.signPackages`` if set, else ``commit.gpgSign``."""
    own = _flag(root, "contextfork.signPackages")
    return own if own is not None else bool(_flag(root, "commit.gpgsign"))


def required(root: Path) -> bool:
    return bool(_flag(root, "contextfork.requireSignedPackages"))


def fetched_refusal(root: Path, sha: str) -> str | None:
    """Why a fetched package commit must be refused (None: signed and verified, or unsigned and
    signatures are not required)."""
    if not gitstate.is_signed(root, sha):
        if required(root):
            return "unsigned package refused (contextfork.requireSignedPackages is true)"
        return None
    bad = gitstate.verify_commit(root, sha)
    return f"signature does not verify: {bad}" if bad else None


def verified_signature(root: Path, sha: str) -> dict[str, Any] | None:
    """What a provenance record keeps of a commit that ``fetched_refusal`` let through: its
    signer, when it is signed (None when it is not)."""
    if not gitstate.is_signed(root, sha):
        return None
    who, key = gitstate.signer(root, sha)
    return {"verified": True, "commit": sha, "signer": who, "key": key}


def _files(pkg: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for dirpath, _dirs, names in os.walk(pkg):
        for name in names:
            full = Path(dirpath) / name
            out[full.relative_to(pkg).as_posix()] = full
    return out


def differing_files(root: Path, sha: str, pkg: Path) -> list[str]:
    """Paths where ``pkg`` and the tree of commit ``sha`` disagree (either side missing counts)."""
    signed = {e.path: e.sha for e in gitstate.ls_tree_all(root, sha)}
    files = _files(pkg)
    rels = sorted(files)
    ids = dict(zip(rels, gitstate.blob_ids(root, [files[r] for r in rels]), strict=True))
    return sorted(r for r in set(signed) | set(files) if signed.get(r) != ids.get(r))


def _signed_commit(root: Path, package_id: str, record: dict[str, Any] | None) -> str | None:
    """The signed commit a package is checked against: the one its record verified at pull.
    Without a record (a package pulled by an older contextfork) a signed commit under its ref
    is checked too; that can only add errors, never make a package acceptable."""
    if record is not None:
        sig = record.get("signature")
        commit = sig.get("commit") if isinstance(sig, dict) else None
        return commit if record.get("signed") and isinstance(commit, str) else None
    name = REF_PREFIX + package_id
    sha = gitstate.refs_under(root, name).get(name)
    return sha if sha and gitstate.is_signed(root, sha) else None


def _err(code: str, message: str, path: str | None = None) -> Problem:
    return Problem("error", code, message, path)


def local_problems(
    root: Path, package_id: str, pkg: Path, record: dict[str, Any] | None
) -> list[Problem]:
    """Errors when the package's signed commit (from its provenance ``record``) does not verify
    or its files no longer match it, and, with ``requireSignedPackages``, when the package was
    neither exported here nor pulled with a verified signature."""
    problems: list[Problem] = []
    sha = _signed_commit(root, package_id, record)
    if sha is not None:
        try:
            bad = gitstate.verify_commit(root, sha) if gitstate.commit_exists(root, sha) else (
                "the signed commit is no longer in this repository")  # fmt: skip
        except GitError as err:
            bad = err.message
        if bad:
            return [_err("signature_invalid", f"package commit {sha[:12]} is signed but does "
                         f"not verify: {bad}")]  # fmt: skip
        problems += [_err("signed_content_differs",
                          f"{rel} differs from the signed package commit {sha[:12]}", rel)
                     for rel in differing_files(root, sha, pkg)]  # fmt: skip
    if required(root):
        origin = record.get("origin") if record is not None else None
        if record is None:
            problems.append(_err("unsigned_package", f"package {package_id} has no provenance "
                                 "record, and contextfork.requireSignedPackages accepts only "
                                 "packages exported here or pulled with a verified signature"))  # fmt: skip
        elif origin != "export" and sha is None:
            problems.append(_err("unsigned_package", f"package {package_id} was {_verb(record)} "
                                 "without a verified signature, and "
                                 "contextfork.requireSignedPackages is true"))  # fmt: skip
    return problems


def unsigned_refusal(root: Path, st: provenance.Standing) -> str | None:
    """Why an offered package must still not be offered: its text was neither written here nor
    signed by a trusted key, and ``contextfork.requireSignedPackages`` is true (git runs only
    for such a package)."""
    if st.record is None or not provenance.is_foreign(st.record) or not required(root):
        return None
    return (f"package {st.record.get('package_id')} was {_verb(st.record)} without a verified "
            "signature, and contextfork.requireSignedPackages is true")  # fmt: skip


def _verb(record: dict[str, Any]) -> str:
    return {"pull": "pulled", "trust": "trusted"}.get(str(record.get("origin")), "recorded")


def provenance_problems(
    root: Path, package_id: str, pkg: Path
) -> tuple[provenance.Standing, list[Problem]]:
    """A package's standing and what ``validate`` reports about it: a missing or held record
    is a warning (validate is how one inspects such a package), a record that no longer
    matches and every signature problem (``local_problems``) are errors."""
    st = provenance.standing(root, package_id, pkg)
    problems: list[Problem] = []
    if st.code in ("no_provenance", "held"):
        problems.append(Problem("warning", st.code, f"{st.problem}; never offered to a session"))
    elif st.code == "provenance_mismatch":
        problems.append(_err("provenance_mismatch", str(st.problem), "manifest.json"))
    where = st.home or root  # the repository whose record (and signed commit) vouches
    record = provenance.package_record(where, package_id)
    return st, problems + local_problems(where, package_id, pkg, record)


__all__ = [
    "CODES", "differing_files", "fetched_refusal", "local_problems", "provenance_problems",
    "required", "unsigned_refusal", "verified_signature", "wanted",
]  # fmt: skip
