"""The curation verbs of pi's ``contextfork_context`` tool, as the worker answers them.

The verbs are the curation API's (``contextfork.curate.api.run_verb``) over this pi session's
``<session>-render`` cold store: before a verb runs, every finished step is stored there (the
verbs name steps by their stored ids, ``step``/``steps``/``key``), and after a decision the
worker re-reads the decisions and the live renderer applies them (a newly pinned step that was
folded comes back raw: a rewrite the agent asked for).

Two answers come from the live view itself, because they are about what pi is sending now:
``status`` leads with the fold index of the notes (``F<n>`` → steps), and ``peek`` with a
``target`` (a fold id ``F<n>`` as printed in a note, or a step number) returns the verified
originals of that fold (``contextfork.render.restore.answer``: payload, projection and artifact
SHA-256 re-checked on read, then the step's sha256 recorded at render time).
"""

from __future__ import annotations

from typing import Any

from contextfork.errors import ContextforkError
from contextfork.harness.pi.live import LiveSession


def status_text(sess: LiveSession) -> str:
    view = sess.last_view
    if view is None:
        return "contextfork: nothing rendered yet in this session"
    lines = [f"contextfork status · call {view.t} · boundary {view.boundary} · "
             f"epochs {view.epochs} · {len(view.folds)} fold(s) in the view"]
    sizes: dict[int, int] = {r.step: r.nbytes for r in view.removals if r.kind == "fold"}
    for fid, steps in view.folds.items():
        span = f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]}-{steps[-1]}"
        nbytes = sum(sizes.get(s, 0) for s in steps)
        lines.append(f"  {fid}: {span} ({nbytes} bytes in the cold store)")
    lines.append("peek: {verb: 'peek', target: 'F<n>' or a step}; pin/expand/brief: "
                 "{step: N} or {steps: [first, last]}")
    return "\n".join(lines)


def live_peek(sess: LiveSession, args: dict[str, Any]) -> dict[str, Any]:
    from contextfork.render.coldsource import ColdSource
    from contextfork.render.restore import PEEK_DEFAULT_BYTES, Request, answer

    view = sess.last_view
    target = str(args.get("target") or "").strip()
    offset = args.get("offset", 0)
    nbytes = args.get("bytes", PEEK_DEFAULT_BYTES)
    req = Request("peek", target, offset if isinstance(offset, int) else 0,
                  nbytes if isinstance(nbytes, int) else PEEK_DEFAULT_BYTES)
    try:
        text = answer(req, ColdSource(sess.layout(), sess.cold_ids),
                      view.step_sha256 if view else {}, view.folds if view else {})
    except ContextforkError as err:
        return {"ok": False, "error": err.one_line()}
    return {"ok": True, "text": text}


def run(sess: LiveSession, verb: str, args: dict[str, Any]) -> dict[str, Any]:
    """One verb of the tool: live peek/status, else the curation API (then re-apply)."""
    from contextfork.curate.api import run_verb

    if verb == "peek" and "target" in args:
        return live_peek(sess, args)
    if sess.root is None:
        return {"ok": False, "error": f"{verb}: the curation verbs need a git repository"}
    try:
        sess.persist_finished()
        result = run_verb(sess.root, sess.store_session(), verb, args)
    except ContextforkError as err:
        if verb == "status":
            return {"ok": True, "text": status_text(sess)}
        return {"ok": False, "error": err.one_line()}
    if verb == "status":
        return {"ok": True, "text": f"{status_text(sess)}\n{result.text or ''}"}
    if verb != "peek" or (result.data or {}).get("recorded"):
        load(sess)  # a recorded peek is an expand: the live view takes it now
    return {"ok": True, "text": result.text or ""}


def load(sess: LiveSession) -> None:
    """The durable decisions of this session's store, into the live renderer."""
    from contextfork.cold.decisions import load_decisions

    if sess.root is None:
        return
    try:
        decisions = load_decisions(sess.root, sess.store_session())
    except ContextforkError as err:
        sess.store_error = f"decisions: {err.one_line()}"
        return
    sess.set_decisions(decisions)


__all__ = ["live_peek", "load", "run", "status_text"]
