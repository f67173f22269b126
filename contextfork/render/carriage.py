"""Identifiers (paths, symbols, error names) and the carriage measure built on them.

Carriage asks: of the identifiers the agent mentions at step t that first appeared in earlier
tool output, how many are still visible *as content* in the prompt it was sent (raw, or quoted
in a note or summary)? Plain words are not identifiers: a term must look like a path, a file,
a dotted/snake/camel symbol or an error name.

Lists the renderer adds (a note's ``[names: …]``, the signature lines a dedupe stub keeps) are
stripped before measuring: they are picked by rules, not content the agent was shown in
context, and a list built with this module's own identifier rule would make the measure grade
its own homework.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from contextfork.render.dedupe import is_signature
from contextfork.render.messages import Msg

_EXTS = (r"(?:py|pyi|js|jsx|ts|tsx|json|ya?ml|toml|md|rst|txt|cfg|ini|sh|rs|go|"
         r"java|c|h|cpp|hpp|rb|php|html|css|lock|sql)\b")
# The identifier rule is six alternatives, left to right at each position:
#   (?:[\w.-]*/)+[\w.-]+                                   paths with a slash
#   \b[A-Za-z_][\w-]*\.EXTS                               bare file names
#   \b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b                   dotted symbols (os.path.join)
#   \b[A-Za-z]\w*(?:Error|Exception|Warning)\b           error names
#   \b_*[a-z][a-z0-9]*_[a-z0-9_]+\b                       snake_case
#   \b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b                  CamelCase
# Tried at every position, the first two cost the rest of a path-like run each (20 KB of one
# character took 1-23 s; tool outputs are rendered on every pi call). ``identifiers`` finds the
# same matches in linear time (tests/adversarial/test_linear_extraction.py compares it with the
# rule as written):
# - a path can only start where the ``[\w.-]``/``/`` run starts: a later start in it sees the
#   same parts after its first ``/`` as the earlier start that failed or matched before it, so
#   the lookbehind ``(?<![\w./-])`` skips only starts that cannot match;
# - a bare file name ``x-y.py`` depends only on where its ``[\w-]`` run ends, so the pattern
#   tries it at run starts (``(?<![\w-])``), and the one other start that can match, the first
#   one after a ``-`` that the scan reaches in a run ending in ``.EXT``, is found from the list
#   of such runs (``_GOOD_RUN``) and taken in code (``_DASH_START``);
# - the other four start at word boundaries and scan one word.
_IDENT = re.compile(
    r"(?<![\w./-])(?:[\w.-]*/)+[\w.-]+"
    r"|(?<![\w-])\b[A-Za-z_][\w-]*\." + _EXTS +
    r"|\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b"
    r"|\b[A-Za-z]\w*(?:Error|Exception|Warning)\b"
    r"|\b_*[a-z][a-z0-9]*_[a-z0-9_]+\b"
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b"
)
_GOOD_RUN = re.compile(r"(?<![\w-])[\w-]++(?=\." + _EXTS + ")")
_FILE_TAIL = re.compile(r"\." + _EXTS)
_DASH_START = re.compile(r"-(?=[A-Za-z_])")
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def _next_dash_start(text: str, runs: list[tuple[int, int]], k: int, pos: int) -> tuple[int, int]:
    """(index of the first ``.EXT`` run ending after ``pos``, the position where the rule, as
    written, would match a bare file name in it that ``_IDENT`` does not try (after a ``-``),
    or -1 when ``_IDENT`` itself reaches the run's first possible start)."""
    while k < len(runs):
        s, e = runs[k]
        if e <= pos:
            k += 1
            continue
        if pos <= s and text[s] in _NAME_START:
            return k, -1
        dash = _DASH_START.search(text, max(pos - 1, s), e)
        if dash is None:
            k += 1
            continue
        return k, dash.start() + 1
    return k, -1


def _ident_matches(text: str) -> list[str]:
    """Every match of the identifier rule (the six alternatives above), left to right."""
    runs = [(m.start(), m.end()) for m in _GOOD_RUN.finditer(text)]
    if not runs:
        return [m.group(0) for m in _IDENT.finditer(text)]
    out: list[str] = []
    pos = 0
    k, cand = _next_dash_start(text, runs, 0, 0)
    while True:
        for m in _IDENT.finditer(text, pos):
            if 0 <= cand <= m.start():
                break
            out.append(m.group(0))
            pos = m.end()
            if k < len(runs) and pos > runs[k][0]:
                k, cand = _next_dash_start(text, runs, k, pos)
        else:
            if cand < 0:
                return out
        tail = _FILE_TAIL.match(text, runs[k][1])
        assert tail is not None  # the run was found by that lookahead
        out.append(text[cand:tail.end()])
        pos = tail.end()
        k, cand = _next_dash_start(text, runs, k + 1, pos)


@lru_cache(maxsize=65536)
def identifiers(text: str) -> frozenset[str]:
    """The identifiers of a text (cached: the same message bodies recur at every step)."""
    out = set()
    for match in _ident_matches(text):
        term = match.strip(".-/")
        if len(term) >= 4 and not term.isdigit():
            out.add(term)
    return frozenset(out)


_NAMES_LIST = re.compile(r"\s?\[names: [^\]]*\]")
_STUB_HEAD = re.compile(r"^\[contextfork: \d+ lines \(L\d+-L?\d+\) already shown in .*\]$")


@lru_cache(maxsize=65536)
def content_text(text: str) -> str:
    """The text without renderer-added lists: ``[names: …]`` and the signature lines that
    follow a dedupe stub (the stub header itself names only steps and line numbers)."""
    if "[names: " in text:
        # Only up to the last "]": a list opened after it cannot close, and each such opening
        # rescanned the rest of the text (quadratic).
        cut = text.rfind("]") + 1
        text = _NAMES_LIST.sub("", text[:cut]) + text[cut:]
    if "[contextfork: " not in text:
        return text
    out: list[str] = []
    in_stub = False
    for line in text.splitlines(keepends=True):
        if _STUB_HEAD.match(line.rstrip("\r\n")):
            in_stub = True
            continue
        if in_stub and is_signature(line):
            continue
        in_stub = False
        out.append(line)
    return "".join(out)


def content_identifiers(text: str) -> frozenset[str]:
    return identifiers(content_text(text))


class VisibleIdentifiers:
    """The identifiers visible in the current prompt, updated by diff from the last call."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._prev: list[Msg] = []

    def update(self, msgs: Sequence[Msg], first_diff: int) -> None:
        for m in self._prev[first_diff:]:
            self.counts.subtract(content_identifiers(m.content))
        for m in msgs[first_diff:]:
            self.counts.update(content_identifiers(m.content))
        self._prev = list(msgs)

    def __contains__(self, term: str) -> bool:
        return self.counts.get(term, 0) > 0


class CarriageTracker:
    """Per session: where each identifier first appeared in tool output (shared by policies)."""

    def __init__(self, outputs_by_step: dict[int, str], replies_by_step: dict[int, str]) -> None:
        self.first_seen: dict[str, int] = {}
        for s in sorted(outputs_by_step):
            for term in identifiers(outputs_by_step[s]):
                self.first_seen.setdefault(term, s)
        self.replies = replies_by_step

    def wanted(self, t: int) -> frozenset[str]:
        """Identifiers the agent mentions at step t that first came from earlier tool output."""
        return frozenset(
            term for term in identifiers(self.replies.get(t, ""))
            if self.first_seen.get(term, t) < t
        )
