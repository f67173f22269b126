"""``contextfork push|pull``: git itself is the distributed store for packages.

Each package becomes one parentless commit whose tree is exactly the package files, under
``refs/contextfork/packages/<id>``; the HEAD it must be resumed on is recorded in its
session_metadata.json, not as a parent, so a push never carries local commits the user did not
choose to publish (history nobody scanned for secrets). ``push`` says whether that HEAD is on
the remote; ``--with-head`` also sends it (and the unpushed commits under it) as
``refs/contextfork/heads/<id>``, which ``pull`` fetches. Every file sent is scanned for secrets
first, from the commit's own blobs. Pulled trees are untrusted input: every path and mode is
checked before a byte is written, and a package is published only after its manifest verifies.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextfork import atomic, gitstate, provenance, signing
from contextfork.envelope import Problem, Result
from contextfork.envvars import positive_int
from contextfork.errors import (
    CheckFailed,
    ContextforkError,
    GitError,
    IntegrityError,
    NotFoundError,
    NotProvenanced,
)
from contextfork.layout import exclude_state_dir, packages_dir
from contextfork.package import store
from contextfork.package.secrets import code_of, describe, scan_files, scan_package
from contextfork.package.validate import INTEGRITY_CODES, validate_package
from contextfork.paths import unsafe_reason

REF_PREFIX = signing.REF_PREFIX
HEAD_PREFIX = "refs/contextfork/heads/"
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
PULL_MAX_ENV = "CONTEXTFORK_PULL_MAX_BYTES"
DEFAULT_PULL_MAX_BYTES = 256 * 1024 * 1024  # a package: snapshots capped at 1 MiB each by default


def _tracking_prefix(remote: str, kind: str = "") -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", remote)
    return f"refs/contextfork/remote{kind}s/{safe}/"


def _package_files(pkg: Path) -> list[tuple[str, Path]]:
    files = []
    for dirpath, _dirs, names in os.walk(pkg):
        for name in names:
            full = Path(dirpath) / name
            files.append((full.relative_to(pkg).as_posix(), full))
    return sorted(files)


def _sealed(root: Path, ref: store.PackageRef) -> None:
    v = validate_package(ref.path, root)
    bad = [p for p in v.errors if p.code in INTEGRITY_CODES]
    if bad:
        raise IntegrityError(f"package {ref.package_id} fails its integrity check, not shared: "
                             f"{bad[0].line()}")  # fmt: skip


def _vouched(
    root: Path, refs: list[store.PackageRef], *, named: bool
) -> tuple[list[store.PackageRef], list[Problem]]:
    """Only packages this user made, pulled or accepted are pushed (and signed with their key):
    a package a repository committed is never re-published under the user's name. Named, it
    is refused; among all, it is left out with a warning."""
    kept: list[store.PackageRef] = []
    skipped: list[Problem] = []
    for r in refs:
        st = provenance.standing(root, r.package_id, r.path)
        if st.offered:
            kept.append(r)
        elif named:
            raise NotProvenanced(f"{st.problem}; not pushed",
                                 hint=f"inspect it, then `contextfork resume {r.package_id} --trust`")  # fmt: skip
        else:
            skipped.append(Problem("warning", st.code, f"{st.problem}; not pushed", r.package_id))
    if not kept:
        raise NotFoundError(f"no package in {packages_dir(root)} was exported, pulled or "
                            "trusted here; nothing pushed")  # fmt: skip
    return kept, skipped


def store_commit(root: Path, ref: store.PackageRef) -> str:
    """The parentless commit holding ``ref`` under refs/contextfork/packages/ (created once,
    then reused; one written by an older contextfork with HEAD as its parent is replaced)."""
    name = REF_PREFIX + ref.package_id
    existing = gitstate.refs_under(root, name).get(name)
    sign = signing.wanted(root)
    if (existing and not gitstate.commit_parents(root, existing)
            and (not sign or gitstate.is_signed(root, existing))):  # fmt: skip
        return existing
    _sealed(root, ref)
    sha = gitstate.commit_files(
        root, _package_files(ref.path), f"contextfork package {ref.package_id}\n", None,
        sign=sign,
    )
    gitstate.update_ref(root, name, sha)
    return sha


def _recorded_head(pkg: Path) -> str | None:
    import json

    try:
        head = json.loads((pkg / "session_metadata.json").read_text(encoding="utf-8")).get("head")
    except (OSError, ValueError):
        return None
    return head if isinstance(head, str) else None


def _secrets(refs: list[store.PackageRef]) -> dict[str, dict[str, list[str]]]:
    found = {r.package_id: scan_package(r.path) for r in refs}
    return {pid: files for pid, files in found.items() if files}


def _sent_secrets(root: Path, stored: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """Secrets in the blobs of the commits about to be sent (what leaves, not what is on disk)."""
    found: dict[str, dict[str, list[str]]] = {}
    for pid, sha in stored.items():
        entries = [e for e in gitstate.ls_tree_all(root, sha) if e.kind == "blob"]
        blobs = gitstate.read_blobs(root, [e.sha for e in entries])
        files = scan_files({e.path: blobs[e.sha] for e in entries})
        if files:
            found[pid] = files
    return found


def _refuse(secrets: dict[str, dict[str, list[str]]], remote: str) -> CheckFailed:
    first_pid, files = next(iter(secrets.items()))
    path, kinds = next(iter(files.items()))
    more = sum(len(f) for f in secrets.values()) - 1
    return CheckFailed(
        f"package {first_pid} holds a secret in {describe(path)} ({', '.join(kinds)})"
        + (f" and {more} more file(s)" if more else "")
        + f"; nothing pushed to {remote}",
        hint="export again without the file and push that package by id, "
        "or pass --allow-secrets to push it anyway",
    )


def _heads(root: Path, refs: list[store.PackageRef], remote: str) -> dict[str, dict[str, object]]:
    """Per package: its recorded HEAD and how many commits under it the remote lacks."""
    out: dict[str, dict[str, object]] = {}
    for r in refs:
        head = _recorded_head(r.path)
        if not head or not gitstate.commit_exists(root, head):
            out[r.package_id] = {"head": head, "unpushed_commits": None}
            continue
        out[r.package_id] = {"head": head, "unpushed_commits": gitstate.unpushed_count(root, head, remote)}
    return out


def _head_line(info: dict[str, object], remote: str, with_head: bool) -> str:
    head, n = info["head"], info["unpushed_commits"]
    short = str(head)[:12] if head else "(unborn)"
    if n is None:
        return f"HEAD {short} not in this repository: not sent"
    if n == 0:
        return f"HEAD {short} is on {remote}"
    if with_head:
        return f"HEAD {short} and {n} unpushed commit(s) sent as {HEAD_PREFIX}<id>"
    return (f"HEAD {short} is NOT on {remote} ({n} unpushed commit(s), not sent): resuming "
            "elsewhere needs it; push your branch, or push again with --with-head")  # fmt: skip


def push(
    root: Path,
    remote: str,
    spec: str | None,
    *,
    allow_secrets: bool = False,
    with_head: bool = False,
    with_cold: bool | None = None,
) -> Result:
    """Push packages; one whose files hold a secret only with ``allow_secrets`` (checked for
    every package before anything is stored or pushed, then again on the blobs to be sent).
    Local commits are sent only with ``with_head``; the cold sessions the packages reference
    go with them (verified and scanned before anything is pushed: cold.share) unless
    ``with_cold`` is False; by default (None) a cold session that cannot go is a warning."""
    gitstate.operand(remote, "remote name")  # before any local commit is made for the push
    refs = [store.resolve(root, spec)] if spec else store.list_packages(root)
    if not refs:
        raise NotFoundError(f"no packages in {packages_dir(root)} to push")
    refs, unvouched = _vouched(root, refs, named=spec is not None)
    secrets = _secrets(refs)
    if secrets and not allow_secrets:
        raise _refuse(secrets, remote)
    from contextfork.cold import share as cold_share  # the cold sessions, for --with-cold

    cold, cold_notes = _cold_batch(root, remote, refs, with_cold)
    stored = {r.package_id: store_commit(root, r) for r in refs}
    sent = _sent_secrets(root, stored)
    if sent and not allow_secrets:
        raise _refuse(sent, remote)
    for pid, files in sent.items():
        for path, kinds in files.items():
            merged = sorted(set(secrets.setdefault(pid, {}).get(path, [])) | set(kinds))
            secrets[pid][path] = merged
    heads = _heads(root, refs, remote)
    # forced: a package id names one package; an older parented commit of it is replaced
    specs = [f"+{REF_PREFIX}{pid}:{REF_PREFIX}{pid}" for pid in stored]
    if with_head:
        specs += [f"{info['head']}:{HEAD_PREFIX}{pid}" for pid, info in heads.items()
                  if info["unpushed_commits"]]  # fmt: skip
    gitstate.push_refs(root, remote, specs)
    text = f"Pushed {len(stored)} package(s) to {remote} under {REF_PREFIX}*\n" + "\n".join(
        f"  {pid} -> {sha[:12]}; {_head_line(heads[pid], remote, with_head)}"
        for pid, sha in stored.items()
    )

    problems = [
        Problem("warning", code_of(path), f"pushed with --allow-secrets: {describe(path)} "
                f"({', '.join(kinds)})", f"{pid}:{path}")
        for pid, files in secrets.items() for path, kinds in files.items()
    ]  # fmt: skip
    problems += unvouched
    problems += [
        Problem("warning", "head_not_on_remote", _head_line(info, remote, False), pid)
        for pid, info in heads.items() if info["unpushed_commits"] and not with_head
    ]  # fmt: skip
    signed = {pid: gitstate.is_signed(root, sha) for pid, sha in stored.items()}
    data = {"remote": remote, "packages": stored, "secrets": secrets, "heads": heads,
            "with_head": with_head, "signed": signed}  # fmt: skip
    result = Result("push", data=data, problems=problems + cold_notes, text=text)
    if cold is None:
        return result
    return _carry_cold(result, bool(with_cold), "pushed", f"contextfork fold push {remote}",
                       lambda: cold_share.send_prepared(root, remote, cold))


def _carry_cold(result: Result, asked: bool, what: str, fix: str,
                share: Callable[[], Any]) -> Result:  # fmt: skip
    """The packages' result with their cold sessions' share; a share that fails is a warning
    on the packages that did go, unless it was asked for (``--with-cold``)."""
    from contextfork.cold import share as cold_share

    try:
        return cold_share.carried(result, share())
    except ContextforkError as exc:
        if asked:
            raise
        result.problems.append(_cold_left(what, exc, fix))
        return result


def _cold_left(what: str, exc: ContextforkError, fix: str) -> Problem:
    return Problem("warning", f"cold_not_{what}", f"the packages' cold sessions were not {what}: "
                   f"{exc.one_line()}; to retry: `{fix}`")  # fmt: skip


def _cold_batch(
    root: Path, remote: str, refs: list[store.PackageRef], with_cold: bool | None
) -> tuple[Any, list[Problem]]:
    """The cold sessions to send with ``refs`` (None: none), and warnings (default mode)."""
    if with_cold is False:
        return None, []
    from contextfork.cold import share as cold_share

    try:
        batch = cold_share.prepare_for_packages(root, remote, [r.path for r in refs])
    except ContextforkError as exc:
        if with_cold:
            raise
        return None, [_cold_left("pushed", exc, f"contextfork fold push {remote}")]
    if with_cold is None and not batch.outs:
        return None, batch.problems  # nothing referenced here: a plain package push
    return batch, []


def pull_max_bytes() -> int:
    """Most bytes one pulled package may hold (``$CONTEXTFORK_PULL_MAX_BYTES`` overrides)."""
    return positive_int(PULL_MAX_ENV, DEFAULT_PULL_MAX_BYTES)


def _check_sizes(package_id: str, entries: list[gitstate.TreeEntry]) -> None:
    """Refuse a package from git's recorded object sizes, before any blob is read."""
    limit = pull_max_bytes()
    total = 0
    for e in entries:
        if e.size is None:
            raise IntegrityError(f"package {package_id}: git reports no size for {e.path!r}")
        total += e.size
        if e.size > limit or total > limit:
            raise IntegrityError(
                f"package {package_id}: {total if e.size <= limit else e.size} bytes "
                f"({e.path!r}) exceed the pull limit of {limit} bytes; nothing was read",
                hint=f"set {PULL_MAX_ENV} to pull larger packages",
            )


def _pull_record(root: Path, package_id: str, commit: str, remote: str) -> dict[str, object]:
    """What the provenance record of a package fetched from ``remote`` holds (its signature as
    verified now: ``fetched_refusal`` let it through). A remote that delivered signed packages
    before and now sends an unsigned one had its signature stripped, or a new pusher: held."""
    sig = signing.verified_signature(root, commit)
    out: dict[str, object] = {"remote": remote, "commit": commit, "signed": sig is not None,
                              "signature": sig}  # fmt: skip
    prior = provenance.package_record(root, package_id)
    if sig is None and prior is not None and prior.get("signed"):
        raise IntegrityError(f"package {package_id}: unsigned, but it was signed when pulled "
                             "before (signature stripped?); refused")  # fmt: skip
    if sig is None and provenance.remote_signed_before(root, remote):
        out["held"] = (f"unsigned, but {remote} delivered signed packages before (signature "
                       "stripped?); `contextfork resume ID --trust` accepts it")  # fmt: skip
    return out


def _materialize(root: Path, package_id: str, commit: str, remote: str) -> dict[str, object]:
    """Write one fetched package, refusing hostile trees (and signatures git does not verify)
    before anything is written; its provenance record is written before it is published."""
    refusal = signing.fetched_refusal(root, commit)
    if refusal:
        raise IntegrityError(f"package {package_id}: {refusal}")
    record = _pull_record(root, package_id, commit, remote)
    entries = gitstate.ls_tree_all(root, commit)
    for e in entries:
        reason = unsafe_reason(e.path)
        if reason:
            raise IntegrityError(f"package {package_id}: tree path {e.path!r} refused: {reason}")
        if e.kind != "blob" or e.mode not in ("100644", "100755"):
            what = "symlink" if e.mode == "120000" else f"{e.kind} (mode {e.mode})"
            raise IntegrityError(f"package {package_id}: {e.path!r} is a {what}; refused")
    _check_sizes(package_id, entries)
    blobs = gitstate.read_blobs(root, [e.sha for e in entries])
    base = packages_dir(root)
    with atomic.staging_dir(base) as staging:
        for e in entries:
            atomic.write_into(staging, e.path, blobs[e.sha])
        v = validate_package(staging, root)
        bad = [p for p in v.errors if p.code in INTEGRITY_CODES]
        if bad:
            raise IntegrityError(f"package {package_id} does not verify: {bad[0].line()}")
        if v.manifest is None or v.manifest.package_id != package_id:
            raise IntegrityError(f"package {package_id}: manifest names another package")
        manifest = next(blobs[e.sha] for e in entries if e.path == "manifest.json")
        provenance.record_manifest(root, package_id, manifest, "pull", **record)
        atomic.publish_dir(staging, base / package_id)
    return record


def _adopt(root: Path, package_id: str, commit: str, remote: str) -> Problem | None:
    """A package already here without a provenance record (pulled by an older contextfork):
    recorded as pulled when its files are exactly the fetched commit's and that commit passes
    the signature rule; otherwise left unoffered, with a warning."""
    if provenance.package_record(root, package_id) is not None:
        return None
    pkg = packages_dir(root) / package_id
    refusal = signing.fetched_refusal(root, commit)
    differ = [] if refusal else signing.differing_files(root, commit, pkg)
    if refusal or differ:
        why = refusal or f"{differ[0]} differs from {remote}'s commit {commit[:12]}"
        return Problem("warning", "present_unverified", f"already here without a provenance "
                       f"record, and not recorded now: {why}; never offered", package_id)  # fmt: skip
    provenance.record_package(root, package_id, pkg, "pull", **_pull_record(root, package_id, commit, remote))
    return None


def _signed_first(root: Path, refs: dict[str, str]) -> list[tuple[str, str]]:
    """Fetched refs, signed commits first: an unsigned package from a remote that signs is
    then held whatever the order of their ids (a ref naming no commit sorts last; refused)."""

    def unsigned(item: tuple[str, str]) -> bool:
        try:
            return not gitstate.is_signed(root, item[1])
        except GitError:
            return True

    return sorted(sorted(refs.items()), key=unsigned)


def pull(root: Path, remote: str, *, with_cold: bool | None = None) -> Result:
    gitstate.operand(remote, "remote name")
    prefix = _tracking_prefix(remote)
    heads = _tracking_prefix(remote, "-head")
    gitstate.fetch_refs(root, remote, f"+{REF_PREFIX}*:{prefix}*", f"+{HEAD_PREFIX}*:{heads}*")
    exclude_state_dir(root)
    local = {r.package_id for r in store.list_packages(root)}
    pulled, present, signed, problems = [], [], [], []
    for name, sha in _signed_first(root, gitstate.refs_under(root, prefix)):
        package_id = name[len(prefix):]
        if not ID_RE.match(package_id):
            problems.append(Problem("error", "unsafe_id", "package id refused", package_id))
            continue
        if package_id in local:
            present.append(package_id)
            try:
                adopted = _adopt(root, package_id, sha, remote)
            except (IntegrityError, GitError) as exc:
                adopted = Problem("warning", "present_unverified", exc.message, package_id)
            if adopted is not None:
                problems.append(adopted)
            continue
        try:
            record = _materialize(root, package_id, sha, remote)
        except (IntegrityError, GitError) as exc:
            problems.append(Problem("error", "package_refused", exc.message, package_id))
            continue
        gitstate.update_ref(root, REF_PREFIX + package_id, sha)
        pulled.append(package_id)
        sig = record.get("signature")
        if isinstance(sig, dict):
            signed.append(package_id)
            provenance.note_signed_remote(root, remote, sig.get("signer"))
        elif record.get("held"):
            problems.append(Problem("warning", "signature_stripped", str(record["held"]), package_id))
    refused = sum(p.severity == "error" for p in problems)
    held = {p.path for p in problems if p.code == "signature_stripped"}
    text = (f"Pulled {len(pulled)} package(s) from {remote} ({len(present)} already here, "
            f"{refused} refused)\n" + "\n".join(f"  + {p}" + ("  (HELD: unsigned from a remote "
            "that signs; not offered)" if p in held else "") for p in pulled))  # fmt: skip
    code = 3 if refused else 0
    data = {"remote": remote, "pulled": pulled, "already_present": present, "signed": signed}
    result = Result("pull", data=data, problems=problems, exit_code=code, text=text)
    if with_cold is not False:  # the sessions the packages from this remote reference
        from contextfork.cold import share as cold_share

        pkgs = [packages_dir(root) / p for p in [*pulled, *present]]
        if with_cold is None and not cold_share.referenced_sessions(pkgs)[0]:
            return result
        return _carry_cold(result, bool(with_cold), "pulled", f"contextfork fold pull {remote}",
                           lambda: cold_share.pull_for_packages(root, remote, pkgs))
    return result
