"""Argument checks of the curation verbs: one clear line for anything malformed.

Agents call these verbs with JSON they wrote themselves, so every shape is checked here
(``UsageError``, exit 2) before the store is touched; a well-formed step the store does not
hold is the index's ``NotFoundError`` (exit 4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from contextfork.cold.decisions import BRIEF_CAP as BRIEF_MAX_CHARS
from contextfork.curate.index import FoldIndex, StepEntry
from contextfork.errors import UsageError

#: The verbs, in the order help lists them (the CLI, the MCP tool and pi's tool take the same).
VERBS = ("status", "peek", "expand", "refold", "pin", "unpin", "brief", "reboundary", "unmark")
SPAN_MAX = 1000


def _int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{what} must be an integer step id, got {value!r}")
    return value


def target_keys(
    index: FoldIndex, args: Mapping[str, object], verb: str, *, required: bool
) -> list[StepEntry]:
    """The steps ``step`` (one id), ``steps`` ([first, last], inclusive) or ``key`` name."""
    given = [k for k in ("step", "steps", "key") if k in args and args[k] is not None]
    if len(given) > 1:
        raise UsageError(f"{verb}: give one of step, steps or key (got {', '.join(given)})")
    if not given:
        if required:
            raise UsageError(f"{verb}: name a step: step N, steps [first, last] or key K")
        return []
    which = given[0]
    if which == "step":
        return [index.by_id(_int(args["step"], f"{verb}: step"))]
    if which == "key":
        key = args["key"]
        if not isinstance(key, str) or not key:
            raise UsageError(f"{verb}: key must be a non-empty string")
        return [index.by_key(key)]
    span = args["steps"]
    if (not isinstance(span, Sequence) or isinstance(span, str) or len(span) not in (1, 2)):
        raise UsageError(f"{verb}: steps must be [first, last] (or [step])")
    first = _int(span[0], f"{verb}: steps")
    last = _int(span[-1], f"{verb}: steps")
    if last < first or last - first > SPAN_MAX:
        raise UsageError(f"{verb}: steps [{first}, {last}] is not a span of at most {SPAN_MAX}")
    return index.span(first, last)


def brief_text(value: object) -> tuple[str, int]:
    """The agent's words kept verbatim, except secrets (redacted, counted)."""
    from contextfork.redact import redact_text

    if not isinstance(value, str) or not value.strip():
        raise UsageError("brief: text must be a non-empty string")
    if len(value) > BRIEF_MAX_CHARS:
        raise UsageError(f"brief: text has {len(value)} characters, at most {BRIEF_MAX_CHARS}")
    clean, found = redact_text(value)
    return clean, len(found)


def steps_of(entries: Sequence[StepEntry]) -> str:
    ids = [e.step_id for e in entries]
    if len(ids) == 1:
        return str(ids[0])
    return f"{ids[0]}-{ids[-1]}"
