"""Dedupe at line/range level: spans of a tool output already visible earlier become stubs.

Whole-output repeats are rare on real sessions (0–6 % of tool-output text) while repeated lines
are common (32–62 %), so matching works on runs of lines. A run is a maximal sequence of lines
that were already shown (short lines like ``}`` may sit inside a run but never start or end
one). A long run keeps its top-level class/function signatures so the agent still sees the
shape of the code it elided.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Line-number prefixes of file views: Claude Code Read ("    12→"), cat -n ("    12\t"), nl.
_LINENO = re.compile(r"^\s*\d+(?:→|\t|: |\| ?)")
_SIGNATURE = re.compile(
    r"^(?:export\s+(?:default\s+)?)?(?:pub(?:\([\w:]+\))?\s+)?(?:public\s+|private\s+)?"
    r"(?:async\s+)?(?:def|class|function|interface|struct|enum|trait|impl|fn|func|module)\b"
)


def is_signature(line: str) -> bool:
    """A top-level definition line (no indentation once any line-number prefix is removed)."""
    body = _LINENO.sub("", line, count=1)
    return bool(_SIGNATURE.match(body))


Source = tuple[int, int, int]  # (step, block, 1-based line)


@dataclass
class LineIndex:
    """Where each visible non-trivial line was first shown; lines of folded steps are dropped."""

    first: dict[str, Source] = field(default_factory=dict)
    owned: dict[int, list[str]] = field(default_factory=dict)

    def add(self, key: str, src: Source) -> None:
        if key not in self.first:
            self.first[key] = src
            self.owned.setdefault(src[0], []).append(key)

    def drop_step(self, step: int) -> None:
        for key in self.owned.pop(step, []):
            if self.first.get(key, (None,))[0] == step:
                del self.first[key]


@dataclass(frozen=True)
class Run:
    """Lines ``start..end`` (0-based, inclusive) of one output, all shown before at ``sources``."""

    start: int
    end: int
    sources: tuple[Source, ...]
    signatures: tuple[str, ...]


def _source_label(sources: tuple[Source, ...]) -> str:
    by_step: dict[int, list[int]] = {}
    for st, _bl, ln in sources:
        by_step.setdefault(st, []).append(ln)
    parts = []
    for st in sorted(by_step)[:3]:
        lines = by_step[st]
        parts.append(f"step {st} L{min(lines)}-{max(lines)}")
    more = len(by_step) - 3
    return ", ".join(parts) + (f" +{more} more" if more > 0 else "")


def stub_text(run: Run, lines: list[str], restore_step: int, verb: str = "restore") -> str:
    """The stub that replaces a run: names the step(s) and lines, keeps signatures, and the
    way back the model has (``verb``: mini-swe-agent answers ``restore N``; pi's model has its
    tool's peek)."""
    n = run.end - run.start + 1
    head = (
        f"[contextfork: {n} lines (L{run.start + 1}-{run.end + 1}) already shown in "
        f"{_source_label(run.sources)}; {verb} {restore_step} for the exact text]"
    )
    ends_nl = lines[run.end].endswith("\n")
    out = head + "\n"
    for sig in run.signatures:
        out += sig.rstrip("\r\n") + "\n"
    return out if ends_nl else out.rstrip("\n")


@dataclass(frozen=True)
class Deduped:
    text: str
    runs: tuple[Run, ...]
    lines: tuple[str, ...]


def find_runs(
    lines: list[str],
    index: LineIndex,
    *,
    min_run_lines: int,
    min_run_chars: int,
    min_line_chars: int,
    signature_min_lines: int,
) -> list[Run]:
    n = len(lines)
    keys = [ln.rstrip("\r\n") for ln in lines]
    trivial = [len(k.strip()) < min_line_chars for k in keys]
    first = index.first
    hit: list[Source | None] = [None if trivial[i] else first.get(keys[i]) for i in range(n)]
    runs: list[Run] = []
    i = 0
    while i < n:
        if hit[i] is None:
            i += 1
            continue
        j = i
        last = i
        while j + 1 < n and (hit[j + 1] is not None or trivial[j + 1]):
            j += 1
            if hit[j] is not None:
                last = j
        srcs = tuple(h for h in hit[i : last + 1] if h is not None)
        chars = sum(len(keys[x]) for x in range(i, last + 1))
        if len(srcs) >= min_run_lines and chars >= min_run_chars:
            sigs: tuple[str, ...] = ()
            if last - i + 1 >= signature_min_lines:
                sigs = tuple(lines[x] for x in range(i, last + 1) if is_signature(lines[x]))[:20]
            runs.append(Run(i, last, srcs, sigs))
        i = last + 1
    return runs


def dedupe_text(
    text: str,
    step: int,
    block: int,
    index: LineIndex,
    *,
    min_run_lines: int = 3,
    min_run_chars: int = 160,
    min_line_chars: int = 4,
    signature_min_lines: int = 12,
    verb: str = "restore",
) -> Deduped:
    """Stub the runs of ``text`` already in ``index``, then index what stays visible raw."""
    lines = text.splitlines(keepends=True)
    runs = find_runs(
        lines,
        index,
        min_run_lines=min_run_lines,
        min_run_chars=min_run_chars,
        min_line_chars=min_line_chars,
        signature_min_lines=signature_min_lines,
    )
    out: list[str] = []
    pos = 0
    for run in runs:
        out.extend(lines[pos : run.start])
        out.append(stub_text(run, lines, step, verb))
        pos = run.end + 1
    out.extend(lines[pos:])
    in_run: set[int] = set()
    for run in runs:
        in_run.update(range(run.start, run.end + 1))
    for i, ln in enumerate(lines):
        if i in in_run:
            continue
        key = ln.rstrip("\r\n")
        if len(key.strip()) >= min_line_chars:
            index.add(key, (step, block, i + 1))
    return Deduped("".join(out) if runs else text, tuple(runs), tuple(lines))
