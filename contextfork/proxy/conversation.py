"""One conversation's live history behind the proxy, and the registry that keeps them apart.

Each conversation is a ``harness.pi.live.LiveSession`` (the renderer pi uses: dedupe stubs,
notes, the k-boundary, epoch commits, the agent's curation decisions) fed with the request's
messages as they grow. A request is matched against what the conversation holds message by
message: the same bytes, or the same identity (``message_identity``: Claude Code moves its
``cache_control`` breakpoints every call). A request that only appends is taken as is; one that
differs only in the parts not yet in a finished step (a retry with another prompt, a side
request riding on the same history) drops that tail; one that changes a finished step is
another history (a rewind, a compaction): the session starts over on it.

Keys: Claude Code's ``X-Claude-Code-Session-Id`` (or the ``session_id`` in ``metadata.user_id``)
with its ``X-Claude-Code-Agent-Id`` (a subagent is a conversation of its own, often in
parallel), Codex's ``prompt_cache_key``; always with the identity of the first message, so a
side request of the same session (a title, a summary) never lands in the main history.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork.errors import ContextforkError
from contextfork.harness.pi.live import LiveSession, live_policy
from contextfork.hashing import sha256_text
from contextfork.proxy.steps import Memo, PartSteps
from contextfork.render.engine import View
from contextfork.render.policies import Policy
from contextfork.render.window import DEFAULT_WINDOW, model_window
from contextfork.telemetry.models import ProxyBand
from contextfork.transcript.model import Session

MAX_CONVERSATIONS = 64
# Finished steps are stored this many at a time after a request has gone out (off its path): a
# later epoch commit then finds its originals already stored and only verifies them. Each
# store call rewrites the store's IPCF view (O(store)), hence batches.
PRESTORE_BATCH = 3
SAFE_ID = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_"


def env_int(name: str, default: int | None) -> int | None:
    raw = os.environ.get(name, "").strip()
    try:
        return int(raw) if raw else default
    except ValueError:
        return default


def proxy_policy(model: str | None, root: Path | None = None) -> Policy:
    """The band the proxy keeps: the ``live`` policy (``render.policies``: epoch with a budget
    of ``LIVE_BUDGET_SHARE`` x the window) on min(the model's window, the window cap = 200k): a
    prompt that grows to 800k tokens costs the user even where it fits. The repository's
    policy file (``proxy``: budget_tokens, budget_share, window_cap) sets it; the environment
    (``CONTEXTFORK_PROXY_BUDGET``, ``CONTEXTFORK_PROXY_WINDOW_CAP``) beats the file.
    ``CONTEXTFORK_PROXY_POLICY=epoch|refold`` picks another."""
    from contextfork.render.policies import LIVE_BUDGET_SHARE, policy

    band = band_of(root)
    name = os.environ.get("CONTEXTFORK_PROXY_POLICY", "live")
    cap = env_int("CONTEXTFORK_PROXY_WINDOW_CAP", band.window_cap) or DEFAULT_WINDOW
    window = min(model_window(model) or DEFAULT_WINDOW, cap)
    share = band.budget_share or LIVE_BUDGET_SHARE
    budget = env_int("CONTEXTFORK_PROXY_BUDGET", band.budget_tokens) or int(share * window)
    k = env_int("CONTEXTFORK_PROXY_K", 3) or 3
    adaptive = os.environ.get("CONTEXTFORK_PROXY_ADAPTIVE", "1") != "0"
    if name in ("epoch", "refold"):
        return live_policy(name, window, budget, k, adaptive)
    # no reminder: its wording (`restore N` as a shell command) is mini-swe-agent's
    return policy("live", k=k, budget_tokens=budget, adaptive=adaptive)


def band_of(root: Path | None) -> ProxyBand:
    """The policy file's band; none (the defaults) when there is no file or it is invalid
    (the proxy must not stop forwarding over it: ``status`` and ``policy show`` name the
    bad field)."""
    from contextfork.layout import policy_file
    from contextfork.telemetry.models import load_policy_file

    if root is None or not policy_file(root).is_file():
        return ProxyBand()
    try:
        return load_policy_file(policy_file(root)).proxy or ProxyBand()
    except ContextforkError:
        return ProxyBand()


def safe_id(text: str) -> str:
    """A session id the cold store accepts (a hostile header becomes a hash)."""
    from contextfork.errors import UsageError
    from contextfork.sessionids import check_session_id

    if text and len(text) <= 100 and all(c in SAFE_ID for c in text):
        try:
            return check_session_id(text)
        except UsageError:
            pass
    return "proxy-" + sha256_text(text)[:16]


@dataclass
class Stats:
    """What one conversation's requests really were (``status`` shows the sum)."""

    requests: int = 0
    edited: int = 0
    passed: dict[str, int] = field(default_factory=dict)
    bytes_in: int = 0  # messages as the client sent them
    bytes_out: int = 0  # messages as forwarded
    largest_out: int = 0
    folds: int = 0
    epochs: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    last_usage: dict[str, int] = field(default_factory=dict)
    last_bytes: tuple[int, int] = (0, 0)  # the last request: as the client sent it, as sent
    ms: list[float] = field(default_factory=list)
    written: float = 0.0  # when the figures were last saved
    budget_tokens: int | None = None  # the policy's epoch budget (estimated message tokens)

    def pass_through(self, why: str) -> None:
        reason = why.split(":", 1)[0][:80]
        self.passed[reason] = self.passed.get(reason, 0) + 1

    def add_usage(self, usage: Mapping[str, int]) -> None:
        self.last_usage = dict(usage)
        for k, v in usage.items():
            self.usage[k] = self.usage.get(k, 0) + v

    def to_json(self) -> dict[str, Any]:
        ms = sorted(self.ms[-500:])
        return {"requests": self.requests, "edited": self.edited, "passed": self.passed,
                "bytes_in": self.bytes_in, "bytes_out": self.bytes_out,
                "largest_out": self.largest_out, "folds": self.folds, "epochs": self.epochs,
                "usage": self.usage, "last_usage": self.last_usage,
                "last_bytes": list(self.last_bytes), "updated": time.time(),
                "budget_tokens": self.budget_tokens,
                "overhead_ms_median": ms[len(ms) // 2] if ms else None}


class Conversation:
    """One history, its renderer and what the client sent last."""

    def __init__(self, key: str, session_id: str, root: Path | None, pol: Policy,
                 steps: Callable[[], PartSteps]) -> None:
        self.key = key
        self.stats = Stats()
        self.session = LiveSession(session_id, pol, root, steps=steps)
        self.stats.budget_tokens = pol.budget_tokens if pol.budget_share is None else None
        self.raws: list[str] = []
        self.ids: list[str | None] = []
        # (texts, values) of the last request, swapped whole: a parse in another thread reads it
        self.held: tuple[list[str], list[Any]] = ([], [])
        self.memo = Memo()
        self.lock = threading.Lock()
        self.used = time.monotonic()
        self.storing = threading.Lock()  # one pre-store at a time
        self.prestored: list[tuple[PartSteps | Any, set[int], dict[int, int]]] = []
        self.verified: set[int] = set()  # removed steps read back from the store
        self.decisions_seen: tuple[int, int] | None = None  # curation.json (mtime, size)

    def sync(self, values: list[Any], raws: list[str],
             identity: Callable[[Any], str]) -> str:
        """Take this request's messages; says how (append | tail | reset)."""
        live = self.live
        have = len(self.raws)
        same = 0
        for i in range(min(have, len(raws))):
            if raws[i] != self.raws[i]:
                known = self.ids[i]
                if known is None:
                    known = self.ids[i] = identity(live.messages[i])
                if identity(values[i]) != known:
                    break
            same += 1
        how = "append"
        if same < have:
            if same >= live.finished_end():
                self._drop_tail(same)
                how = "tail"
            else:
                self.session.reset()
                self.raws, self.ids, same = [], [], 0
                self.verified = set()
                how = "reset"
        self.live.extend(values[same:])
        self.ids = self.ids[:same] + [None] * (len(raws) - same)
        self.raws = list(raws)
        self.held = (self.raws, list(values))
        return how

    def refresh_decisions(self) -> None:
        """(Under the conversation's lock.) The agent's curation decisions (pins, expands,
        briefs, a boundary: ``contextfork.curate``, written by the MCP tool or the CLI in
        another process) applied live: re-read when their file changed (one ``stat``)."""
        sess = self.session
        if sess.root is None:
            return
        from contextfork.cold.decisions import decisions_path

        try:
            st = os.stat(decisions_path(sess.root, sess.store_session()))
            seen: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except (OSError, ValueError, ContextforkError):
            seen = None
        if seen == self.decisions_seen:
            return
        self.decisions_seen = seen
        from contextfork.harness.pi import verbs as pi_verbs

        pi_verbs.load(sess)  # a broken file: the store error fails the request open

    @property
    def live(self) -> PartSteps:
        live = self.session.live
        assert isinstance(live, PartSteps)
        return live

    def _drop_tail(self, keep: int) -> None:
        """Forget held messages from ``keep`` on (all of them pending leads, no step yet)."""
        live = self.live
        live.pending = [(b, f) for b, f in live.pending if live.at[f][0] < keep]
        del live.messages[keep:]
        del live.fps[keep:]
        self.ids = self.ids[:keep]
        self.raws = self.raws[:keep]
        self.session.last_view = None  # the open step changed: advance again at the same t

    def view(self) -> View:
        return self.session.view()

    def prestore(self, batch: int = PRESTORE_BATCH) -> int:
        """Store finished steps ahead of need, off the request's path (see ``PRESTORE_BATCH``);
        how many were stored. The snapshot is taken under the conversation's lock (steps that
        no longer change), the write runs without it (the cold store has its own lock; a step
        written twice is written once), and the result waits in ``prestored`` for the next
        render to take (``take_prestored``)."""
        sess = self.session
        if sess.root is None:
            return 0
        with self.lock:
            live = sess.live
            done = len(live.steps) - 1  # the last step may still gain results
            todo = [s for s in range(1, done + 1) if s not in sess.stored]
            if len(todo) < batch or sess.store_error:
                return 0
            snapshot = Session.model_construct(
                format="pi", session_id=sess.session_id, steps=list(live.steps[:done]),
                model=None)
            layout = sess.layout()
        if not self.storing.acquire(blocking=False):
            return 0
        try:
            from contextfork.errors import ContextforkError
            from contextfork.render.coldsource import persist_steps

            known: set[int] = set()
            try:
                # the IPCF view is left stale here: rewriting it is O(store) per call
                report = persist_steps(layout, snapshot, todo, known=known, view=False)
            except ContextforkError:
                return 0  # the render's own store will try (and fail open) if it must
            self.prestored.append((live, known, report.ids))
            return len(known)
        finally:
            self.storing.release()

    def take_prestored(self) -> None:
        """(Under the conversation's lock.) Count what finished pre-stores wrote for this
        history as stored. One still in flight is not waited for: a view that removes one of
        its steps stores it itself (the cold store's lock makes that wait, and only then)."""
        sess = self.session
        while self.prestored:
            live, known, ids = self.prestored.pop(0)
            if live is sess.live:  # not a history reset meanwhile
                sess.stored |= known
                sess.cold_ids.update(ids)


class Registry:
    """Conversations by key, least recently used dropped past ``MAX_CONVERSATIONS``."""

    def __init__(self) -> None:
        self.items: OrderedDict[str, Conversation] = OrderedDict()
        self.lock = threading.Lock()
        self.mains: dict[str, str] = {}  # session -> key of its main conversation

    def get(self, key: str, make: Callable[[], Conversation]) -> Conversation:
        with self.lock:
            conv = self.items.get(key)
            if conv is None:
                conv = make()
                self.items[key] = conv
                while len(self.items) > MAX_CONVERSATIONS:
                    self.items.popitem(last=False)
            self.items.move_to_end(key)
            conv.used = time.monotonic()
            return conv

    def snapshot(self) -> list[Conversation]:
        with self.lock:
            return list(self.items.values())

    def known(self, most: int = 8) -> list[tuple[list[str], list[Any]]]:
        """The last arrays of the most recent conversations: a request that repeats one is
        decoded only where it differs (``jsonspan.document``)."""
        with self.lock:
            convs = list(self.items.values())[-most:]
        return [c.held for c in reversed(convs) if c.held[0]]

    def totals(self) -> dict[str, Any]:
        with self.lock:
            convs = list(self.items.values())
        return {c.key: {"session": c.session.session_id, **c.stats.to_json()} for c in convs}


def claude_session(headers: Mapping[str, str], body: Mapping[str, Any]) -> str | None:
    """Claude Code's session id: the header, else ``metadata.user_id`` (a JSON string)."""
    sid = headers.get("x-claude-code-session-id")
    if sid:
        return sid
    meta = body.get("metadata")
    raw = meta.get("user_id") if isinstance(meta, dict) else None
    if isinstance(raw, str) and raw.startswith("{"):
        try:
            obj = json.loads(raw)
        except ValueError:
            return None
        sid = obj.get("session_id") if isinstance(obj, dict) else None
        return sid if isinstance(sid, str) and sid else None
    return None


__all__ = ["Conversation", "Registry", "Stats", "claude_session", "env_int", "proxy_policy",
           "safe_id"]
