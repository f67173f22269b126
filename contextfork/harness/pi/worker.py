"""``contextfork pi-worker``: the long-lived process pi's contextfork extension talks to.

One worker per pi session, started by the extension (``hooks/pi/contextfork.ts``) and fed JSON
lines on stdin; it answers one JSON line per request on stdout, in order. Imports happen once,
so a request costs the render, not a Python start-up. Requests (``id`` is echoed back):

- ``{"op": "render", "session", "cwd", "base", "prev_fp", "messages", "context_window"}``:
  ``messages`` are pi's messages from index ``base`` on (the worker keeps the rest; ``prev_fp``
  is the fingerprint of message ``base-1``). Answer ``{"plan": [...] | null, "stats", "why"?}``
  (see ``harness.pi.messages``; null: send pi's messages untouched) or ``{"ok": false, "need": "full"}``
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

Every line gets one answer, and every answer is one line of valid JSON (RFC 8259):
- a line that is not JSON is answered with an error, carrying its ``id`` when the line starts
  ``{"id": <integer>`` (the extension's own shape), else ``null``; ``NaN`` and ``Infinity`` are
  not JSON and are refused the same way, and an ``id`` that JSON cannot carry is echoed as
  ``null``;
- a lone surrogate (``"\ud83d"``, legal JSON: what a JavaScript string cut mid-emoji
  serialises to) is read as U+FFFD, the character any UTF-8 encoder (Node's included) writes
  for it, so what the worker stores and hashes is the UTF-8 that pi itself would send;
- bytes that are not UTF-8 are read as U+FFFD too;
- a request is worked on in a thread and answered by a deadline: ``render`` within 0.8 x the
  extension's timeout (``CONTEXTFORK_PI_TIMEOUT_MS``, 1000 ms by default, the same variable
  the extension reads; a render line over 1 MB at once), ``compact`` likewise, a verb within
  25 s. Past it the answer is a pass-through (``{"ok": true, "plan": null, "why": ...}``) and
  the request finishes in the background; a later request waits for it up to its own deadline, else is answered "busy"
  (for a render, a pass-through: the extension then re-sends the whole history). ``ping`` is
  always answered at once. Once folding has started, the extension answers a render it gets
  no plan for with the last plan it got, extended by the new messages: never an unfolded call.

Knobs (environment): ``CONTEXTFORK_PI_POLICY`` (epoch | refold, default epoch),
``CONTEXTFORK_PI_K`` (3), ``CONTEXTFORK_PI_BUDGET`` (epoch budget in estimated tokens; default
0.2 x the model's window), ``CONTEXTFORK_PI_ADAPTIVE`` (1; 0 drops the warm-up gates).
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from contextfork.harness.pi.live import LiveSession, live_policy
from contextfork.testhooks import pause_point


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
                window if isinstance(window, int) and not isinstance(window, bool) and window > 0
                else None,
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
            if sess.last_view is not None and sess.last_view.folds:
                pause_point("pi-render-folded")  # tests: a worker slowed once folding started
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
        from contextfork.harness.pi import verbs as pi_verbs

        return pi_verbs.run(sess, verb, args)  # an unknown verb: run_verb's one-line refusal

    def _load_decisions(self, sess: LiveSession) -> None:
        from contextfork.harness.pi import verbs as pi_verbs

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



_LEADING_ID = re.compile(r"\A\s*\{\s*\"id\"\s*:\s*(-?\d{1,15})\s*[,}]")
_SURROGATES = re.compile("[\ud800-\udfff]")
VERB_DEADLINE = 25.0  # seconds; the extension waits 30 s for a verb
# A render line longer than this is answered (pass-through) as soon as it is read: decoding it
# alone takes about the deadline, and a long C call (the JSON decoder, a regex over one 30 MB
# string) keeps the answering thread waiting for the interpreter lock until it returns.
HUGE_LINE = 1_000_000


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _scrub(obj: Any) -> Any:
    """``obj`` with every lone surrogate in its strings (keys too) read as U+FFFD."""
    if isinstance(obj, str):
        if obj.isascii():
            return obj
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError:
            return _SURROGATES.sub("\ufffd", obj)
        return obj
    if isinstance(obj, list):
        return [_scrub(v) for v in obj]
    if isinstance(obj, dict):
        return {_scrub(k): _scrub(v) for k, v in obj.items()}
    return obj


def _echo_id(rid: Any) -> Any:
    """The request's id if JSON can carry it back as it came, else None."""
    if rid is None or isinstance(rid, (str, bool, int)):
        return rid
    if isinstance(rid, float) and rid == rid and rid not in (float("inf"), float("-inf")):
        return rid
    return None


def _dump(out: dict[str, Any]) -> str:
    """One line of valid JSON: UTF-8 text when it can be, ASCII escapes when a string is not
    valid Unicode, and a plain error if the answer holds something JSON cannot say."""
    try:
        text = json.dumps(out, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as err:
        text = json.dumps({"ok": False, "error": f"answer is not JSON: {err}",
                           "id": _echo_id(out.get("id")), "ms": out.get("ms")}, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(json.loads(text), ensure_ascii=True, allow_nan=False)
    return text + "\n"


def _parse(line: str) -> tuple[Any, dict[str, Any] | None, dict[str, Any] | None]:
    """(id, request, error answer) for one line."""
    try:
        req = json.loads(line, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as err:
        m = _LEADING_ID.match(line)
        return (int(m.group(1)) if m else None), None, {
            "ok": False, "error": f"request is not valid JSON: {type(err).__name__}: {err}"}
    if not isinstance(req, dict):
        return None, None, {"ok": False, "error": "request is not a JSON object"}
    req = _scrub(req)
    return _echo_id(req.get("id")), req, None


class _Job:
    """One request line, parsed and worked on in its own thread."""

    def __init__(self, worker: Worker, line: str) -> None:
        self.started = time.perf_counter()
        self.op: Any = _leading(_LEADING_OP, line)
        self.rid: Any = _leading(_LEADING_ID, line)
        self.out: dict[str, Any] | None = None
        self.thread = threading.Thread(target=self._run, args=(worker, line), name="pi-request")
        self.thread.start()

    def _run(self, worker: Worker, line: str) -> None:
        try:
            self.rid, req, err = _parse(line)
            if req is not None:
                self.op = req.get("op")
            self.out = err if req is None else worker.handle(req)
        except Exception as err:  # noqa: BLE001 - one bad request must not end the session
            self.out = {"ok": False, "error": f"{type(err).__name__}: {err}"}
            if os.environ.get("CONTEXTFORK_DEBUG"):
                import traceback

                traceback.print_exc(file=sys.stderr)

    def wait(self, seconds: float | None) -> bool:
        """Whether the request is done after waiting up to ``seconds`` (None: until it is)."""
        self.thread.join(None if seconds is None else max(0.0, seconds))
        return not self.thread.is_alive()


_LEADING_OP = re.compile(r"\A\s*\{(?:\s*\"id\"\s*:\s*-?\d{1,15}\s*,)?\s*\"op\"\s*:\s*\"(\w{1,20})\"")


def _leading(pattern: re.Pattern[str], line: str) -> Any:
    """The id (an int) or op (a str) the line starts with, the extension's own shape; read
    without parsing the line (which may be 30 MB), for answers given before it is parsed."""
    m = pattern.match(line, 0, 256)
    if m is None:
        return None
    return int(m.group(1)) if pattern is _LEADING_ID else m.group(1)


def _deadline(op: Any) -> float:
    """Seconds a request may take before it is answered without its result."""
    if op == "verb":
        return VERB_DEADLINE
    raw = os.environ.get("CONTEXTFORK_PI_TIMEOUT_MS", "").strip()
    try:
        timeout_ms = float(raw) if raw else 1000.0
    except ValueError:
        timeout_ms = 1000.0
    if not timeout_ms > 0:
        timeout_ms = 1000.0
    return 0.8 * timeout_ms / 1000.0


def _late(job: _Job, limit: float) -> dict[str, Any]:
    why = f"{job.op or 'request'} took longer than {round(limit * 1000)} ms; it goes on in the background"
    if job.op == "render" or job.op is None:
        return {"ok": True, "plan": None, "why": why}  # pi's messages untouched: always safe
    return {"ok": False, "error": why}


def serve(stdin: TextIO, stdout: TextIO) -> int:
    worker = Worker()
    busy: _Job | None = None
    for line in stdin:
        if not line.strip():
            continue
        started = time.perf_counter()
        op, rid = _leading(_LEADING_OP, line), _leading(_LEADING_ID, line)
        out: dict[str, Any] | None = None
        if busy is not None and not busy.wait(0.0):
            if op == "ping":
                out = {"ok": True}
            elif not busy.wait(_deadline(op) - (time.perf_counter() - started)):
                ms = round((time.perf_counter() - busy.started) * 1000)
                out = {"ok": False, "error": f"busy: an earlier {busy.op or 'request'} has been "
                                             f"running for {ms} ms"}
        if out is None:
            busy = None
            job = _Job(worker, line)
            limit = _deadline(op)
            if op in ("render", None) and len(line) > HUGE_LINE:
                limit = 0.0  # parsing alone would take the deadline: answer now, work behind
            if job.wait(limit - (time.perf_counter() - started)):
                assert job.out is not None
                rid, out = job.rid, job.out
            else:
                out, busy = _late(job, limit), job
        out["id"] = rid
        out["ms"] = round((time.perf_counter() - started) * 1000, 2)
        stdout.write(_dump(out))
        stdout.flush()
        # Idle until the next call: fold ahead of need, a few steps at a time (never while a
        # late request still works on the worker in the background).
        while busy is None and not _pending(stdin) and worker.stage():
            pass
    if busy is not None:
        busy.wait(None)  # a store under way finishes before the worker exits
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point (``contextfork pi-worker``: started once per pi session, so Typer's start-up
    is paid once, not per request)."""
    del argv
    # UTF-8 both ways whatever the locale; bytes that are not UTF-8 read as U+FFFD (one bad
    # byte must not end the session); only "\n" ends a request.
    if isinstance(sys.stdin, io.TextIOWrapper):
        sys.stdin.reconfigure(encoding="utf-8", errors="replace", newline="\n")
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(encoding="utf-8", errors="strict", newline="\n")
    try:
        return serve(sys.stdin, sys.stdout)
    except (BrokenPipeError, KeyboardInterrupt):
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
