"""``contextfork pi-worker``: the long-lived process pi's contextfork extension talks to.

One worker per pi session, started by the extension (``hooks/pi/contextfork.ts``) and fed JSON
lines on stdin; it answers one JSON line per request on stdout, in order. Imports happen once,
so a request costs the render, not a Python start-up. Requests (``id`` is echoed back):

- ``{"op": "render", "session", "cwd", "base", "prev_fp", "messages", "context_window"}``:
  ``messages`` are pi's messages from index ``base`` on (the worker keeps the rest; ``prev_fp``
  is the fingerprint of message ``base-1``). Answer ``{"plan": [...] | null, "stats", "why"?}``
  (see ``pi_messages``; null: send pi's messages untouched) or ``{"ok": false, "need": "full"}``
  when the worker holds a different history: the extension then re-sends the whole array.
- ``{"op": "verb", "session", "cwd", "verb", "args"}``: a curation verb of the
  ``contextfork_context`` tool (``pi_verbs``): ``contextfork.curate.api.run_verb`` over the
  session's ``-render`` store, the decisions re-applied live; ``peek`` of a fold id from a
  note and the head of ``status`` come from the live view.
- ``{"op": "compact", "session", "trigger"}``: pi is about to compact. ``threshold``: the next
  render commits an epoch (the extension cancels pi's compaction); ``manual``: nothing here.
- ``{"op": "ping"}``.

Failures are answers, never crashes: ``{"ok": false, "error": "..."}``; the extension passes
pi's messages through untouched whenever it gets anything but a valid plan in time.
Knobs (environment): ``CONTEXTFORK_PI_POLICY`` (epoch | refold, default epoch),
``CONTEXTFORK_PI_K`` (3), ``CONTEXTFORK_PI_BUDGET`` (epoch budget in estimated tokens; default
0.2 x the model's window), ``CONTEXTFORK_PI_ADAPTIVE`` (1; 0 drops the warm-up gates).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from contextfork.harness.pi_live import LiveSession, live_policy


def _env_int(name: str, default: int | None) -> int | None:
    raw = os.environ.get(name, "").strip()
    try:
        return int(raw) if raw else default
    except ValueError:
        return default


class Worker:
    """The worker's state: one ``LiveSession`` per pi session id."""

    def __init__(self) -> None:
        self.sessions: dict[str, LiveSession] = {}

    def session(self, req: dict[str, Any]) -> LiveSession:
        sid = str(req.get("session") or "pi-session")
        sess = self.sessions.get(sid)
        if sess is None:
            from contextfork.layout import find_repo

            name = os.environ.get("CONTEXTFORK_PI_POLICY", "epoch")
            window = req.get("context_window")
            pol = live_policy(
                name if name in ("epoch", "refold") else "epoch",
                window if isinstance(window, int) and window > 0 else None,
                _env_int("CONTEXTFORK_PI_BUDGET", None),
                _env_int("CONTEXTFORK_PI_K", 3) or 3,
                os.environ.get("CONTEXTFORK_PI_ADAPTIVE", "1") != "0",
            )
            cwd = req.get("cwd")
            root = find_repo(Path(cwd)) if isinstance(cwd, str) and cwd else None
            sess = LiveSession(_safe_session(sid), pol, root)
            self.sessions[sid] = sess
            self._load_decisions(sess)
        return sess

    def stage(self) -> int:
        """One idle slice of folding ahead (newest session first); 0 when nothing is left."""
        for sess in reversed(list(self.sessions.values())):
            done = sess.stage()
            if done:
                return done
        return 0

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get("op")
        if op == "ping":
            return {"ok": True}
        if op == "render":
            sess = self.session(req)
            messages = req.get("messages")
            if not isinstance(messages, list):
                return {"ok": False, "error": "render needs a messages array"}
            base = req.get("base", 0)
            if not sess.sync(base if isinstance(base, int) else 0, req.get("prev_fp"), messages):
                return {"ok": False, "need": "full"}
            return {"ok": True, **sess.render()}
        if op == "verb":
            sess = self.session(req)
            args = req.get("args")
            return self.verb(sess, str(req.get("verb") or ""), args if isinstance(args, dict)
                             else {})
        if op == "compact":
            sess = self.session(req)
            if req.get("trigger") == "threshold":
                sess.commit_now()
                return {"ok": True, "action": "epoch"}
            return {"ok": True, "action": "pass"}
        return {"ok": False, "error": f"unknown op {op!r}"}

    # -- curation verbs -------------------------------------------------------------------
    def verb(self, sess: LiveSession, verb: str, args: dict[str, Any]) -> dict[str, Any]:
        from contextfork.harness import pi_verbs

        return pi_verbs.run(sess, verb, args)  # an unknown verb: run_verb's one-line refusal

    def _load_decisions(self, sess: LiveSession) -> None:
        from contextfork.harness import pi_verbs

        pi_verbs.load(sess)


def _safe_session(sid: str) -> str:
    from contextfork.errors import UsageError
    from contextfork.sessionids import check_session_id

    try:
        return check_session_id(sid)
    except UsageError:
        from contextfork.hashing import sha256_text

        return "pi-" + sha256_text(sid)[:16]


def _pending(stream: TextIO) -> bool:
    """True when a request is waiting on ``stream`` (or when that cannot be told)."""
    import select

    try:
        ready, _, _ = select.select([stream], [], [], 0)
    except (OSError, ValueError, TypeError):
        return True
    return bool(ready)


def serve(stdin: TextIO, stdout: TextIO) -> int:
    worker = Worker()
    for line in stdin:
        if not line.strip():
            continue
        started = time.perf_counter()
        rid: Any = None
        try:
            req = json.loads(line)
            if isinstance(req, dict):
                rid = req.get("id")
                out = worker.handle(req)
            else:
                out = {"ok": False, "error": "request is not a JSON object"}
        except Exception as err:  # noqa: BLE001 - one bad request must not end the session
            out = {"ok": False, "error": f"{type(err).__name__}: {err}"}
            if os.environ.get("CONTEXTFORK_DEBUG"):
                import traceback

                traceback.print_exc(file=sys.stderr)
        out["id"] = rid
        out["ms"] = round((time.perf_counter() - started) * 1000, 2)
        stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        stdout.flush()
        # Idle until the next call: fold ahead of need, a few steps at a time.
        while not _pending(stdin) and worker.stage():
            pass
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point (``contextfork pi-worker``: started once per pi session, so Typer's start-up
    is paid once, not per request)."""
    del argv
    try:
        return serve(sys.stdin, sys.stdout)
    except (BrokenPipeError, KeyboardInterrupt):
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
