"""Signed packages: git's own commit signing (ssh or gpg) over the package commit.

A package whose every hash was recomputed passes ``validate``: the manifest can only prove the
files agree with each other. When the user has commit signing configured (``commit.gpgSign``,
or ``contextfork.signPackages``), ``push`` signs the package commit under
``refs/contextfork/packages/<id>`` with ``user.signingKey``; ``pull`` asks ``git verify-commit``
(the user's ``gpg.ssh.allowedSignersFile`` or gpg keyring decides who is trusted) and refuses a
signature that does not verify, and an unsigned package when
``contextfork.requireSignedPackages`` is true. ``resume`` re-checks a package that has a signed
commit: the signature, and every file of the package directory against the signed tree.
"""

from __future__ import annotations

import os
from pathlib import Path

from contextfork import gitstate
from contextfork.envelope import Problem

REF_PREFIX = "refs/contextfork/packages/"
CODES = frozenset({"signature_invalid", "signed_content_differs"})
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


def _files(pkg: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for dirpath, _dirs, names in os.walk(pkg):
        for name in names:
            full = Path(dirpath) / name
            out[full.relative_to(pkg).as_posix()] = full
    return out


def local_problems(root: Path, package_id: str, pkg: Path) -> list[Problem]:
    """Errors when ``pkg`` has a signed commit that git does not verify or that its files no
    longer match; [] for a package without a signed commit."""
    name = REF_PREFIX + package_id
    sha = gitstate.refs_under(root, name).get(name)
    if not sha or not gitstate.is_signed(root, sha):
        return []
    bad = gitstate.verify_commit(root, sha)
    if bad:
        return [Problem("error", "signature_invalid",
                        f"package commit {sha[:12]} is signed but does not verify: {bad}")]  # fmt: skip
    signed = {e.path: e.sha for e in gitstate.ls_tree_all(root, sha)}
    files = _files(pkg)
    rels = sorted(files)
    ids = dict(zip(rels, gitstate.blob_ids(root, [files[r] for r in rels]), strict=True))
    differ = sorted(r for r in set(signed) | set(files) if signed.get(r) != ids.get(r))
    return [
        Problem("error", "signed_content_differs",
                f"{rel} differs from the signed package commit {sha[:12]}", rel)
        for rel in differ
    ]  # fmt: skip


__all__ = ["CODES", "fetched_refusal", "local_problems", "required", "wanted"]
