"""The status pass, resumable: the next ``status`` on a grown transcript reads only what was appended.

The second time ``status`` reads a large Claude Code file (``MIN_BYTES`` and up; the first
time only notes that it did, as most files are looked at once) it keeps its lines' digests
(``ccline``), the billing scan and the byte offset of the last complete line in
``$XDG_CACHE_HOME/contextfork/status/``; every later call on the same file parses from that
offset on. The cache is used only while the file is the one it describes: same inode, not shorter than
the offset, and the same SHA-256 of every byte before the offset (a file truncated, replaced or
rewritten in place, anywhere, is read whole again). What it keeps of a call's input or a failed
result is redacted first, and a call's input keeps in full only the keys ``status`` reads. Any cache that does not read back as exactly the shape
written here is ignored. Subagent files are small and read whole every time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from contextfork import layout
from contextfork.inputfile import max_line_bytes
from contextfork.telemetry import ccread
from contextfork.telemetry.accounting import PATH_KEYS
from contextfork.telemetry.ccline import Line, call_estimate
from contextfork.telemetry.scan import ScanState

VERSION = 2  # 2: a call keeps the estimate of its whole input (its input is cut)
#: Smaller files are read whole: the cold pass costs less than writing the cache (tests lower it).
MIN_BYTES = 4 << 20
_FP_BYTES = 1 << 20  # read size while hashing the consumed prefix


def cache_file(path: Path) -> Path:
    from contextfork.hashing import sha256_bytes

    key = sha256_bytes(os.path.realpath(path).encode("utf-8", "surrogateescape"))
    return layout.cache_dir("status") / f"{key[:24]}.json"


def _fingerprint(path: Path, offset: int) -> str:
    """The SHA-256 of the ``offset`` bytes a pass consumed, all of them (~60 ms at 55 MB, an
    eighth of parsing them): a line rewritten anywhere in place is seen, not only at the ends."""
    from contextfork.hashing import sha256_chunks

    def chunks() -> Iterator[bytes]:
        left = offset
        with open(path, "rb") as fh:
            while left > 0:
                piece = fh.read(min(left, _FP_BYTES))
                if not piece:
                    return
                left -= len(piece)
                yield piece

    return sha256_chunks(chunks())


def read(path: Path) -> ccread.Read:
    """``ccread.read`` + ``finish`` of ``path``, resumed from (and saved to) the cache."""
    st = os.stat(path)
    if st.st_size < MIN_BYTES:
        return ccread.finish(ccread.read(path))
    cfile = cache_file(path)
    seen_before = cfile.exists()
    cached = _load(cfile, path, st) if seen_before else None
    start = cached.offset if cached is not None else -1
    got = ccread.read(path, resume=cached)
    if not seen_before:  # a file looked at once may never be again: no cache, only a note
        _write(cfile, {"version": VERSION, "seen": True})
    elif got.offset != start:
        _save(cfile, path, st, got)
    if got.tail:  # the figures of a pass are kept only when it read the whole file
        got.fp = None
    return ccread.finish(got)


def _write(cfile: Path, payload: dict[str, Any]) -> None:
    try:
        # 5x json.dumps, NaN kept as NaN; msgspec refuses NaN
        data = _to_json(payload) if len(payload) > 2 else json.dumps(payload).encode("utf-8")
    except (ValueError, TypeError):  # a lone surrogate, say: json writes what it read
        data = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    try:
        from contextfork.atomic import write_bytes

        write_bytes(cfile, data)
    except OSError:
        pass  # a read-only cache directory only costs time


def _to_json(payload: dict[str, Any]) -> bytes:
    from pydantic_core import to_json  # lazy: only a pass that keeps its lines writes this much

    return to_json(payload, inf_nan_mode="constants")


def _save(cfile: Path, path: Path, st: os.stat_result, got: ccread.Read) -> None:
    got.fp = _fingerprint(path, got.offset)
    payload = {
        "version": VERSION, "path": str(path), "ino": st.st_ino, "limit": max_line_bytes(),
        "offset": got.offset, "fp": got.fp,
        "records": got.records, "malformed": got.malformed, "session_id": got.session_id,
        "first_ts": got.first_ts, "last_ts": got.last_ts, "billing": got.billing.to_json(),
        "lines": _scrub_all([ln.to_json() for ln in got.lines]),
    }
    _write(cfile, payload)


def _scrub_all(lines: list[list[Any]]) -> list[list[Any]]:
    """``_scrubbed`` of every line, the keywords of the redaction rules searched once over all
    the strings it redacts (``redact.rules_by_text``) instead of once per string."""
    from contextfork.redact import redact_text, rules_by_text

    texts: list[str] = []

    def collect(text: str) -> str:
        texts.append(text)
        return text

    for v in lines:
        _scrubbed(v, collect)
    unique = list(dict.fromkeys(texts))
    found = rules_by_text([t.lower() for t in unique])
    memo = {t: redact_text(t, rules)[0] for t, rules in zip(unique, found, strict=True) if rules}
    return [_scrubbed(v, lambda t: memo.get(t, t)) for v in lines]


#: The input keys ``status`` reads of a call (``accounting.describe`` and ``touched_by``).
_READ_KEYS = frozenset({"command", "cmd", *PATH_KEYS, "pattern", "url", "query"})
_CUT = 200  # describe's fallback shows the first 200 chars of the input's JSON


def _scrubbed(v: list[Any], redact: Callable[[str], str]) -> list[Any]:
    """A line as the cache keeps it: secrets redacted (``redact``) from what a call or a failed
    result said, and a call's input cut to what ``status`` reads of it (not a Write's whole
    file)."""
    d = v[7]
    if d is None or d[0] not in ("a", "u"):
        return v
    at = 4 if d[0] == "a" else 2
    blocks = [_scrub_block(b, redact) for b in d[at]]
    return [*v[:7], [*d[:at], blocks, *d[at + 1 :]]]


def _scrub_block(b: Any, redact: Callable[[str], str]) -> Any:
    if b[0] == "call":
        name, inp = b[2], b[3]
        kept = {k: x if k in _READ_KEYS or (k == "input" and name == "apply_patch") else _cut(x)
                for k, x in inp.items()}  # fmt: skip
        est = b[4] if len(b) > 4 else call_estimate(name, inp)  # of what the call sent, whole
        return (b[0], b[1], name, _redacted(kept, redact), est)
    if b[0] == "result" and b[5] is not None:
        return (*b[:5], redact(b[5]), b[6])
    return b


def _cut(v: Any) -> Any:
    """Every string cut to ``_CUT`` chars: the input's JSON keeps its first ``_CUT`` chars."""
    if isinstance(v, str):
        return v[:_CUT]
    if isinstance(v, dict):
        return {k: _cut(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_cut(x) for x in v]
    return v


def _redacted(v: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(v, str):
        return redact(v)
    if isinstance(v, dict):
        return {k: _redacted(x, redact) for k, x in v.items()}
    if isinstance(v, list):
        return [_redacted(x, redact) for x in v]
    return v


def _load(cfile: Path, path: Path, st: os.stat_result) -> ccread.Read | None:
    """The cached pass of ``path`` if it still describes its first bytes, else None."""
    try:
        with open(cfile, "rb") as fh:
            raw = fh.read()
        try:
            data = msgspec.json.decode(raw)  # three times json's speed on what ``_write`` wrote
        except (msgspec.MsgspecError, ValueError, RecursionError):  # NaN, a lone surrogate: json
            data = json.loads(raw)
        offset = data["offset"]
        if (data["version"] != VERSION or data["ino"] != st.st_ino
                or data["limit"] != max_line_bytes() or not _count(offset)
                or offset > st.st_size or data["fp"] != _fingerprint(path, offset)):  # fmt: skip
            return None
        got = ccread.Read(subagent=False)
        got.offset, got.fp = offset, data["fp"]
        got.lines = [Line.from_json(_line(v)) for v in data["lines"]]
        got.billing = ScanState.from_json(data["billing"])
        got.records, got.malformed = data["records"], data["malformed"]
        got.session_id = data["session_id"]
        got.first_ts, got.last_ts = data["first_ts"], data["last_ts"]
        if not (_count(got.records) and _count(got.malformed) and _text(got.first_ts)
                and _text(got.last_ts)):  # fmt: skip
            return None
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None
    return got


def _count(v: Any) -> bool:
    return type(v) is int and v >= 0


def _text(v: Any) -> bool:
    return v is None or type(v) is str


_CATEGORIES = frozenset({"system_prompt", "user_history", "assistant_history", "tool_outputs"})


_TEXT = frozenset({str, type(None)})


def _line(v: Any) -> list[Any]:
    """A cached line, checked to be of the shape ``Line.to_json`` writes (ValueError if not)."""
    if type(v) is not list:
        raise ValueError("bad cached line")
    kind, uuid, parent, pu, forked, cwd, branch, d = v  # ValueError unless 8 long
    t = _TEXT
    if not (type(kind) in t and type(uuid) in t and type(parent) in t and type(pu) in t
            and type(cwd) in t and type(branch) in t and type(forked) is bool):  # fmt: skip
        raise ValueError("bad cached line")
    if d is None:
        return v
    ok = type(d) is list and bool(d)
    tag = d[0] if ok else None
    if tag == "a":
        ok = (len(d) == 7 and _text(d[1]) and _text(d[2]) and _strs(d[3]) and _blocks(d[4])
              and (d[5] is None or (type(d[5]) is list and len(d[5]) == 4
                                    and all(type(x) is int for x in d[5])))
              and _text(d[6]))  # fmt: skip
    elif tag == "u":
        ok = len(d) == 3 and _strs(d[1]) and _blocks(d[2])
    elif tag == "s":
        ok = d == ["s", False] or (
            len(d) == 8 and d[1] is True and _text(d[2]) and _text(d[3])
            and (d[4] is None or isinstance(d[4], int)) and _text(d[5])
            and (d[7] is None or _strs(d[7])))  # fmt: skip
    else:
        ok = False
    if not ok:
        raise ValueError("bad cached digest")
    return v


def _strs(v: Any) -> bool:
    return type(v) is list and all(type(x) is str for x in v)


def _blocks(v: Any) -> bool:
    return type(v) is list and all(_block(b) for b in v)


def _block(b: Any) -> bool:
    if type(b) is not list or not b:
        return False
    if b[0] == "est":
        return len(b) == 3 and b[1] in _CATEGORIES and type(b[2]) is int
    if b[0] == "call":
        return (len(b) == 5 and type(b[1]) is str and type(b[2]) is str and type(b[3]) is dict
                and type(b[4]) is int)  # fmt: skip
    return (b[0] == "result" and len(b) == 7 and type(b[1]) is str and type(b[2]) is int
            and type(b[3]) is bool and (b[4] is None or type(b[4]) is int) and _text(b[5])
            and type(b[6]) is bool)  # fmt: skip


# --- the main file's figures, kept while the file is unchanged ------------------------------
#
# Reading the cached lines back and walking them is most of a warm ``status``; when the file has
# not changed at all since a pass read it whole (same inode, same size, same SHA-256), the
# figures that pass computed from the main file are the answer again, and only they are read.


class _Compaction(msgspec.Struct, forbid_unknown_fields=True):
    before_step: int
    timestamp: str | None
    trigger: str | None
    pre_tokens: int | None


class _Failed(msgspec.Struct, forbid_unknown_fields=True):
    step: int
    tool: str
    call_id: str
    command: str
    exit_code: int | None
    error_excerpt: str


class _Figures(msgspec.Struct, forbid_unknown_fields=True):
    """What ``ccstatus._figures`` returns, and where it holds (the file's first ``offset``
    bytes, all of it)."""

    version: int
    ino: int
    limit: int
    offset: int
    fp: str
    session_id: str | None
    model: str | None
    cwd: str | None
    git_branch: str | None
    started_at: str | None
    ended_at: str | None
    malformed: int
    total: int
    breakdown: dict[str, int]
    last_output_tokens: int
    inherited_steps: int
    since_compaction: int
    n_steps: int
    tool_calls: int
    tool_errors: int
    compactions: list[_Compaction]
    touched: list[str]
    failed: list[_Failed]
    billing: dict[str, Any]


_FIGURES_DECODER = msgspec.json.Decoder(_Figures)
_HEADER = ("version", "ino", "limit", "offset", "fp")


def figures_file(path: Path) -> Path:
    cfile = cache_file(path)
    return cfile.with_name(cfile.stem + ".figures.json")


def keep_figures(path: Path, got: ccread.Read, figures: dict[str, Any]) -> None:
    """Keep the figures of a pass that read ``path`` whole, its lines cached (``got.fp``).
    Not when a touched path would lose a secret to the redaction: the figures keep what the
    report says, and the cache keeps no secret a call sent (its failures are redacted already)."""
    from contextfork.redact import redact_text

    if got.fp is None or any(redact_text(p)[0] != p for p in figures["touched"]):
        return
    payload = {"version": VERSION, "ino": os.stat(path).st_ino, "limit": max_line_bytes(),
               "offset": got.offset, "fp": got.fp,
               **figures, "billing": figures["billing"].to_json()}  # fmt: skip
    try:
        data = msgspec.json.encode(payload)
    except (TypeError, ValueError, UnicodeError):
        data = json.dumps(payload).encode("utf-8")
    try:
        from contextfork.atomic import write_bytes

        write_bytes(figures_file(path), data)
    except OSError:
        pass


def load_figures(path: Path) -> dict[str, Any] | None:
    """The kept figures of ``path`` if it is byte for byte the file they were computed from."""
    try:
        st = os.stat(path)
        if st.st_size < MIN_BYTES:
            return None
        with open(figures_file(path), "rb") as fh:
            got = _FIGURES_DECODER.decode(fh.read())
        if (got.version != VERSION or got.ino != st.st_ino or got.limit != max_line_bytes()
                or got.offset != st.st_size or set(got.breakdown) != _CATEGORIES
                or got.fp != _fingerprint(path, got.offset)):  # fmt: skip
            return None
        out = {f: getattr(got, f) for f in got.__struct_fields__ if f not in _HEADER}
        out["billing"] = ScanState.from_json(got.billing)
    except (OSError, ValueError, TypeError, msgspec.MsgspecError):
        return None
    out["compactions"] = [msgspec.structs.asdict(c) for c in got.compactions]
    out["failed"] = [msgspec.structs.asdict(f) for f in got.failed]
    return out
