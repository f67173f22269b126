"""``contextfork statusline``: the Claude Code statusLine command — stdlib only, never fails.

Claude Code runs it after every assistant message with a JSON object on stdin
(``transcript_path``, ``model``, ``workspace``, optionally ``context_window``) and shows the
first line it prints. So: no Typer/pydantic/tokenizer, a per-transcript cache keyed by
size/mtime/inode that lets the next call read only the appended tail, and on any error a
minimal line and exit status 0 — a broken status line must never disturb the session.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from contextfork import layout
from contextfork.telemetry import policy
from contextfork.telemetry.scan import ScanState, scan

FALLBACK = "[ contextfork ]"
MAX_STDIN_BYTES = 8 * 1024 * 1024  # Claude Code sends a small JSON object


def cache_dir() -> Path:
    return layout.cache_dir("statusline")


def _cache_file(transcript: Path) -> Path:
    from contextfork.hashing import sha256_bytes  # lazy: hot path

    key = sha256_bytes(os.path.realpath(transcript).encode("utf-8", "surrogateescape"))
    return cache_dir() / f"{key[:24]}.json"


_FP_BYTES = 4096


def _fingerprint(transcript: Path, offset: int) -> str:
    """Hash of the first and last few KiB of the bytes a state has consumed.

    A transcript deleted and re-created (ext4 reuses the inode at once) or rewritten in place
    keeps inode and may grow past the cached size; without this check the next call would resume
    mid-line in a different file and keep the old session's steps and tokens.
    """
    from contextfork.hashing import sha256_bytes  # lazy: hot path

    with open(transcript, "rb") as fh:
        head = fh.read(min(offset, _FP_BYTES))
        start = max(0, offset - _FP_BYTES)
        fh.seek(start)
        tail = fh.read(offset - start)
    return sha256_bytes(len(head).to_bytes(8, "big") + head + tail)


def _cached_state(cfile: Path, transcript: Path, st: os.stat_result) -> tuple[ScanState, bool]:
    """(state to resume from, whether it is already current); raises when it cannot be used."""
    with open(cfile, encoding="utf-8") as fh:
        cached = json.load(fh)
    if cached.get("ino") != st.st_ino or not isinstance(cached.get("size"), int):
        raise ValueError("another file")
    state = ScanState.from_json(cached["state"])
    if state.offset > st.st_size or cached["size"] > st.st_size:
        raise ValueError("the file shrank")
    if cached.get("fp") != _fingerprint(transcript, state.offset):
        raise ValueError("the consumed bytes changed")
    current = cached["size"] == st.st_size and cached.get("mtime_ns") == st.st_mtime_ns
    return state, current


def cached_scan(transcript: Path) -> ScanState:
    """Scan state for ``transcript``, reusing the verified cache and reading only appended bytes."""
    st = os.stat(transcript)
    cfile = _cache_file(transcript)
    state: ScanState | None = None
    try:
        state, current = _cached_state(cfile, transcript, st)
        if current:
            return state
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        state = None
    state = scan(transcript, state)
    payload = {"path": str(transcript), "ino": st.st_ino, "size": st.st_size,
               "mtime_ns": st.st_mtime_ns, "fp": _fingerprint(transcript, state.offset),
               "state": state.to_json()}
    try:
        from contextfork.atomic import write_bytes  # lazy: hot path

        write_bytes(cfile, json.dumps(payload, separators=(",", ":")).encode("utf-8"))
    except OSError:
        pass  # a read-only cache dir only costs speed
    return state


def _policy_root(start: Path) -> Path | None:
    """Nearest ancestor holding ``.contextfork/policy.json`` (no git call on this path)."""
    cur = start
    for _ in range(64):
        if layout.has_policy(cur):
            return cur
        if cur.parent == cur:
            return None
        cur = cur.parent
    return None


def _model_name(model: Any) -> str | None:
    if isinstance(model, dict):
        name = model.get("display_name") or model.get("id")
        return str(name) if name else None
    return str(model) if isinstance(model, str) and model else None


def _window(ctx: Any) -> int | None:
    if isinstance(ctx, dict):
        for key in ("context_window_size", "size", "max_tokens"):
            v = ctx.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v
    return None


NEW_SESSION = "[ ⚪ new session | Step 0 ]"


def fork_footprint(here: Path, transcript: Path) -> tuple[int | None, str, bool]:
    """A fork before its first own call: the context tokens ``contextfork fork`` counted for it.

    The usage on its copied lines was recorded for the original (before folding), so it is not
    the fork's footprint. Our fork record holds the fork's window, counted by the same function
    ``status`` uses, and whether it holds the harness overhead (without the record — another
    clone — the figure is unknown).
    """
    sid = transcript.stem
    cur = here
    for _ in range(64):
        try:
            record = layout.fork_record(cur, sid)
            with open(record, encoding="utf-8") as fh:
                data = json.load(fh)
            ctx = data.get("context_tokens") if isinstance(data, dict) else None
            if isinstance(ctx, dict):
                total = ctx.get("total")
                if isinstance(total, int) and not isinstance(total, bool):
                    return (total, str(ctx.get("source") or "counted"),
                            ctx.get("includes_harness_overhead") is not True)
            break
        except Exception:  # noqa: BLE001, S110 - no record here (or an unsafe state dir)
            pass
        if cur.parent == cur:
            break
        cur = cur.parent
    return None, "counted", False


def _transcript(payload: dict[str, Any], here: Path) -> tuple[Path | None, bool]:
    """(the session's transcript if it exists, whether the payload named a session).

    Claude Code names the session (transcript_path, session_id) on every call, also before the
    first prompt, when the file does not exist yet: then there is nothing to show, and the
    newest transcript of the directory is another session's. Only a payload that names no
    session at all (a manual run) falls back to the directory's newest transcript.
    """
    raw_path = payload.get("transcript_path")
    if isinstance(raw_path, str) and raw_path:
        path = Path(raw_path)
        return (path if path.is_file() else None), True
    from contextfork.transcript.locate import current_transcript, project_dir  # lazy: hot path

    sid = payload.get("session_id")
    if isinstance(sid, str) and sid and "/" not in sid and sid not in (".", ".."):
        path = project_dir(here) / f"{sid}.jsonl"
        return (path if path.is_file() else None), True
    return current_transcript(here), False


def render(payload: dict[str, Any]) -> str:
    workspace = payload.get("workspace")
    ws: dict[str, Any] = workspace if isinstance(workspace, dict) else {}
    here = Path(str(ws.get("project_dir") or ws.get("current_dir") or payload.get("cwd") or "."))
    transcript, named = _transcript(payload, here)
    pol = policy.read_policy_lenient(_policy_root(here))
    model = _model_name(payload.get("model"))
    if transcript is None and named:
        line = NEW_SESSION  # its transcript is written at the first prompt; show no other's
    elif transcript is None:
        risk = policy.evaluate(None, 0, pol)
        line = policy.badge(None, 0, risk)
    else:
        state = cached_scan(transcript)
        steps = len(state.message_ids)
        tokens, source, partial = state.active_tokens, "recorded", False
        chain = steps + len(state.inherited_ids) if state.inherited_ids else None
        if tokens is None and state.inherited_ids:
            if state.folded:
                tokens, source, partial = fork_footprint(here, transcript)
            else:  # a verbatim copy: the same window, so the copied usage stands
                tokens = state.inherited_tokens
        risk = policy.evaluate(tokens, steps, pol)  # a fork is judged on its own steps
        line = policy.badge(tokens, steps, risk, chain=chain, source=source,
                            messages_only=partial)
        window = _window(payload.get("context_window"))
        if window and tokens is not None:
            line += f" {100 * tokens / window:.0f}% of {policy.format_tokens(window)}"
        if state.compactions:
            line += f" · {state.compactions} compaction{'s' if state.compactions > 1 else ''}"
        line += _proxy_badge(here, transcript.stem)
        model = model or state.model
    if model:
        line += f" · {model}"
    return line


def _proxy_badge(here: Path, session_id: str) -> str:
    """`` · proxy −57%`` when the model-API proxy folded this session (stdlib only)."""
    from contextfork.telemetry import proxystats as stats  # lazy: hot path (stdlib only)

    cur = here
    for _ in range(64):
        try:
            if layout.state_path(cur, "proxy").is_dir():
                return stats.badge(cur, session_id)
        except Exception:  # noqa: BLE001 - an unsafe state dir: no badge
            return ""
        if cur.parent == cur:
            return ""
        cur = cur.parent
    return ""


def _read_stdin() -> bytes:
    """At most MAX_STDIN_BYTES + 1 bytes (a text-only stdin, as in tests, is read as text)."""
    buf = getattr(sys.stdin, "buffer", None)
    if buf is not None:
        return bytes(buf.read(MAX_STDIN_BYTES + 1))
    return sys.stdin.read(MAX_STDIN_BYTES + 1).encode("utf-8", "surrogateescape")


def main(argv: list[str] | None = None) -> int:
    """Print one status line; exit 0 whatever happens."""
    try:
        if argv and argv[0] in ("-h", "--help"):
            print("usage: contextfork statusline  (reads Claude Code's statusLine JSON on stdin)")
            return 0
        data = _read_stdin() if not sys.stdin.isatty() else b""
        fits = len(data) <= MAX_STDIN_BYTES  # larger is not Claude Code's input: ignore it
        payload = json.loads(data) if fits and data.strip() else {}
        line = render(payload if isinstance(payload, dict) else {})
    except BaseException:  # noqa: BLE001 - the status line must never fail the harness
        line = FALLBACK
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except BaseException:  # noqa: BLE001, S110 - closed stdout: nothing left to do
        pass
    return 0
