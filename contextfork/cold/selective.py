"""Which words of a prompt name something in the store, decided without a list of one phrasing.

Page-in used to drop a hand-made list of asking words ("find", "earlier"): exactly the words
of the dev probes' template, so "Where did X come from?" or "Pull up X again" paid for steps
that merely held "come" or "pull". The rule now has three parts, none tied to a phrasing:

- a general English stop-word list: function words and the commonest verbs and adverbs of
  ordinary speech (the kind of list any search engine ships), not words seen in our probes;
- document frequency over the store: a plain word that more than ``COMMON_SHARE`` of the
  store's steps hold (at least ``COMMON_MIN`` steps) names nothing in particular;
- the shape of what was typed: an identifier (a path, a file, an error name, a word with ``_``,
  a digit, a dot or a dash, or CamelCase with two humps) names one thing. When a prompt names
  one, its plain words only rank; they never select steps of their own.

A prompt with no selective term pages in nothing. Runs on the prompt hook's path: stdlib only.
"""

from __future__ import annotations

import re
import sqlite3

from contextfork.cold import index as idx
from contextfork.cold.identifiers import STOPWORDS, normalize

# Function words, the commonest English verbs and adverbs of ordinary speech (in the style of
# the SMART stop list), and the words that steer a conversation rather than name a subject
# (earlier, again, continue, thing). None was added to pass a probe phrasing: the bench's
# plain requests ("Where did X come from?", "Pull up X again so we can fix it.") use words
# this list does not hold ("pull", "fix") and pass by the identifier rule instead.
GENERAL_STOPWORDS = STOPWORDS | frozenset(
    """
    able according across actually afterwards almost alone along already although always
    among another anybody anyhow anyone anything anyway anywhere apart appear around aside ask
    asked asking away back became become becomes becoming beforehand behind believe beside
    besides best better beyond bring brought call called came cannot certain certainly
    change changed clearly come comes coming consider could currently definitely describe
    described despite different doing either else elsewhere enough entirely especially even
    ever every everybody everyone everything everywhere exactly example except far find
    finding found first following former formerly forth get gets getting give given gives
    giving go goes going gone got gotten happen happened happens hardly hello help hence
    hereafter hereby however indeed instead keep keeps kept know knew known knows last lately
    later latter least less lest like liked likely little look looked looking looks made
    mainly make makes making many may maybe mean meant meanwhile might mine moreover mostly
    much must namely near nearly necessary need needed needs neither never nevertheless new
    next nobody none nothing novel nowhere obviously often oh okay old one ones onto others
    otherwise ought outside overall particular particularly per perhaps placed plus possible
    presumably probably put quite rather really reasonably recently regarding regardless
    relatively respectively right said saw say saying says second see seeing seem seemed
    seeming seems seen self selves sensible serious seriously several shall show showed shown
    shows since something sometime sometimes somewhat somewhere soon sorry still sure take
    taken taking tell telling tells thank thanks thanx thats thereafter thereby therefore
    therein thereupon think thinking thought thorough thoroughly though thus together took
    toward towards tried tries truly try trying twice unfortunately unless unlikely upon
    usually various via viz want wanted wants way well went whatever whence whenever
    whereafter whereas whereby wherein whereupon wherever whether whither whoever whole
    whose within without wonder work worked working works yet earlier previously before again
    continue continued go ahead proceed resume thing things stuff something
    """.split()  # noqa: SIM905 - a word list reads better as text
)
COMMON_SHARE = 0.05  # a plain word in more than this share of steps names nothing in particular
COMMON_MIN = 6
STORE_MIN = 20  # below this many steps the store is too small to judge a word by its frequency

_CAMEL = re.compile(r"[A-Z][a-z0-9]+[A-Z][a-z0-9]+")
_WORDISH = re.compile(r"[\w.:/@~+-]+")
# A path as typed, possibly cut short (no extension yet): one slash at least; or a file name
# (a dot inside), possibly cut short.
_PATHISH = re.compile(r"(?<![\w/.~-])((?:~/|/)?[\w@+.-]+(?:/[\w@+.-]*)+|[\w@+-]+\.\w+)")


def identifier_forms(prompt: str) -> set[str]:
    """Normalized tokens of the prompt that are shaped like an identifier (see module doc)."""
    out: set[str] = set()
    for tok in _WORDISH.findall(prompt):
        tok = tok.strip(".:-")
        if len(tok) < 3:
            continue
        if (
            "/" in tok
            or "_" in tok.strip("_")
            or (any(c.isdigit() for c in tok) and any(c.isalpha() for c in tok))
            or "." in tok
            or "-" in tok
            or _CAMEL.search(tok)
        ):
            out.add(normalize(tok))
            out.update(normalize(p) for p in re.split(r"[/.:]", tok) if len(p) >= 3)
    return out


def is_identifier(term: str, forms: set[str]) -> bool:
    """A prompt term is an identifier when it was typed as one (or is a file / error term)."""
    return term in forms or "." in term or "/" in term or not term.isalpha()


def path_prefixes(prompt: str) -> list[str]:
    """Paths typed in the prompt, normalized, in order (complete or cut short)."""
    out: list[str] = []
    for m in _PATHISH.finditer(prompt):
        p = normalize(m.group(1).rstrip(".,;:"))
        if len(p) >= 4 and p not in out:
            out.append(p)
    return out


def prefix_terms(conn: sqlite3.Connection, prefix: str, limit: int = 64) -> list[str]:
    """Index terms that begin with ``prefix`` (a path cut short): the file terms it can mean.

    The terms table is keyed by term, so this is one range read however large the store.
    """
    rows = conn.execute(
        "SELECT term FROM terms WHERE term >= ? AND term < ? LIMIT ?",
        (prefix, prefix + "\U0010ffff", limit + 1),
    ).fetchall()
    out = [str(r[0]) for r in rows if "/" in str(r[0]) or "." in str(r[0])]
    return out[:limit]


def common_words(conn: sqlite3.Connection, terms: list[str], forms: set[str]) -> set[str]:
    """Stop words, and plain words so common in this store that they select nothing."""
    out = {t for t in terms if t in GENERAL_STOPWORDS and not is_identifier(t, forms)}
    total = idx.node_count(conn)
    if total >= STORE_MIN:
        limit = max(COMMON_MIN, int(total * COMMON_SHARE))
        for t in terms:
            if t in out or is_identifier(t, forms):
                continue
            row = conn.execute("SELECT df FROM terms WHERE term=?", (t,)).fetchone()
            if row is not None and int(row[0]) > limit:
                out.add(t)
    return out
