"""``contextfork fold push|pull``: the cold store shared through git, as content-addressed objects.

Each session is a ref ``refs/contextfork/cold/<session>`` whose commit holds a tree of exactly
the node files (``cold_nodes/step_NNNNNN.json``, the IPCF layout; nothing else). Node files are
canonical JSON named by step id and immutable, so the tree is a pure function of the nodes and
a store holding the same nodes gives the same tree. A push is one fold batch: one new commit
whose parent is the ref's previous commit (plus, after a pull, the remote commit it merged), or
none when nothing changed since.

Push builds its commit from the verified local store only: under the store's lock, the
node files the index lists are written as blobs; every blob not already in a commit verified
before (the last pushed one, the last pulled one) is read back from git and re-verified (the
three identities, the identity the index recorded at fold time, the session), then scanned for
secrets. A secret anywhere refuses the whole push before a ref moves. The push is a plain
fast-forward: when the remote moved on, git rejects it and the answer is to pull first.

Pull fetches into a quarantine ref, checks and verifies everything there (``incoming``), and
only then publishes into the local store and moves the verified remote-tracking ref
``refs/contextfork/remote-cold/<remote>/<session>``, which the next push uses as a parent.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork import gitstate, provenance, signing
from contextfork.cold.incoming import NODES_DIR, node_step, publish, verify_fetched
from contextfork.cold.layout import (
    StoreLayout,
    check_session_id,
    layout_for,
    step_key,
    step_of_name,
    store_lock,
)
from contextfork.cold.node import payload_bytes_of, verify_node
from contextfork.cold.rebuild import node_names
from contextfork.envelope import Problem, Result
from contextfork.errors import CheckFailed, ContextforkError, IntegrityError, NotFoundError
from contextfork.testhooks import kill_point

REF_PREFIX = "refs/contextfork/cold/"
QUARANTINE_PREFIX = "refs/contextfork/quarantine/cold/"
TRACKING_PREFIX = "refs/contextfork/remote-cold/"
_STORE_REF = re.compile(r"^(?:\./)?\.contextfork/cold/([^/]+)/?$")


def _remote_part(remote: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", remote)


def tracking_ref(remote: str, session: str) -> str:
    return f"{TRACKING_PREFIX}{_remote_part(remote)}/{session}"


def quarantine_ref(remote: str, session: str) -> str:
    return f"{QUARANTINE_PREFIX}{_remote_part(remote)}/{session}"


def _ref(root: Path, name: str) -> str | None:
    return gitstate.refs_under(root, name).get(name)


def local_sessions(root: Path) -> list[str]:
    """Sessions with a node directory under ``<repo>/.contextfork/cold``."""
    from contextfork.layout import state_path

    base = state_path(root, "cold")
    if not base.is_dir():
        return []
    out = []
    for d in sorted(base.iterdir()):
        with contextlib.suppress(ContextforkError):
            if d.is_dir() and not d.is_symlink() and (d / NODES_DIR).is_dir():
                out.append(check_session_id(d.name))
    return out


def _tree_nodes(root: Path, commit: str | None) -> dict[str, str]:
    """Node file name → blob id in a commit made or verified here before."""
    if not commit:
        return {}
    return {e.path.removeprefix(f"{NODES_DIR}/"): e.sha for e in gitstate.ls_tree_all(root, commit)
            if node_step(e.path) is not None}  # fmt: skip


@dataclass
class Outgoing:
    """One session ready to push: its commit (new or reused) and what was checked."""

    session: str
    commit: str
    prev: str | None  # the local ref's value when read
    nodes: int
    checked: int  # nodes read back from git and verified now
    new_commit: bool
    secrets: dict[str, list[str]] = field(default_factory=dict)  # node path → kinds
    problems: list[Problem] = field(default_factory=list)


def _secret_kinds(raw: bytes, node: dict[str, Any]) -> list[str]:
    """Secret kinds in a node as it will be sent: its JSON text, every string in it (decoded,
    one line each: a node holds thousands of index terms, scanned in one pass), and a base64
    payload's bytes (redaction at fold time only sees UTF-8 text). The package scanner's rules
    (``package.secrets.kinds_in``, ``redact.find_secrets``)."""
    from contextfork.package.secrets import json_strings, kinds_in
    from contextfork.redact import find_secrets

    found = set(kinds_in(raw))
    found.update(kind for _s, _e, kind in find_secrets("\n".join(json_strings(node))))
    if node.get("content_encoding") == "base64":
        found.update(kinds_in(payload_bytes_of(node)))
    return sorted(found)


def _store_files(layout: StoreLayout) -> tuple[dict[int, Path], list[Problem]]:
    files: dict[int, Path] = {}
    problems: list[Problem] = []
    for name in node_names(layout):
        path = layout.nodes_dir / name
        if path.is_symlink():
            raise IntegrityError(f"cold session {layout.session_id}: {NODES_DIR}/{name} is a "
                                 "symlink; nothing pushed", hint="run `contextfork fold validate`")  # fmt: skip
        sid = step_of_name(name)
        if sid is None or not path.is_file():
            problems.append(Problem("warning", "stray_file", "not a node file; not pushed",
                                    f"{layout.session_id}/{NODES_DIR}/{name}"))  # fmt: skip
            continue
        files[sid] = path
    return files, problems


def _local_snapshot(root: Path, layout: StoreLayout) -> tuple[dict[str, str], dict[int, str], list[Problem]]:
    """Under the store's lock (no fold half done): node name → blob id of every indexed
    node file (blobs written), the index's recorded identities, and what is left out."""
    from contextfork.cold.incoming import recorded_identities

    s = layout.session_id
    with store_lock(layout):
        files, problems = _store_files(layout)
        recorded = recorded_identities(layout)
        orphans = sorted(set(files) - set(recorded))
        missing = sorted(set(recorded) - set(files))
        kept = sorted(set(files) & set(recorded))
        shas = gitstate.blob_ids(root, [files[k] for k in kept], write=True)
    if orphans:
        problems.append(Problem("warning", "orphan_node", f"{len(orphans)} node file(s) the index "
                                "does not list were not pushed (run `contextfork fold index`)", s))  # fmt: skip
    if missing:
        problems.append(Problem("warning", "missing_node", f"the index lists {len(missing)} step(s) "
                                "whose node file is missing; not pushed", s))  # fmt: skip
    return {f"{step_key(k)}.json": sha for k, sha in zip(kept, shas, strict=True)}, recorded, problems


def prepare(root: Path, remote: str, session: str) -> Outgoing | None:
    """Verify one local session and build (or reuse) its commit; no ref moves. None when the
    session has no node to push."""
    layout = layout_for(root, session)
    layout.ensure_contained()
    if not layout.nodes_dir.is_dir():
        raise NotFoundError(f"no cold store for session {session!r}", hint="fold something first")
    entries, recorded, problems = _local_snapshot(root, layout)
    if not entries:
        return None
    prev, track = _ref(root, REF_PREFIX + session), _ref(root, tracking_ref(remote, session))
    prev_map, track_map = _tree_nodes(root, prev), _tree_nodes(root, track)
    check = [(n, sha) for n, sha in sorted(entries.items())
             if prev_map.get(n) != sha and track_map.get(n) != sha]  # fmt: skip
    out = Outgoing(session, "", prev, len(entries), len(check), False, problems=problems)
    blobs = gitstate.iter_blobs(root, [sha for _n, sha in check], sys.maxsize)
    with contextlib.closing(blobs):
        for (name, _sha), (_s, raw) in zip(check, blobs, strict=True):
            sid = int(name[5:11])
            node = verify_node(raw, where=f"cold session {session}: {NODES_DIR}/{name}", step_id=sid)
            if node["artifact_sha256"] != recorded[sid]:
                raise IntegrityError(
                    f"cold session {session}: {NODES_DIR}/{name} differs from the identity the index "
                    "recorded at fold time (rewritten and re-hashed); nothing pushed",
                    hint="run `contextfork fold validate`",
                )
            if node["session_id"] != session:
                raise IntegrityError(f"cold session {session}: {NODES_DIR}/{name} belongs to "
                                     f"session {node['session_id']!r}; nothing pushed")  # fmt: skip
            kinds = _secret_kinds(raw, node)
            if kinds:
                out.secrets[f"{NODES_DIR}/{name}"] = kinds
    sub = gitstate.make_tree(root, [("100644", "blob", sha, n) for n, sha in sorted(entries.items())])
    tree = gitstate.make_tree(root, [("040000", "tree", sub, NODES_DIR)])
    tips = [prev] if prev else []
    if track and all(entries.get(n) == sha for n, sha in track_map.items()):
        tips.append(track)  # the remote's nodes are all here: merge it, the push fast-forwards
    if len(tips) == 2 and gitstate.is_ancestor(root, tips[1], tips[0]):
        tips = [tips[0]]
    elif len(tips) == 2 and gitstate.is_ancestor(root, tips[0], tips[1]):
        tips = [tips[1]]
    dropped = sorted(set(prev_map) - set(entries))
    if dropped:
        out.problems.append(Problem("warning", "nodes_dropped", f"{len(dropped)} node(s) of the last "
                                    "pushed commit are no longer here (kept in its history)", session))  # fmt: skip
    sign = signing.wanted(root)  # as for packages: pull verifies the tip's signature
    if (len(tips) == 1 and gitstate.tree_of(root, tips[0]) == tree
            and (not sign or gitstate.is_signed(root, tips[0]))):  # fmt: skip
        out.commit = tips[0]
    else:
        message = f"contextfork cold {session}: {len(entries)} node(s)\n"
        out.commit = gitstate.commit_tree(root, tree, tips, message, sign=sign)
        out.new_commit = True
    return out


def _refuse_secrets(outs: list[Outgoing], remote: str) -> CheckFailed:
    found = [(o.session, p, k) for o in outs for p, k in o.secrets.items()]
    session, path, kinds = found[0]
    more = f" and {len(found) - 1} more node(s)" if len(found) > 1 else ""
    return CheckFailed(
        f"cold session {session} holds a secret in node {path} ({', '.join(kinds)}){more}; "
        f"nothing pushed to {remote}",
        hint="the node escaped redaction (an older contextfork, or an edited store); "
        "`contextfork fold push --session S` pushes the other sessions",
    )


def prepare_all(root: Path, remote: str, sessions: list[str]) -> list[Outgoing]:
    """``prepare`` every session; a secret in any refuses all of them (CheckFailed)."""
    outs = [o for o in (prepare(root, remote, s) for s in sessions) if o is not None]
    if any(o.secrets for o in outs):
        raise _refuse_secrets(outs, remote)
    return outs


def send(root: Path, remote: str, outs: list[Outgoing]) -> Result:
    """Move the local refs to the prepared commits and push them (fast-forward only)."""
    for o in outs:
        if o.commit != o.prev:
            gitstate.set_ref(root, REF_PREFIX + o.session, o.commit, o.prev)
    kill_point("cold-push-before-send")  # the next push finds its commit and sends it
    verdicts = {v.ref: v for v in gitstate.push_verdicts(
        root, remote, [f"{o.commit}:{REF_PREFIX}{o.session}" for o in outs])} if outs else {}  # fmt: skip
    pushed: dict[str, dict[str, Any]] = {}
    problems = [p for o in outs for p in o.problems]
    for o in outs:
        v = verdicts.get(REF_PREFIX + o.session)
        if v is None or not v.ok:
            why = v.summary if v else "no answer from git push"
            problems.append(Problem("error", "remote_ahead", f"{remote} refused the push ({why}): it "
                                    f"has nodes not pulled here; run `contextfork fold pull {remote} "
                                    f"--session {o.session}`, then push again", o.session))  # fmt: skip
            continue
        gitstate.update_ref(root, tracking_ref(remote, o.session), o.commit)
        pushed[o.session] = {"commit": o.commit, "nodes": o.nodes, "verified": o.checked,
                             "new_commit": o.new_commit, "up_to_date": "up to date" in v.summary}  # fmt: skip
    lines = [f"  {s} -> {d['commit'][:12]} ({d['nodes']} node(s)"
             + (", already there)" if d["up_to_date"] else f", {d['verified']} verified now)")
             for s, d in pushed.items()]  # fmt: skip
    text = f"Pushed {len(pushed)} cold session(s) to {remote} under {REF_PREFIX}*" + "".join(
        "\n" + ln for ln in lines)
    refused = any(p.severity == "error" for p in problems)
    data = {"remote": remote, "sessions": pushed}
    return Result("fold push", data=data, problems=problems, exit_code=1 if refused else 0,
                  text=text)


def push(root: Path, remote: str, sessions: list[str] | None = None) -> Result:
    """Push the given sessions (default: every local one); see the module docstring."""
    gitstate.operand(remote, "remote name")  # before any session commit is made
    names = [check_session_id(s) for s in sessions] if sessions else local_sessions(root)
    if not names:
        raise NotFoundError("no cold store sessions to push", hint="fold something first")
    return send(root, remote, prepare_all(root, remote, names))


def _signature(root: Path, session: str, commit: str, remote: str) -> dict[str, Any]:
    """The package signature rule on the fetched tip (it names every node of the session):
    a signature that does not verify is refused, so is an unsigned tip when signatures are
    required or when the last pull of this session was signed (stripped, or a new pusher)."""
    refusal = signing.fetched_refusal(root, commit)
    if refusal:
        raise IntegrityError(f"cold session {session}: {refusal}; nothing was written")
    sig = signing.verified_signature(root, commit)
    before = provenance.cold_record(root, session)
    if sig is None and before is not None and before.get("signed"):
        raise IntegrityError(
            f"cold session {session}: {remote}'s commit {commit[:12]} is unsigned, but the last "
            "pull of this session was signed (signature stripped?); nothing was written",
            hint="ask whoever pushed it to sign (contextfork.signPackages); delete "
            f"{_record_path(root, session)} to accept unsigned pushes of it again",
        )
    return {"remote": remote, "commit": commit, "signed": sig is not None, "signature": sig}


def _record_path(root: Path, session: str) -> str:
    from contextfork.layout import provenance_file

    return str(provenance_file(root, provenance.COLD, session))


def _pull_one(root: Path, remote: str, session: str, commit: str | None) -> dict[str, Any]:
    from contextfork.cold.incoming import recorded_identities

    layout = layout_for(root, session)
    try:
        if commit is None:
            raise IntegrityError(f"cold session {session}: the fetch brought no commit")
        inc = verify_fetched(root, layout, commit, f"{remote}:{REF_PREFIX}{session}")
        origin = _signature(root, session, commit, remote)  # a commit now: verify_fetched said so
        written, adopted = len(inc.new), len(inc.adopt)
        indexed = publish(layout, inc)
        # what page-in may use of this session: exactly these nodes (contextfork.provenance)
        recorded = recorded_identities(layout)
        provenance.record_cold_pull(root, session, {s: recorded[s] for s in inc.steps if s in recorded},
                                    **origin)  # fmt: skip
        gitstate.update_ref(root, tracking_ref(remote, session), commit)
    finally:  # verified or refused, nothing keeps the fetched commit but the tracking ref
        gitstate.delete_ref(root, quarantine_ref(remote, session))
    return {"commit": commit, "nodes": inc.nodes, "written": written, "adopted": adopted,
            "indexed": indexed, "unchanged": inc.nodes - indexed, "signed": origin["signed"]}  # fmt: skip


def pull(
    root: Path, remote: str, sessions: list[str] | None = None, *, required: bool = True
) -> Result:
    """Fetch sessions (default: every one the remote has) and publish the verified ones.

    ``required``: a named session missing on the remote is NotFoundError (else a warning, as
    for sessions a pulled package references). One refused session among several is reported
    (exit 3) while the others are published; a single one refused raises its IntegrityError."""
    gitstate.operand(remote, "remote name")
    wanted = [check_session_id(s) for s in sessions] if sessions is not None else None
    on_remote = {n[len(REF_PREFIX):]: sha for n, sha in
                 gitstate.ls_remote(root, remote, f"{REF_PREFIX}*").items()}  # fmt: skip
    problems: list[Problem] = []
    if wanted is None:
        names = []
        for s in sorted(on_remote):
            try:
                names.append(check_session_id(s))
            except ContextforkError:
                problems.append(Problem("error", "unsafe_id", "session id refused", s))
    else:
        absent = [s for s in wanted if s not in on_remote]
        if absent and required:
            raise NotFoundError(f"{remote} has no cold session {absent[0]!r}",
                                hint="push it from the machine that folded it: `contextfork fold push`")  # fmt: skip
        problems += [Problem("warning", "cold_session_absent", f"not on {remote}: not pulled", s)
                     for s in absent]  # fmt: skip
        names = [s for s in wanted if s in on_remote]
    if names:
        gitstate.fetch_refs(root, remote, *[f"+{REF_PREFIX}{s}:{quarantine_ref(remote, s)}" for s in names])
    pulled: dict[str, dict[str, Any]] = {}
    for s in names:
        commit = _ref(root, quarantine_ref(remote, s))
        try:
            pulled[s] = _pull_one(root, remote, s, commit)
        except IntegrityError as err:
            if len(names) == 1 and wanted is not None and required:
                raise
            problems.append(Problem("error", "cold_session_refused", err.message, s))
    text = f"Pulled {len(pulled)} cold session(s) from {remote}" + "".join(
        f"\n  {s}: {d['nodes']} node(s), {d['indexed']} new here" for s, d in pulled.items())
    code = 3 if any(p.code in ("cold_session_refused", "unsafe_id") for p in problems) else 0
    return Result("fold pull", data={"remote": remote, "sessions": pulled}, problems=problems,
                  exit_code=code, text=text)  # fmt: skip


def referenced_sessions(packages: list[Path]) -> tuple[list[str], list[Problem]]:
    """The cold sessions packages reference (``cold_store_refs``: ``.contextfork/cold/<id>``)."""
    found: list[str] = []
    problems: list[Problem] = []
    for pkg in packages:
        try:
            meta = json.loads((pkg / "session_metadata.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        refs = meta.get("cold_store_refs") if isinstance(meta, dict) else None
        for ref in refs if isinstance(refs, list) else []:
            m = _STORE_REF.match(ref) if isinstance(ref, str) else None
            try:
                sid = check_session_id(m.group(1)) if m else None
            except ContextforkError:
                sid = None
            if sid is None:
                problems.append(Problem("warning", "cold_ref_unusable", f"cold-store reference "
                                        f"{ref!r} names no session; not shared", pkg.name))  # fmt: skip
            elif sid not in found:
                found.append(sid)
    return found, problems


@dataclass
class ColdBatch:
    """The sessions packages reference, verified and committed, ready to send with them."""

    outs: list[Outgoing]
    problems: list[Problem]


def prepare_for_packages(root: Path, remote: str, packages: list[Path]) -> ColdBatch:
    """``prepare_all`` for the sessions ``packages`` reference that exist here (a secret in
    any refuses the whole push, packages included, before anything is sent)."""
    names, problems = referenced_sessions(packages)
    here = set(local_sessions(root))
    problems += [Problem("warning", "cold_session_absent", "referenced, but not in this "
                         "repository's cold store: not pushed", s) for s in names if s not in here]  # fmt: skip
    return ColdBatch(prepare_all(root, remote, [s for s in names if s in here]), problems)


def send_prepared(root: Path, remote: str, batch: ColdBatch) -> Result:
    res = send(root, remote, batch.outs)
    res.problems = batch.problems + res.problems
    return res


def pull_for_packages(root: Path, remote: str, packages: list[Path]) -> Result:
    names, problems = referenced_sessions(packages)
    res = pull(root, remote, names, required=False)
    res.problems = problems + res.problems
    return res


def carried(result: Result, cold: Result) -> Result:
    """A package push/pull result with the cold sessions it carried (``data["cold"]``)."""
    result.data["cold"] = cold.data
    result.problems += cold.problems
    result.exit_code = max(result.exit_code, cold.exit_code)
    result.text = f"{result.text}\n{cold.text}" if result.text else cold.text
    return result
