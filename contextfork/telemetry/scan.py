"""A lean, resumable usage scanner for Claude Code JSONL — stdlib only.

Used by the statusline (every assistant message, so no pydantic and no tokenizer) and for the
billing totals. The state is plain JSON so the statusline can cache it and, next time, read only
the bytes appended since. Billing follows ccusage 20.0.24 exactly (checked in tests/bench):
entries are keyed by ``message.id`` + ``requestId`` (no dedupe without a message id); within a
key the non-sidechain copy wins, then the one with the most tokens, then the first seen.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextfork.forkstub import STUB_PREFIX_BYTES as FOLD_STUB

STATE_VERSION = 3


class TimeSpan:
    """The first and last ``timestamp`` a reader saw (ISO-8601 strings compare as times)."""

    first_ts: str | None
    last_ts: str | None

    def saw(self, ts: str) -> None:
        if self.first_ts is None or ts < self.first_ts:
            self.first_ts = ts
        if self.last_ts is None or ts > self.last_ts:
            self.last_ts = ts


class ScanState(TimeSpan):
    """Where the scan stopped and what it found (plain JSON; a plain class, not a dataclass:
    importing ``dataclasses`` pulls in ``inspect`` and costs the statusline ~20 ms)."""

    def __init__(
        self,
        offset: int = 0,  # bytes consumed: complete lines only
        lines: int = 0,
        malformed: int = 0,
        # key -> [non_sidechain, total, input, output, cache_creation, cache_read]
        billing: dict[str, list[int]] | None = None,
        unkeyed: list[int] | None = None,  # n, in, out, cc, cr
        active_tokens: int | None = None,  # last main-chain call's context since the compaction
        active_output: int | None = None,
        message_ids: list[str] | None = None,  # main-chain model calls (steps)
        # A fork's copied lines (``forkedFrom``): their calls belong to the original session.
        inherited_ids: list[str] | None = None,
        inherited_tokens: int | None = None,  # the original's last recorded context, as copied
        forked_from: str | None = None,
        folded: bool = False,  # the copied lines hold ``contextfork fork`` stubs
        compactions: int = 0,
        model: str | None = None,
        session_id: str | None = None,
        cwd: str | None = None,
        first_ts: str | None = None,
        last_ts: str | None = None,
        version: int = STATE_VERSION,
    ) -> None:
        self.offset = offset
        self.lines = lines
        self.malformed = malformed
        self.billing: dict[str, list[int]] = {} if billing is None else billing
        self.unkeyed: list[int] = [0, 0, 0, 0, 0] if unkeyed is None else unkeyed
        self.active_tokens = active_tokens
        self.active_output = active_output
        self.message_ids: list[str] = [] if message_ids is None else message_ids
        self.inherited_ids: list[str] = [] if inherited_ids is None else inherited_ids
        self.inherited_tokens = inherited_tokens
        self.forked_from = forked_from
        self.folded = folded
        self.compactions = compactions
        self.model = model
        self.session_id = session_id
        self.cwd = cwd
        self.first_ts = first_ts
        self.last_ts = last_ts
        self.version = version

    def to_json(self) -> dict[str, Any]:
        return {k: _copy(getattr(self, k)) for k in _FIELD_ORDER}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScanState:
        """A state read back from a cache file: every field is type-checked, never trusted."""
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            raise ValueError("stale scan state")
        if set(data) != _FIELDS:
            raise ValueError("scan state has unexpected fields")
        if data["folded"] is not True and data["folded"] is not False:
            raise ValueError("scan state: bad folded")
        for key in ("offset", "lines", "malformed", "compactions"):
            if not _nonneg(data[key]):
                raise ValueError(f"scan state: bad {key}")
        for key in ("active_tokens", "active_output", "inherited_tokens"):
            if data[key] is not None and not _nonneg(data[key]):
                raise ValueError(f"scan state: bad {key}")
        for key in ("model", "session_id", "cwd", "first_ts", "last_ts", "forked_from"):
            if data[key] is not None and not isinstance(data[key], str):
                raise ValueError(f"scan state: bad {key}")
        billing, unkeyed = data["billing"], data["unkeyed"]
        ids = [*data["message_ids"], *data["inherited_ids"]] if isinstance(
            data["message_ids"], list) and isinstance(data["inherited_ids"], list) else None
        if not (
            isinstance(billing, dict)
            and all(_ints(v, 6) for v in billing.values())
            and _ints(unkeyed, 5)
            and ids is not None
            and all(isinstance(i, str) for i in ids)
        ):
            raise ValueError("scan state: bad billing, unkeyed or message_ids")
        return cls(**data)


def _nonneg(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _ints(v: Any, n: int) -> bool:
    return isinstance(v, list) and len(v) == n and all(_nonneg(x) for x in v)


_FIELD_ORDER = tuple(ScanState.__init__.__code__.co_varnames[1 : ScanState.__init__.__code__.co_argcount])
_FIELDS = set(_FIELD_ORDER)


def _copy(v: Any) -> Any:
    """Deep-enough copy of a JSON value (what ``dataclasses.asdict`` did)."""
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


def _int(d: dict[str, Any], key: str) -> int:
    v = d.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _feed(state: ScanState, seen_ids: set[str], obj: dict[str, Any]) -> None:  # noqa: C901 - complexity 19, over the cap when it came (issue 27)
    ts = obj.get("timestamp")
    if isinstance(ts, str):
        if state.first_ts is None or ts < state.first_ts:
            state.first_ts = ts
        if state.last_ts is None or ts > state.last_ts:
            state.last_ts = ts
    if state.session_id is None and isinstance(obj.get("sessionId"), str):
        state.session_id = obj["sessionId"]
    if isinstance(obj.get("cwd"), str):
        state.cwd = obj["cwd"]
    kind = obj.get("type")
    sidechain = bool(obj.get("isSidechain"))
    if kind == "system" and obj.get("subtype") == "compact_boundary" and not sidechain:
        state.compactions += 1
        state.active_tokens = None
        state.active_output = None
        state.inherited_tokens = None
        return
    msg = obj.get("message")
    if not isinstance(msg, dict):
        return
    usage = msg.get("usage")
    if not isinstance(usage, dict):
        return
    vals = [
        _int(usage, "input_tokens"),
        _int(usage, "output_tokens"),
        _int(usage, "cache_creation_input_tokens"),
        _int(usage, "cache_read_input_tokens"),
    ]
    total = sum(vals)
    mid = msg.get("id")
    if isinstance(mid, str) and mid:
        rid = obj.get("requestId")
        key = f"{mid}:{rid if isinstance(rid, str) else ''}"
        entry = [0 if sidechain else 1, total, *vals]
        old = state.billing.get(key)
        if old is None or (entry[0], entry[1]) > (old[0], old[1]):
            state.billing[key] = entry
    else:
        state.unkeyed[0] += 1
        for i, v in enumerate(vals, start=1):
            state.unkeyed[i] += v
    if kind != "assistant" or sidechain:
        return
    model = msg.get("model")
    context = vals[0] + vals[2] + vals[3]
    if model == "<synthetic>" or context == 0:
        return
    origin = obj.get("forkedFrom")
    if isinstance(origin, dict):  # copied by a fork: recorded for the original session
        if isinstance(origin.get("sessionId"), str):
            state.forked_from = origin["sessionId"]
        state.inherited_tokens = context
        if isinstance(mid, str) and mid not in seen_ids:
            seen_ids.add(mid)
            state.inherited_ids.append(mid)
        return
    if isinstance(model, str):
        state.model = model
    state.active_tokens = context
    state.active_output = vals[1]
    if isinstance(mid, str) and mid not in seen_ids:
        seen_ids.add(mid)
        state.message_ids.append(mid)


def scan(path: Path, state: ScanState | None = None) -> ScanState:
    """Read ``path`` from ``state.offset`` on; a partial last line is left for next time."""
    state = state or ScanState()
    seen_ids = set(state.message_ids) | set(state.inherited_ids)
    with open(path, "rb") as fh:
        fh.seek(state.offset)
        for raw in fh:
            if not raw.endswith(b"\n"):
                break  # still being written
            state.offset += len(raw)
            state.lines += 1
            if not state.folded and FOLD_STUB in raw and b'"forkedFrom"' in raw:
                state.folded = True
            feed_line(state, seen_ids, raw)
    return state


_UNPARSED: Any = object()


def feed_line(state: ScanState, seen_ids: set[str], raw: bytes, obj: Any = _UNPARSED) -> None:
    """One complete line as ``scan`` reads it (``obj``: its parse, when the caller has one)."""
    # Only lines that can carry usage or a compaction need parsing.
    if b'"usage"' not in raw and b"compact_boundary" not in raw:
        return
    if obj is _UNPARSED:
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            state.malformed += 1
            return
    if isinstance(obj, dict):
        _feed(state, seen_ids, obj)
    else:
        state.malformed += 1


def merge_billing(states: list[ScanState]) -> dict[str, int]:
    """ccusage-style totals over several files of one session (dedupe is global)."""
    merged: dict[str, list[int]] = {}
    unkeyed = [0, 0, 0, 0, 0]
    for st in states:
        for key, entry in st.billing.items():
            old = merged.get(key)
            if old is None or (entry[0], entry[1]) > (old[0], old[1]):
                merged[key] = entry
        unkeyed = [a + b for a, b in zip(unkeyed, st.unkeyed, strict=True)]
    inp = sum(e[2] for e in merged.values()) + unkeyed[1]
    out = sum(e[3] for e in merged.values()) + unkeyed[2]
    cc = sum(e[4] for e in merged.values()) + unkeyed[3]
    cr = sum(e[5] for e in merged.values()) + unkeyed[4]
    return {
        "input_tokens": inp,
        "output_tokens": out,
        "cache_creation_input_tokens": cc,
        "cache_read_input_tokens": cr,
        "total_tokens": inp + out + cc + cr,
        "entries": len(merged) + unkeyed[0],
    }


def subagent_files(path: Path) -> list[Path]:
    folder = path.with_suffix("") / "subagents"
    try:
        return sorted(p for p in folder.glob("*.jsonl") if p.is_file())
    except OSError:
        return []


def billing_totals(path: Path) -> dict[str, int]:
    """Billing totals of a Claude Code session file plus its ``subagents/`` transcripts."""
    files = [path, *subagent_files(path)]
    totals = merge_billing([scan(f) for f in files])
    totals["files"] = len(files)
    return totals
