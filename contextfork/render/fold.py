"""Fold: finished steps become one-line notes (ReFold) or deterministic briefs (pi-fold).

Replies may begin with ``PROGRESS: …`` and ``STALE: <steps>``. Notes are built only from the
unedited history, so the same history and policy always give the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from contextfork.cold.decisions import BRIEF_CAP
from contextfork.render.messages import StepMessages

# As ``^\s*PROGRESS:\s*(.+?)\s*$`` and ``^\s*STALE:\s*([0-9][0-9,\s\-–]*)$``, in linear time: a
# line start no longer scans every blank line after it (``^[^\S\n]*``; the mark is found from
# its own line start), and the shortest non-empty rest of the line followed only by blanks is
# taken in one pass (its first character, then blanks-and-a-character pairs) instead of a lazy
# ``.+?`` that rescanned the blanks at every length.
_PROGRESS = re.compile(r"^[^\S\n]*PROGRESS:\s*(.(?:[^\S\n]*+\S)*+)\s*$", re.MULTILINE)
_STALE = re.compile(r"^[^\S\n]*STALE:\s*([0-9][0-9,\s\-–]*)$", re.MULTILINE)
_HEAD_LINES = 6  # only the first lines of a reply may carry the PROGRESS/STALE lines

REMINDER = (
    "[contextfork: begin each reply with `PROGRESS: <one line>` and `STALE: <steps>` "
    "(finished steps from the last few); `restore N` brings a folded step back]"
)
BRIEF_LIMIT = 400  # characters of one step's brief
IDS_LIMIT = 1400  # characters of first-shown names above which a step is reference material


@dataclass(frozen=True)
class Marks:
    """What a reply declared: its PROGRESS line and the steps it called STALE."""

    progress: str | None
    stale: tuple[int, ...]

    @property
    def has_lines(self) -> bool:
        return self.progress is not None or bool(self.stale)


def parse_steps(spec: str) -> tuple[int, ...]:
    out: set[int] = set()
    for part in re.split(r"[,\s]+", spec.strip()):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)\s*[-–]\s*(\d+)", part)
        if m:
            a, b = int(m.group(1)), int(m.group(2))
            if a <= b and b - a <= 1000:
                out.update(range(a, b + 1))
        elif part.isdigit():
            out.add(int(part))
    return tuple(sorted(out))


def parse_marks(reply: str) -> Marks:
    head = "\n".join(reply.splitlines()[:_HEAD_LINES])
    p = _PROGRESS.search(head)
    s = _STALE.search(head)
    return Marks(p.group(1)[:300] if p else None, parse_steps(s.group(1)) if s else ())


def _squash(text: str, limit: int) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _head_tail(text: str, limit: int) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return "(empty)"
    if len(lines) <= 2:
        return _squash(" ⏎ ".join(lines), limit)
    half = max(20, limit // 2 - 10)
    return f"{_squash(lines[0], half)} … {_squash(lines[-1], half)} ({len(lines)} lines)"


def step_brief(step: int, sm: StepMessages, *, limit: int = BRIEF_LIMIT) -> str:
    """A deterministic brief: the call and its arguments, head/tail of the result, own words.

    Only verbatim excerpts of the step: no list of names picked by the identifier rule that
    the carriage measure checks (a note must not grade its own homework)."""
    words = next((m.content for m in sm.body if m.kind == "reply" and m.content.strip()), "")
    calls = [m.content for m in sm.body if m.kind == "call"]
    outputs = [m.content for m in sm.body if m.kind == "output"]
    parts = [f"s{step}:"]
    if words:
        parts.append(_squash(words, limit // 3))
    for c in calls[:2]:
        parts.append("→ " + _squash(c, limit // 4))
    if len(calls) > 2:
        parts.append(f"(+{len(calls) - 2} calls)")
    for o in outputs[:1]:
        parts.append("⇒ " + _head_tail(o, limit // 3))
    return _squash(" ".join(parts), limit)


def note_texts(
    steps: Sequence[int],
    briefs: Sequence[str],
    *,
    progress: str | None = None,
    cap: int = BRIEF_CAP,
    hint: str = "`restore N` gives any back exactly",
    verb: str = "restore",
) -> list[tuple[tuple[int, ...], str]]:
    """Notes for a run of adjacent folded steps: one note, split only to stay under ``cap``.

    A ReFold note is one line (the PROGRESS line); an epoch note lists each step's brief.
    """
    if progress is not None:
        label = _range_label(steps)
        text = f"[folded {label} · PROGRESS: {_squash(progress, 300)} · {verb} {steps[0]}]"
        return [(tuple(steps), text[:cap])]
    out: list[tuple[tuple[int, ...], str]] = []
    cur_steps: list[int] = []
    cur_lines: list[str] = []
    size = 0
    for s, b in zip(steps, briefs, strict=True):
        if cur_steps and size + len(b) + 1 > cap - 80:
            out.append(_close(cur_steps, cur_lines, cap, hint))
            cur_steps, cur_lines, size = [], [], 0
        cur_steps.append(s)
        cur_lines.append(b)
        size += len(b) + 1
    if cur_steps:
        out.append(_close(cur_steps, cur_lines, cap, hint))
    return out


def _range_label(steps: Sequence[int]) -> str:
    if len(steps) == 1:
        return f"step {steps[0]}"
    return f"steps {steps[0]}-{steps[-1]}"


def _close(
    steps: list[int], lines: list[str], cap: int, hint: str = "`restore N` gives any back exactly"
) -> tuple[tuple[int, ...], str]:
    head = f"[contextfork note: folded {_range_label(steps)}; {hint}]"
    text = head + "\n" + "\n".join(ln for ln in lines if ln)  # "": covered by an agent brief
    return tuple(steps), text[:cap]


def adjacent_runs(steps: Sequence[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for s in sorted(steps):
        if runs and runs[-1][-1] == s - 1:
            runs[-1].append(s)
        else:
            runs.append([s])
    return runs
