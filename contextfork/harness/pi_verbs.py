"""The curation verbs of pi's ``contextfork_context`` tool, as the worker answers them.

``status`` and ``peek`` are about the view pi is being sent right now, so the worker answers
them from its live renderer: the fold index (ids ``F<n>`` as printed in the notes) and verified
slices of the originals in the cold store (``contextfork.render.restore.answer``: payload,
projection and artifact SHA-256 re-checked on read, then the step's sha256 recorded at render
time). The decisions (``pin``/``unpin``, ``brief``, ``expand``/``refold``, ``reboundary``,
``unmark``) are durable state of the curation API (``contextfork.curate``), which this module
only forwards to and reads back; when that API is not installed, ``pin``/``unpin`` still hold
for the life of the worker and say so.
"""

from __future__ import annotations

import re
from typing import Any

from contextfork.errors import ContextforkError
from contextfork.harness.pi_live import LiveSession

_SPAN = re.compile(r"^\s*#?(\d{1,7})\s*(?:-\s*#?(\d{1,7}))?\s*$")


def _steps_of(sess: LiveSession, target: str) -> list[int]:
    """``12``, ``10-12`` or a fold id ``F3`` → step numbers."""
    view = sess.last_view
    if target.startswith("F") and view is not None and target in view.folds:
        return list(view.folds[target])
    m = _SPAN.match(target)
    if not m:
        raise ValueError(f"target {target!r} is not a step, a span N-M or a fold id F<n>")
    lo = int(m.group(1))
    hi = int(m.group(2) or lo)
    return list(range(min(lo, hi), max(lo, hi) + 1))


def status_text(sess: LiveSession) -> str:
    view = sess.last_view
    if view is None:
        return "contextfork: nothing rendered yet in this session"
    lines = [f"contextfork status · call {view.t} · boundary {view.boundary} · "
             f"epochs {view.epochs} · {len(view.folds)} fold(s)"]
    sizes: dict[int, int] = {r.step: r.nbytes for r in view.removals if r.kind == "fold"}
    for fid, steps in view.folds.items():
        span = f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]}-{steps[-1]}"
        nbytes = sum(sizes.get(s, 0) for s in steps)
        lines.append(f"  {fid}: {span} ({nbytes} bytes in the cold store)")
    if sess.pinned:
        lines.append("  pinned (held raw): " + ", ".join(str(s) for s in sorted(sess.pinned)))
    lines.append("peek with {verb: 'peek', target: 'F<n>' or a step, offset, bytes}")
    return "\n".join(lines)


def live_verb(sess: LiveSession, verb: str, args: dict[str, Any]) -> dict[str, Any]:
    if verb == "status":
        return {"ok": True, "text": status_text(sess)}
    from contextfork.render.coldsource import ColdSource
    from contextfork.render.restore import PEEK_DEFAULT_BYTES, Request, answer

    view = sess.last_view
    target = str(args.get("target") or "").strip()
    if not target:
        return {"ok": False, "error": "peek needs a target: a fold id F<n> or a step number"}
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


def _run_verb() -> Any:
    try:
        from contextfork.curate.api import run_verb  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        return None
    return run_verb


def forward(sess: LiveSession, verb: str, args: dict[str, Any]) -> dict[str, Any]:
    """A decision verb: to the curation API when installed, else pins held in memory."""
    run_verb = _run_verb()
    if run_verb is not None and sess.root is not None:
        try:
            result = run_verb(sess.root, sess.session_id, verb, args)
        except ContextforkError as err:
            return {"ok": False, "error": err.one_line()}
        text = getattr(result, "text", None) or str(getattr(result, "data", ""))
        return {"ok": True, "text": text}
    if verb in ("pin", "unpin"):
        try:
            steps = _steps_of(sess, str(args.get("target") or ""))
        except ValueError as err:
            return {"ok": False, "error": str(err)}
        if verb == "pin":
            sess.pinned.update(steps)
        else:
            sess.pinned.difference_update(steps)
        return {"ok": True, "text": f"{verb}ned steps {steps[0]}-{steps[-1]} for this session "
                                    "(not durable: the curation API is not installed)"}
    return {"ok": False, "error": f"{verb} needs contextfork's curation API (contextfork.curate)"}


def load_pins(sess: LiveSession) -> None:
    """Pins from the durable decisions, when the curation API is installed."""
    try:
        from contextfork.curate.state import load_decisions  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        return
    if sess.root is None:
        return
    try:
        decisions = load_decisions(sess.root, sess.session_id)
    except ContextforkError:
        return
    pins = _pins_in(decisions)
    if pins is not None:
        sess.pinned.clear()
        sess.pinned.update(pins)


def _pins_in(decisions: Any) -> set[int] | None:
    """Pinned step numbers from a decisions object, whatever its exact container."""
    raw = getattr(decisions, "pins", None)
    if raw is None and isinstance(decisions, dict):
        raw = decisions.get("pins")
    if raw is None:
        return None
    out: set[int] = set()
    for item in raw if isinstance(raw, list | set | tuple) else []:
        if isinstance(item, int):
            out.add(item)
        elif isinstance(item, str) and _SPAN.match(item):
            m = _SPAN.match(item)
            assert m is not None
            lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
            out.update(range(lo, hi + 1))
    return out


__all__ = ["forward", "live_verb", "load_pins", "status_text"]
