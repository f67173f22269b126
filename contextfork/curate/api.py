"""The agent's curation verbs over one session: one entry point for pi, MCP and the CLI.

``run_verb(root, session, verb, args)`` answers ``status`` (the fold index with every
decision), ``peek`` (a verified slice of a folded step, ephemeral unless ``record``), and the
decisions ``expand``/``refold``, ``pin``/``unpin``, ``brief``, ``reboundary``, ``unmark``.
Each decision is read-modify-written under the cold store's lock and saved atomically with its
own hash (``state``). Bad arguments are a ``UsageError`` with one line, an unknown step a
``NotFoundError``: the caller turns either into its own error shape (exit code, tool error).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from contextfork.cold.decisions import Brief, Decisions, load_decisions, save_decisions
from contextfork.cold.layout import store_lock
from contextfork.curate.args import VERBS, brief_text, steps_of, target_keys
from contextfork.curate.index import FoldIndex, open_index
from contextfork.curate.peek import peek
from contextfork.envelope import Result
from contextfork.errors import UsageError

UNMARK_KINDS = ("all", "pin", "expand", "brief", "boundary")


def decisions_json(d: Decisions, index: FoldIndex | None = None) -> dict[str, Any]:
    """Decisions as data, with step ids beside keys when the index knows them."""
    ids = {e.key: e.step_id for e in index.entries} if index else {}

    def with_ids(keys: frozenset[str] | tuple[str, ...]) -> list[dict[str, Any]]:
        return [{"key": k, "step": ids.get(k)} for k in sorted(keys)]

    return {
        "revision": d.revision,
        "pinned": with_ids(d.pinned),
        "expanded": with_ids(d.expanded),
        "briefs": [{**b.to_json(), "steps": [ids.get(k) for k in b.keys]}
                   for _, b in sorted(d.briefs.items())],
        "boundary": None if d.boundary is None else {"key": d.boundary,
                                                     "step": ids.get(d.boundary)},
    }


def _status(root: Path, session: str, args: Mapping[str, object]) -> Result:
    from contextfork.curate.status import live_folds, store_steps

    _only(args, "status", ("transcript", "policy", "k"))
    index = open_index(root, session)
    d = load_decisions(root, session)
    steps = store_steps(index, d)
    data: dict[str, Any] = {"session_id": session, "steps": steps,
                            "total_tokens": sum(e.tokens for e in index.entries),
                            "decisions": decisions_json(d, index), "view": None}
    if args.get("transcript") is not None:
        data["view"] = live_folds(index, d, args)
    elif "policy" in args or "k" in args:
        raise UsageError("status: policy and k need a transcript")
    where = "auto"
    if d.boundary is not None:
        where = f"before step {next((e.step_id for e in index.entries if e.key == d.boundary), '?')}"
    text = (f"session {session}: {len(steps)} folded steps, {data['total_tokens']} tokens; "
            f"{len(d.pinned)} pinned, {len(d.expanded)} expanded, {len(d.briefs)} briefs, "
            f"boundary {where}")
    view = data["view"]
    if view is not None:
        text += (f"\nview at step {view['at_step']} ({view['policy']}, k={view['k']}): "
                 f"{len(view['folds'])} folds, {view['epochs']} epochs, "
                 f"~{view['estimated_tokens']} tokens")
        for f in view["folds"]:
            a, b = f["positions"]
            text += (f"\n  {f['id']}: steps {a}-{b} (~{f['estimated_tokens']} tokens)"
                     + (" · agent brief" if f["brief"] else ""))
    return Result("context status", data=data, text=text)


def _only(args: Mapping[str, object], verb: str, allowed: tuple[str, ...]) -> None:
    extra = sorted(set(args) - set(allowed))
    if extra:
        raise UsageError(
            f"{verb}: unknown argument {extra[0]!r}",
            hint=f"{verb} takes {', '.join(allowed) if allowed else 'no arguments'}",
        )


_TARGET = ("step", "steps", "key")

Mutation = Callable[[Decisions, list[str], Mapping[str, object]], Decisions]


def _pin(d: Decisions, keys: list[str], args: Mapping[str, object]) -> Decisions:
    return replace(d, pinned=d.pinned | set(keys))


def _unpin(d: Decisions, keys: list[str], args: Mapping[str, object]) -> Decisions:
    return replace(d, pinned=d.pinned - set(keys))


def _expand(d: Decisions, keys: list[str], args: Mapping[str, object]) -> Decisions:
    return replace(d, expanded=d.expanded | set(keys))


def _refold(d: Decisions, keys: list[str], args: Mapping[str, object]) -> Decisions:
    return replace(d, expanded=d.expanded - set(keys))


def _brief(d: Decisions, keys: list[str], args: Mapping[str, object]) -> Decisions:
    text, redactions = brief_text(args.get("text"))
    briefs = {k: b for k, b in d.briefs.items() if not set(b.keys) & set(keys)}
    briefs[keys[0]] = Brief(keys[0], tuple(keys), text, redactions)
    return replace(d, briefs=briefs)


def _reboundary(d: Decisions, keys: list[str], args: Mapping[str, object]) -> Decisions:
    return replace(d, boundary=keys[0] if keys else None)


def _unmark(d: Decisions, keys: list[str], args: Mapping[str, object]) -> Decisions:
    kind = args.get("kind", "all")
    if kind not in UNMARK_KINDS:
        raise UsageError(f"unmark: kind must be one of {', '.join(UNMARK_KINDS)}, got {kind!r}")
    drop = set(keys)
    out = d
    if kind in ("all", "pin"):
        out = replace(out, pinned=out.pinned - drop)
    if kind in ("all", "expand"):
        out = replace(out, expanded=out.expanded - drop)
    if kind in ("all", "brief"):
        out = replace(out, briefs={k: b for k, b in out.briefs.items()
                                   if not set(b.keys) & drop})
    if kind in ("all", "boundary") and (out.boundary in drop or (kind == "boundary" and not keys)):
        out = replace(out, boundary=None)
    return out


# verb -> (mutation, extra allowed args, a target is required)
_MUTATIONS: dict[str, tuple[Mutation, tuple[str, ...], bool]] = {
    "pin": (_pin, (), True),
    "unpin": (_unpin, (), True),
    "expand": (_expand, (), True),
    "refold": (_refold, (), True),
    "brief": (_brief, ("text",), True),
    "reboundary": (_reboundary, ("clear",), False),
    "unmark": (_unmark, ("kind",), False),
}


def _mutate(root: Path, session: str, verb: str, args: Mapping[str, object]) -> Result:
    mutation, extra, required = _MUTATIONS[verb]
    _only(args, verb, (*_TARGET, *extra))
    index = open_index(root, session)
    if verb == "reboundary" and args.get("clear") is True:
        if any(k in args for k in _TARGET):
            raise UsageError("reboundary: give a step or clear=true, not both")
        entries = []
    else:
        entries = target_keys(index, args, verb, required=required)
        if verb == "reboundary" and len(entries) != 1:
            raise UsageError("reboundary: name exactly one step (step N or key K), or clear=true")
    keys = [e.key for e in entries]
    with store_lock(index.layout):
        before = load_decisions(root, session)
        after = mutation(before, keys, args)
        changed = after != before
        if changed:
            after = replace(after, session_id=session, revision=before.revision + 1)
            save_decisions(root, after)
    data = {"session_id": session, "verb": verb, "changed": changed,
            "steps": [e.step_id for e in entries], "keys": keys,
            "decisions": decisions_json(after, index)}
    what = f"steps {steps_of(entries)}" if entries else "the boundary"
    text = f"{verb}: {what} ({'recorded' if changed else 'no change'})"
    return Result(f"context {verb}", data=data, text=text)


def _peek(root: Path, session: str, args: Mapping[str, object]) -> Result:
    _only(args, "peek", ("step", "key", "offset", "max_chars", "max_tokens", "view", "record"))
    index = open_index(root, session)
    entries = target_keys(index, args, "peek", required=True)
    if len(entries) != 1:
        raise UsageError("peek: name one step (step N or key K)")
    data = peek(index.layout, entries[0], args)
    if args.get("record") is True:
        rec = _mutate(root, session, "expand", {"key": entries[0].key})
        data["recorded"] = rec.data["changed"]
        data["decisions"] = rec.data["decisions"]
    else:
        data["recorded"] = False
    head = (f"step {data['step']} bytes {data['offset']}-{data['end']} of {data['total_bytes']} "
            f"(sha256 {data['payload_sha256'][:12]}… verified)")
    return Result("context peek", data=data, text=head + "\n" + data["text"])


def run_verb(root: Path, session: str, verb: str, args: Mapping[str, object]) -> Result:
    """Run one curation verb; every decision is durable before this returns."""
    if not isinstance(args, Mapping):
        raise UsageError("args must be an object")
    from contextfork.layout import repo_root

    root = repo_root(Path(root))  # a subdirectory names its repository's store
    if verb == "status":
        return _status(root, session, args)
    if verb == "peek":
        return _peek(root, session, args)
    if verb in _MUTATIONS:
        return _mutate(root, session, verb, args)
    raise UsageError(f"unknown verb {verb!r}", hint=f"choose from {', '.join(VERBS)}")
