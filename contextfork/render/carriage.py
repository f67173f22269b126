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

_IDENT = re.compile(
    r"(?:[\w.-]*/)+[\w.-]+"  # paths with a slash
    r"|\b[A-Za-z_][\w-]*\.(?:py|pyi|js|jsx|ts|tsx|json|ya?ml|toml|md|rst|txt|cfg|ini|sh|rs|go|"
    r"java|c|h|cpp|hpp|rb|php|html|css|lock|sql)\b"  # bare file names
    r"|\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b"  # dotted symbols (os.path.join)
    r"|\b[A-Za-z]\w*(?:Error|Exception|Warning)\b"  # error names
    r"|\b_*[a-z][a-z0-9]*_[a-z0-9_]+\b"  # snake_case
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b"  # CamelCase
)


@lru_cache(maxsize=65536)
def identifiers(text: str) -> frozenset[str]:
    """The identifiers of a text (cached: the same message bodies recur at every step)."""
    out = set()
    for m in _IDENT.finditer(text):
        term = m.group(0).strip(".-/")
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
        text = _NAMES_LIST.sub("", text)
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
