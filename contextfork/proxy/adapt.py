"""One request in, one body out: the live view of its conversation, or the request untouched.

``adapt`` runs in a worker thread under a time budget (the server awaits it and forwards the
original when it is late). Whatever goes wrong — a body that is not the JSON asked for, a
render error, a cold-store write that did not verify, an edit that fails its proof — the answer
is "send it untouched" with the reason, never an error to the client: the proxy fails open.

Order of work for an edit: sync the history, advance the renderer (which stores every original
the view removes, ``LiveSession.view``), re-read each newly removed step from the cold store
(every identity re-verified, and the step's sha256 as rendered), build the edit, prove it, and
only then splice the body. The request that removes a step is never sent before its original is
readable.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork.hashing import sha256_text
from contextfork.proxy import jsonspan
from contextfork.proxy.conversation import Conversation, Registry, proxy_policy, safe_id
from contextfork.proxy.steps import Edit, Memo, PartSteps
from contextfork.render.engine import View


@dataclass
class Outcome:
    """What to forward: ``body`` (None: the original, untouched) and why."""

    body: bytes | None = None
    why: str | None = None
    conv: Conversation | None = None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Api:
    """What differs between the Messages API and the Responses API."""

    name: str
    array: str  # the body's member holding the conversation
    steps: Callable[[], PartSteps]
    identity: Callable[[Any], str]
    # (headers, body, values, raws) -> (registry key, cold-store session, main?)
    key: Callable[[Mapping[str, str], Mapping[str, Any], list[Any], list[str]],
                  tuple[str, str, bool]]
    edit: Callable[[PartSteps, list[Any], list[str], View, Memo], Edit]  # proxy.edit
    check: Callable[[list[Any], list[str], Edit], str | None]  # (values, raws, edit)
    hint: Callable[[Mapping[str, Any], str], str]


class Unreadable(Exception):
    """The request is not what the adapter reads: forward it untouched."""


def _parse(body: bytes, array: str, known: list[tuple[list[str], list[Any]]],
           ) -> tuple[str, dict[str, Any], list[Any], list[str], tuple[int, int]]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable("unreadable request: not UTF-8") from None
    try:
        top, items, _ = jsonspan.document(text, array, known)
    except jsonspan.SpanError as err:
        raise Unreadable(f"unreadable request: {err}") from None
    if array not in top or not isinstance(top[array][0], list):
        raise Unreadable(f"unreadable request: no {array} array")
    values = [v for v, _ in items]
    if not all(isinstance(v, dict) for v in values):
        raise Unreadable(f"unreadable request: an item of {array} is not an object")
    raws = [text[a:b] for _, (a, b) in items]
    return text, {k: v for k, (v, _) in top.items()}, values, raws, top[array][1]


def conversation(api: Api, registry: Registry, root: Path | None,
                 headers: Mapping[str, str], body: Mapping[str, Any],
                 values: list[Any], raws: list[str]) -> Conversation:
    key, store_id, _main = api.key(headers, body, values, raws)
    model = body.get("model")

    def make() -> Conversation:
        return Conversation(key, safe_id(store_id), root,
                            proxy_policy(model if isinstance(model, str) else None, root),
                            api.steps)

    return registry.get(f"{root}|{key}", make)


def adapt(api: Api, registry: Registry, root: Path | None, headers: Mapping[str, str],
          body: bytes, *, deadline: float, count_only: bool = False) -> Outcome:
    """The body to forward for one request (see the module docstring)."""
    out = Outcome()
    t0 = time.perf_counter()
    try:
        text, top, values, raws, span = _parse(body, api.array, registry.known())
    except Unreadable as err:
        out.why = str(err)
        return out
    out.info["parse_ms"] = round((time.perf_counter() - t0) * 1000, 2)
    if not values:
        out.why = "empty conversation"
        return out
    conv = conversation(api, registry, root, headers, top, values, raws)
    out.conv = conv
    if not conv.lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
        out.why = "busy: the conversation's previous request is still rendering"
        return out
    try:
        if count_only:
            return _count(api, conv, top, values, raws, text, span, out)
        return _render(api, conv, top, values, raws, text, span, out)
    except Exception as err:  # noqa: BLE001 - fail open: the request goes out untouched
        out.why = f"render error: {type(err).__name__}: {err}"[:300]
        return out
    finally:
        conv.lock.release()


def _render(api: Api, conv: Conversation, top: dict[str, Any], values: list[Any],
            raws: list[str], text: str, span: tuple[int, int], out: Outcome) -> Outcome:
    t0 = time.perf_counter()
    how = conv.sync(values, raws, api.identity)
    sess = conv.session
    conv.memo.hint[""] = api.hint(top, sess.store_session())
    t1 = time.perf_counter()
    conv.take_prestored()
    conv.refresh_decisions()
    before = set(sess.stored)
    t_wait = time.perf_counter()
    view = conv.view()
    t2 = time.perf_counter()
    out.info.update({"sync": how, "t": view.t, "boundary": view.boundary, "epochs": view.epochs,
                "folds": len(view.folds), "session": sess.session_id})
    if sess.store_error:
        out.why = f"cold store: {sess.store_error}"
        return out
    removed = {r.step for r in view.removals} - conv.verified
    problem = _verify(conv, view, removed)
    if problem:
        out.why = problem
        return out
    conv.verified |= removed
    t3 = time.perf_counter()
    conv.memo.ids = sess.cold_ids
    edit = api.edit(conv.live, values, raws, view, conv.memo)
    done = _finish(api, conv, top, values, raws, text, span, edit, out)
    t4 = time.perf_counter()
    out.info["phases_ms"] = {"parse": out.info.pop("parse_ms", None),
                             "sync": round((t1 - t0) * 1000, 2),
                             "prestore_wait": round((t_wait - t1) * 1000, 2),
                             "render": round((t2 - t_wait) * 1000, 2),
                             "verify": round((t3 - t2) * 1000, 2),
                             "edit": round((t4 - t3) * 1000, 2),
                             "stored": len(sess.stored - before), "verified": len(removed)}
    return done


def _finish(api: Api, conv: Conversation, top: dict[str, Any], values: list[Any],
            raws: list[str], text: str, span: tuple[int, int], edit: Edit,
            out: Outcome) -> Outcome:
    if edit.texts == raws:
        return out  # the view is the request: forward the original bytes
    why = api.check(values, raws, edit)
    if why is not None:
        out.why = f"invalid edit: {why}"
        return out
    body = jsonspan.splice(text, [(span, "[" + ",".join(edit.texts) + "]")])
    out.body = body.encode("utf-8")
    out.info.update({"folded_steps": edit.folded_steps, "stubs": edit.stubs,
                     "notes": edit.notes})
    return out


def _verify(conv: Conversation, view: View, new: set[int]) -> str | None:
    """Each step this view removes for the first time reads back from the cold store
    (payload, projection and artifact SHA-256 re-checked by ``read_node``) with the sha256 the
    renderer recorded for it, whoever stored it (this render, or a pre-store)."""
    if not new:
        return None
    from contextfork.cold.keyed import latest_version
    from contextfork.cold.store import read_node
    from contextfork.errors import ContextforkError

    layout = conv.session.layout()
    for step in sorted(new):
        want = view.step_sha256.get(step)
        try:
            node = read_node(layout, conv.session.cold_ids.get(step)
                             or latest_version(layout, step))
        except ContextforkError as err:
            return f"cold store: step {step} does not read back: {err.one_line()}"
        got = (node.get("source") or {}).get("step_sha256")
        if want is not None and got != want:
            return f"cold store: step {step} holds other bytes than the view removes"
    return None


def _count(api: Api, conv: Conversation, top: dict[str, Any], values: list[Any],
           raws: list[str], text: str, span: tuple[int, int], out: Outcome) -> Outcome:
    """``count_tokens``: the last view applied when the request is the history the
    conversation holds (or extends it); the conversation itself does not move."""
    sess = conv.session
    view = sess.last_view
    have = len(conv.raws)
    if view is None or have == 0 or len(values) < have:
        out.why = "count_tokens of a history the proxy has not rendered"
        return out
    for i in range(have):
        if raws[i] != conv.raws[i] and api.identity(values[i]) != api.identity(
                conv.live.messages[i]):
            out.why = "count_tokens of a history the proxy has not rendered"
            return out
    edit = api.edit(conv.live, values[:have], raws[:have], view, conv.memo)
    for i in range(have, len(raws)):
        edit.add(raws[i], values[i], i, False)
    return _finish(api, conv, top, values, raws, text, span, edit, out)


def fingerprint(*parts: str) -> str:
    return sha256_text("\n".join(parts))[:16]


_FIRST: dict[str, str] = {}


def first_identity(values: list[Any], raws: list[str], identity: Callable[[Any], str]) -> str:
    """The identity of a conversation's first message (part of its key), computed once per
    distinct first message text: every request of a conversation repeats it."""
    if not values:
        return ""
    got = _FIRST.get(raws[0])
    if got is None:
        got = identity(values[0])[:16]
        if len(_FIRST) >= 256:
            _FIRST.clear()
        _FIRST[raws[0]] = got
    return got


__all__ = ["Api", "Outcome", "adapt", "fingerprint"]
