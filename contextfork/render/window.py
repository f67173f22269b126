"""The context window a recorded session ran in, and the harness's auto-compact point.

Budgets that adapt to the session (the epoch budget, the `compact` baseline's threshold) start
from the window of the model the session recorded; a recorded compaction says where the
harness compacted. Windows are the providers' published defaults (no beta long-context
headers); an unknown model gets the most common one, 200k.
"""

from __future__ import annotations

from contextfork.transcript.model import Session

DEFAULT_WINDOW = 200_000
# Claude Code auto-compacts at about 167k of a 200k window (measured on real sessions).
COMPACT_SHARE = 0.835

# (prefix of the model name, window in tokens); the first matching prefix wins.
_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude-", 200_000),
    ("gemini-3", 1_048_576),
    ("gemini-2.5", 1_048_576),
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("o3", 200_000),
    ("o4", 200_000),
)


def model_window(model: str | None) -> int | None:
    """The published window of a model name (provider prefixes like ``google/`` ignored)."""
    if not model:
        return None
    name = model.rsplit("/", 1)[-1].lower()
    for prefix, window in _WINDOWS:
        if name.startswith(prefix):
            return window
    return None


def session_model(session: Session) -> str | None:
    return session.model or next((s.model for s in session.steps if s.model), None)


def session_window(session: Session) -> tuple[int, str]:
    """The session's window and where it came from (model, recorded compaction, default)."""
    known = model_window(session_model(session))
    if known is not None:
        return known, f"model {session_model(session)}"
    pre = [c.pre_tokens for c in session.compactions if c.pre_tokens]
    if pre:
        return int(max(pre) / COMPACT_SHARE), "recorded compaction point"
    return DEFAULT_WINDOW, "default"
