"""Transcript adapters: real harness transcripts → one normalized ``Session`` model.

Import stays light (no pydantic until a transcript is actually loaded) so hot paths can import
the package to reach ``locate`` without paying for the model.
"""

from __future__ import annotations

import gc
import os
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextfork.transcript.model import Session

__all__ = ["load_session"]

# The sessions this process holds, by the identity of their files: a command that reads the same
# unchanged transcript twice (``fork``: its own parse, then the export's seed) gets the same
# object back instead of a second copy (issue 27). Weak: a session nobody holds is not kept.
_LOADED: weakref.WeakValueDictionary[tuple[Any, ...], Session] = weakref.WeakValueDictionary()


def load_session(
    path: str | Path, *, include_subagents: bool = True, between: Callable[[], None] | None = None,
    shared: bool = True, outputs_in_file: bool = False,
) -> Session:
    """Read any supported transcript (format detected) into a ``Session``.

    Raises ``NotFoundError`` for a missing file and ``UsageError`` (naming the file and line)
    for an unknown or unreadable one; malformed single lines are skipped and counted in
    ``Session.malformed_lines``. A session of the same unchanged file (and subagent files) that
    is still held in this process is returned as it is: callers only read sessions.

    ``between`` (a command that will count tokens passes ``tokens.warm``) runs once during the
    load, when the heap has most free room: a Claude Code transcript's line skeletons are gone
    and its steps not yet built. Loading the tokenizer's vocabulary there (200k small objects)
    fills the skeletons' holes instead of growing the heap: 9 MB less peak on 55 MB (issue 27).
    Other formats, and a session already held, run it before returning.

    ``shared=False``: a session of the caller's own, neither taken from nor offered to the
    others this process holds (``fold session`` empties each step's blocks once it is folded).

    ``outputs_in_file``: a whole-session command's choice. Long tool outputs (Claude Code, Codex)
    stay in the file and are read back, verified, on each use of their ``content``: most of a
    rollout's bytes are outputs, and holding them all at once was 1 byte per byte (issue 27).
    """
    p = Path(path)
    key = _identity(p, include_subagents, outputs_in_file) if shared else None
    held = _LOADED.get(key) if key is not None else None
    if held is not None:
        if between is not None:
            between()
        return held
    with _paused_gc():
        session = _load(p, include_subagents=include_subagents, between=between,
                        outputs_in_file=outputs_in_file)
    if key is not None:
        _LOADED[key] = session
    return session


def _identity(p: Path, include_subagents: bool, in_file: bool) -> tuple[Any, ...] | None:
    """What names this file's content as read: device, inode, size and mtime (and, with
    subagents, those of their files); None when it cannot be stat'ed (the load says why)."""
    try:
        st = os.stat(p)
        key: tuple[Any, ...] = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, include_subagents,
                                 in_file)
        folder = p.with_suffix("") / "subagents"
        if include_subagents and folder.is_dir():
            subs = sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns)
                          for e in os.scandir(folder) if e.name.endswith(".jsonl"))  # fmt: skip
            key += tuple(subs)
    except OSError:
        return None
    return key


@contextmanager
def _paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while a transcript is parsed: the JSON values and models it
    builds hold no cycles, and the collector's passes over the growing heap were a quarter of
    the CPU of loading a 55 MB session (issue 27). Left alone when the caller already paused it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _load(
    p: Path, *, include_subagents: bool, between: Callable[[], None] | None, outputs_in_file: bool
) -> Session:
    from contextfork.transcript.detect import detect_format

    fmt = detect_format(p)
    if fmt == "claude-code":
        from contextfork.transcript.claude_code import load as load_claude_code

        return load_claude_code(p, include_subagents=include_subagents, between=between,
                                in_file=outputs_in_file)
    session = _other(p, fmt, outputs_in_file)
    if between is not None:
        between()
    return session


def _other(p: Path, fmt: str, outputs_in_file: bool) -> Session:
    if fmt == "codex":
        from contextfork.transcript.codex import load as load_codex

        return load_codex(p, in_file=outputs_in_file)
    if fmt == "pi":
        from contextfork.transcript.pi import load as load_pi

        return load_pi(p)
    if fmt == "mini-swe-agent":
        from contextfork.transcript.miniswe import load as load_miniswe

        return load_miniswe(p)
    from contextfork.transcript.plain import load as load_plain

    return load_plain(p)
