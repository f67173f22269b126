"""Terms of a text for the recall index: one normalization so prompts and nodes meet.

Normalization is NFC + casefold with the Turkish dotted/dotless i folded to ``i`` (so
``İSTANBUL``, ``ıstanbul`` and ``istanbul`` are one term). Files keep their full extension
(``package.json`` is one term, never ``package``), shell commands and error names are kept as
their own kinds, and English stopwords are dropped. Everything returned is sorted, so the same
text always yields the same bytes.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

PREFIX_MIN = 5
PREFIX_MAX_EXTRA = 3

STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "done", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "let", "me", "more", "most", "my", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "us", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yes", "ok", "okay", "please", "also", "use", "using", "used"]
)

# A file term is the first group of
#   (?<![\w/.-])((?:/|~/)?(?:[\w@~+.-]+/)*[\w@~+-]*[\w+-]\.EXT(?:\.[A-Za-z0-9]{1,10})*)(?![\w-])
# found left to right (``_file_matches``). Tried at every position that pattern costs the rest
# of the path-like run after it, and ``@ ~ +`` (in the run, not in the lookbehind) let it start
# after each of them: 20 KB of ``@`` took 16 s. The scan below gives the same matches in linear
# time. Within a *chain* (parts of ``[\w@~+.-]`` joined by single ``/``), a later start can only
# follow an ``@ ~ +``, and the first start the pattern tries settles every later one: the
# parts it could end in are the chain's later parts, whatever the start, so after that first
# try (a match or not) no later start in the chain can end in a later part, only in its own
# part with no ``/`` (``_FILE_OWN``). So ``_FILE`` tries the full pattern once per chain; when
# an ``@ ~ +`` follows in the chain (group 2, or its third branch, which takes the rest of the
# chain after a failed try), the own-part form takes the chain's other starts, each skipping
# the rest of its ``[\w@~+-]`` run on failure (a later start in that run meets the same dot).
_EXT = r"\.(?:[A-Za-z][A-Za-z0-9]{0,9})(?:\.[A-Za-z0-9]{1,10})*"
_SOFT_AHEAD = r"[\w.-]*+(?:/[\w.-]++)*+(?:(?<=[\w.-])/)?[@~+]"  # an @ ~ + further in the chain
_FILE = re.compile(
    r"(?<![\w/.-])(?:((?:/|~/)?(?:[\w@~+.-]+/)*[\w@~+-]*[\w+-]" + _EXT + r")(?![\w-])"
    r"(?:(?=(" + _SOFT_AHEAD + r"))|)"
    r"|(?=(?:/(?=[\w@~+.-]))?" + _SOFT_AHEAD + r")(?:/?[\w@~+.-]++(?:/[\w@~+.-]++)*+|/))"
)
_FILE_CHAIN = re.compile(r"[\w@~+.-]*+(?:/[\w@~+.-]++)*+")
_FILE_OWN = re.compile(r"(?<=[@~+])(?:([\w@~+-]*[\w+-]" + _EXT + r")(?![\w-])|[\w@~+-]++)")
SUFFIX_PARTS = 6  # a path is indexed under its last 2..6 components too
_ERROR = re.compile(
    r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception|Violation|Failure|Fault|Timeout|Refused|Denied)|E[A-Z]{3,}|[A-Z]{1,4}\d{3,5})\b"
)
_WORD = re.compile(r"\w+")
_BACKTICK = re.compile(r"`([^`\n]{2,200})`")
# ``^[^\S\n]*``, not ``^\s*``: the same matches (a ``$`` line is found from its own line start),
# without every line start of a blank region rescanning the whole region.
_SHELL_LINE = re.compile(r"(?m)^[^\S\n]*\$\s+(\S[^\n]{0,200})$")
_NOT_EXT = frozenset({"e", "g", "i", "etc", "vs", "com", "org", "io", "net"})
_STEP_REF = re.compile(r"\bsteps?\s+#?(\d{1,6})\b|#(\d{1,6})\b")

_TR = str.maketrans({"İ": "i", "ı": "i"})


def normalize(text: str) -> str:
    """NFC + Turkish-aware casefold (İ/ı → i), NFC again after folding."""
    folded = unicodedata.normalize("NFC", text).translate(_TR).casefold()
    return unicodedata.normalize("NFC", folded.replace("i\u0307", "i"))


@dataclass(frozen=True)
class Extracted:
    """The terms of one text by kind (all normalized, sorted, unique)."""

    words: tuple[str, ...]
    files: tuple[str, ...]
    commands: tuple[str, ...]
    errors: tuple[str, ...]

    def all_terms(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.words) | set(self.files) | set(self.errors)))


def _file_matches(text: str) -> list[str]:
    """Every file term of ``text`` in order (see ``_FILE``)."""
    out: list[str] = []
    pos = 0
    while True:
        for m in _FILE.finditer(text, pos):
            if m.group(1) is not None:
                out.append(m.group(1))
                if m.group(2) is None:
                    continue  # no other start in this chain
                lo = m.end()
                chain = _FILE_CHAIN.match(text, lo)
                end = chain.end() if chain else lo
            else:
                lo, end = m.start() + 1, m.end()
            out.extend(o.group(1) for o in _FILE_OWN.finditer(text, lo, end) if o.group(1))
            if end > m.end():
                pos = end
                break  # go on after the chain
        else:
            return out


def _files(text: str) -> set[str]:
    out = set()
    for cand in _file_matches(text):
        ext = cand.rsplit(".", 1)[-1]
        stem = cand.rsplit(".", 1)[0]
        if ext.lower() in _NOT_EXT or stem.replace(".", "").isdigit():
            continue
        out.add(normalize(cand))
        out.update(path_suffixes(normalize(cand)))
    return out


def path_suffixes(path: str) -> list[str]:
    """The basename and the last 2..SUFFIX_PARTS components of a path (not the path itself), so
    `lib/web/router.ex` in a prompt meets `/home/u/app/lib/web/router.ex` in a tool output."""
    parts = [p for p in path.split("/") if p and p != "~"]
    out = []
    for n in range(1, min(len(parts), SUFFIX_PARTS + 1)):
        suffix = "/".join(parts[-n:])
        if suffix != path:
            out.append(suffix)
    return out


def _commands(text: str) -> set[str]:
    out = set()
    for m in _SHELL_LINE.finditer(text):
        out.add(" ".join(m.group(1).split()))
    for m in _BACKTICK.finditer(text):
        inner = m.group(1).strip()
        if " " in inner and re.match(r"^[a-z][\w.-]*\s", inner):
            out.add(" ".join(inner.split()))
    return {normalize(c) for c in out}


def words(text: str) -> list[str]:
    """Plain word terms in order of appearance (stopwords and 1-char tokens dropped)."""
    out = []
    for w in _WORD.findall(normalize(text)):
        if len(w) < 2 or w in STOPWORDS or w.strip("_") == "":
            continue
        out.append(w)
    return out


def extract(text: str, *, extra_commands: tuple[str, ...] = ()) -> Extracted:
    files = _files(text)
    errors = {normalize(m.group(1)) for m in _ERROR.finditer(text)}
    commands = _commands(text) | {
        normalize(" ".join(c.split())) for c in extra_commands if c.strip()
    }
    return Extracted(
        words=tuple(sorted(set(words(text)))),
        files=tuple(sorted(files)),
        commands=tuple(sorted(commands)),
        errors=tuple(sorted(errors)),
    )


def prompt_terms(text: str) -> list[str]:
    """The distinct terms of a prompt, in first-appearance order (files first, then words).

    A file term makes its own word parts redundant (``package.json`` does not also ask for
    ``package`` and ``json``), so exact retrieval is not diluted.
    """
    files = sorted(_files(text))
    # One term per path as written: its shorter forms are looked up through the index
    # (scan expands a path term to its suffixes), not counted as more terms.
    forms = {s for f in files for s in path_suffixes(f)}
    files = [f for f in files if f not in forms or not any(f in path_suffixes(g) for g in files if g != f)]
    covered = set()
    for f in files:
        covered.update(words(f))
    errors = sorted({normalize(m.group(1)) for m in _ERROR.finditer(text)})
    out: list[str] = []
    seen: set[str] = set()
    for t in [*files, *errors, *words(text)]:
        if t in seen or (t in covered and t not in errors):
            continue
        seen.add(t)
        out.append(t)
    return out


def prefix_eligible(term: str) -> bool:
    """Prefix matching is only for plain alphabetic words: never numbers, versions, files."""
    return len(term) >= PREFIX_MIN and term.isalpha()


def prefix_partners(term: str, vocabulary_range: list[str]) -> list[str]:
    """Terms from ``vocabulary_range`` (index terms starting with ``term``) that safely match it."""
    if not prefix_eligible(term):
        return []
    return [
        v
        for v in vocabulary_range
        if v != term
        and v.isalpha()
        and v.startswith(term)
        and len(v) - len(term) <= PREFIX_MAX_EXTRA
    ]


def shorter_partners(term: str) -> list[str]:
    """Candidate shorter forms of ``term`` (postgresql → postgresq, postgres, postgre)."""
    if not term.isalpha() or len(term) <= PREFIX_MIN:
        return []
    low = max(PREFIX_MIN, len(term) - PREFIX_MAX_EXTRA)
    return [term[:n] for n in range(len(term) - 1, low - 1, -1)]


def step_refs(text: str) -> list[int]:
    """Earlier steps a text cites ("step 4", "steps 2", "#7"), sorted and unique."""
    out = set()
    for m in _STEP_REF.finditer(text):
        out.add(int(m.group(1) or m.group(2)))
    return sorted(out)


__all__ = [
    "PREFIX_MAX_EXTRA",
    "PREFIX_MIN",
    "STOPWORDS",
    "Extracted",
    "extract",
    "normalize",
    "prefix_eligible",
    "prefix_partners",
    "prompt_terms",
    "shorter_partners",
    "step_refs",
    "words",
]
