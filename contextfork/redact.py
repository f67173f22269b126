"""Secret scrubbing before any byte is stored or exported (gitleaks-style rules).

Each rule has cheap lowercase keywords; its regex runs only when one of them occurs in the text,
so scrubbing a large transcript costs little more than one ``str.lower``. A rule may name one
capture group as the secret, so the surrounding context (``PASSWORD=``, ``https://user:``) stays
readable and only the secret itself becomes ``[REDACTED:<kind>]``. Spans are recorded so a
reader knows exactly what was removed (the one exception to "nothing is lost").
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from functools import cached_property

from contextfork.records import FrozenRecord

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's path)
if TYPE_CHECKING:
    from typing import Final

REDACTION_VERSION = "1"


class Redaction(FrozenRecord):
    """One removed secret: its kind and where its placeholder sits in the redacted text."""

    __match_args__ = ("kind", "start", "end", "original_length")
    kind: Final[str]
    start: Final[int]
    end: Final[int]
    original_length: Final[int]

    def __init__(self, kind: str, start: int, end: int, original_length: int) -> None:
        self.kind = kind
        self.start = start
        self.end = end
        self.original_length = original_length

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "start": self.start,
            "end": self.end,
            "original_length": self.original_length,
        }


class Rule(FrozenRecord):
    """One secret rule. Its regex is compiled on first use: a text reaches it only when one of
    its keywords occurs, and compiling all of them cost ~15 ms of every process that imports
    this module (export, validate, fold) whether or not any text had a keyword."""

    __match_args__ = ("kind", "keywords", "source", "group", "accept", "word_start", "flags")
    kind: Final[str]
    keywords: Final[tuple[str, ...]]
    source: Final[str]
    group: Final[int]
    accept: Final[Callable[[str], bool] | None]
    word_start: Final[bool]  # the match must start a word (see ``_B``)
    flags: Final[int]

    def __init__(
        self, kind: str, keywords: tuple[str, ...], source: str, group: int = 0,
        accept: Callable[[str], bool] | None = None, word_start: bool = False, flags: int = 0,
    ) -> None:  # fmt: skip
        self.kind = kind
        self.keywords = keywords
        self.source = source
        self.group = group
        self.accept = accept
        self.word_start = word_start
        self.flags = flags

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.source, self.flags)


def _entropy(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


_CODE_EXPR = re.compile(r"^[A-Za-z_][\w.]*(\(|\[|$)")
_PLACEHOLDERS = {
    "changeme",
    "password",
    "secret",
    "example",
    "xxxxxxxx",
    "redacted",
    "none",
    "null",
}


def _looks_secret(value: str) -> bool:
    """Assignments: reject code expressions, placeholders and low-entropy words."""
    v = value.strip("'\"")
    if len(v) < 8 or v.lower() in _PLACEHOLDERS or v.startswith(("$", "{", "<", "%", "[REDACTED")):
        return False
    code = _CODE_EXPR.match(v)
    if code and (code.group(1) or not any(ch.isdigit() for ch in v)):
        return False
    return _entropy(v) >= 3.0


def _url_password(value: str) -> bool:
    return not value.startswith(("$", "{", "<", "%")) and value.lower() not in {"password", "pass"}


#: Marks a rule whose match must start a word: checked in code after the match (``_starts_word``)
#: rather than as ``\b`` in the pattern, because it must also hold right after an escaped line
#: end (``\nghp_…`` inside JSON-escaped tool output, where ``n`` and ``g`` are both word
#: characters), and a lookbehind alternation at the front of a pattern costs re its fast scan.
_B = "\x00word-start\x00"


def _r(
    kind: str,
    keywords: tuple[str, ...],
    pattern: str,
    group: int = 0,
    accept: Callable[[str], bool] | None = None,
    flags: int = 0,
) -> Rule:
    word_start = _B in pattern
    return Rule(kind, keywords, pattern.replace(_B, ""), group, accept, word_start, flags)


def _starts_word(text: str, i: int) -> bool:
    if i == 0:
        return True
    c = text[i - 1]
    if not (c.isalnum() or c == "_"):
        return True
    return c in "nrt" and i >= 2 and text[i - 2] == "\\"


# A name holding one of the words. Atomic: a match needs the whole ``[A-Z0-9_]`` run (an ``=``
# or a blank must follow), so once the first word in it is found no other split can do
# better; without the group a long run with many words was retried at each of them
# (``AUTH`` x 5,000 on a line: 1.4 s, quadratic).
_ASSIGN_NAMES = (
    r"(?>[A-Z0-9_]*?(?:SECRET|TOKEN|PASSWORD|PASSWD|PWD|API_?KEY|PRIVATE_KEY|ACCESS_KEY|CREDENTIALS?|AUTH)"
    r"[A-Z0-9_]*+)"
)

RULES: tuple[Rule, ...] = (
    _r(
        "private-key",
        ("private key",),
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:(?!-----BEGIN)[\s\S])*?"
        r"-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----",
    ),
    # A key an excerpt cut off (no END line): the BEGIN line and every body line after it. Body
    # lines are base64 runs of 16+ characters (or PEM headers) separated by whitespace or by
    # escaped line ends (``\n`` inside JSON); prose after the key is kept.
    _r(
        "private-key",
        ("private key",),
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:(?:\s|\\+[nrt])+(?:[A-Za-z0-9+/=]{16,}|(?:Proc-Type|DEK-Info|Comment):[^\n\\]{0,200}))*",
    ),
    _r(
        "aws-access-key-id",
        ("akia", "asia", "abia", "acca"),
        _B + r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    ),
    _r(
        "aws-secret-access-key",
        ("aws",),
        r"(?i)aws.{0,20}?(?:secret|key).{0,20}?['\"=:\s]{1,5}([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        1,
    ),
    _r("gcp-api-key", ("aiza",), _B + r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
    _r("gcp-oauth-client-secret", ("gocspx",), _B + r"GOCSPX-[0-9A-Za-z_-]{28}"),
    _r("google-oauth-access-token", ("ya29.",), _B + r"ya29\.[0-9A-Za-z_-]{20,}"),
    _r("github-pat", ("ghp_",), _B + r"ghp_[0-9A-Za-z]{36}\b"),
    _r("github-oauth", ("gho_",), _B + r"gho_[0-9A-Za-z]{36}\b"),
    _r("github-app-token", ("ghu_", "ghs_"), _B + r"gh[us]_[0-9A-Za-z]{36}\b"),
    _r("github-refresh-token", ("ghr_",), _B + r"ghr_[0-9A-Za-z]{36,76}\b"),
    _r("github-fine-grained-pat", ("github_pat_",), _B + r"github_pat_[0-9A-Za-z_]{60,100}\b"),
    _r("gitlab-pat", ("glpat-",), _B + r"glpat-[0-9A-Za-z_-]{20,}"),
    _r("anthropic-api-key", ("sk-ant-",), _B + r"sk-ant-[a-z0-9]{2,12}-[A-Za-z0-9_-]{32,}"),
    _r(
        "openai-api-key",
        ("sk-proj-", "sk-svcacct-", "sk-admin-", "t3blbkfj"),
        _B + r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})",
    ),
    _r(
        "slack-token",
        ("xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-", "xoxe"),
        _B + r"xox(?:[abprs]|e(?:\.xox[bp])?)-[0-9A-Za-z-]{10,}",
    ),
    _r(
        "slack-webhook",
        ("hooks.slack.com",),
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}",
    ),
    _r(
        "stripe-key",
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
        _B + r"[rs]k_(?:live|test)_[0-9A-Za-z]{10,99}\b",
    ),
    _r("npm-token", ("npm_",), _B + r"npm_[A-Za-z0-9]{36}\b"),
    _r("pypi-token", ("pypi-",), _B + r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"),
    _r("huggingface-token", ("hf_",), _B + r"hf_[A-Za-z]{34}\b"),
    _r("sendgrid-api-key", ("sg.",), _B + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b"),
    _r("twilio-api-key", ("sk",), _B + r"SK[0-9a-f]{32}\b"),
    _r(
        "shopify-token",
        ("shpat_", "shpss_", "shpca_", "shppa_"),
        _B + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b",
    ),
    _r("azure-storage-key", ("accountkey=",), r"AccountKey=([A-Za-z0-9+/]{86}==)", 1),
    # Group 1 is the token. The second branch takes the rest of a run whose first ``eyJ`` is no
    # token: a later ``eyJ`` in the same run ends at the same place, so it fails too, and
    # without the branch each of them rescanned the run (``eyJ`` x 7,000: 0.5 s, quadratic).
    _r(
        "jwt",
        ("eyj",),
        _B + r"(eyJ[A-Za-z0-9_-]{10,}+\.eyJ[A-Za-z0-9_-]{10,}+\.[A-Za-z0-9_-]{10,})"
        r"|eyJ[A-Za-z0-9_-]*+",
        1,
    ),
    _r(
        "bearer-token",
        ("bearer",),
        r"(?i)" + _B + r"authorization\\*[\"']?\s*[:=]\s*\\*[\"']?bearer\s+([A-Za-z0-9._~+/=-]{20,})",
        1,
    ),
    _r(
        "url-credentials",
        ("://",),
        _B + r"[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@'\"]{1,64}:([^\s:/@'\"]{3,128})@[A-Za-z0-9.-]+",
        1,
        _url_password,
    ),
    _r(
        "dotenv-assignment",
        ("secret", "token", "password", "passwd", "pwd", "key", "credential", "auth"),
        r"(?m)^[ \t]*(?:export[ \t]+)?"
        + _ASSIGN_NAMES
        + r"[ \t]*=[ \t]*(['\"]?)([^\s'\"#]{8,})\1[ \t]*(?:#.*)?$",
        2,
        _looks_secret,
    ),
    # The same assignment inside JSON-escaped text (tool output stored as a JSON string): the
    # line starts after an escaped line end or an opening quote and the value stops at one.
    _r(
        "dotenv-assignment",
        ("secret", "token", "password", "passwd", "pwd", "key", "credential", "auth"),
        r"(?:\\[nrt]|[\"'])[ \t]*(?:export[ \t]+)?"
        + _ASSIGN_NAMES
        + r"[ \t]*=[ \t]*(?:\\*['\"])?([^\s'\"#\\]{8,})(?=\\*['\"]|\\+[nrt]|[ \t]*#|[ \t]*$)",
        1,
        lambda v: _looks_secret(v) and any(ch.isdigit() for ch in v),
    ),
    _r(
        "password-field",
        ("password", "passwd", "secret"),
        r"(?i)[\"'](?:password|passwd|client_secret|secret_key)\\*[\"']\s*:\s*\\*[\"']"
        # The shortest value of 8+ characters followed by backslashes and a quote, i.e. up to
        # the last run of backslashes before the closing quote; written so that run is
        # scanned once (``[^"'\s]{8,}?\\*["']`` rescanned it at every length: quadratic).
        r"([^\"'\s]{8}(?:[^\"'\s\\]|\\++(?=[^\"'\s\\]))*+)\\*+[\"']",
        1,
        _looks_secret,
    ),
)

KINDS: tuple[str, ...] = tuple(dict.fromkeys(r.kind for r in RULES))


def placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def rules_by_text(lowered: list[str]) -> list[tuple[Rule, ...]]:
    """The rules one of whose keywords occurs in each of many lowercased texts (the others
    cannot match anywhere in that text), found with one search per keyword over
    their concatenation instead of one per keyword and text (scanning the thousands of short
    strings of a package's JSON files). No keyword holds a line end, so each occurrence in
    the newline-joined text lies inside one of the texts."""
    from bisect import bisect_right

    joined = "\n".join(lowered)
    starts: list[int] = []
    pos = 0
    for text in lowered:
        starts.append(pos)
        pos += len(text) + 1
    hits: dict[int, set[int]] = {}  # text index -> rule numbers; most texts have none
    present = {k for r in RULES for k in r.keywords if k in joined}  # one pass per keyword
    for n, rule in enumerate(RULES):
        for keyword in rule.keywords:
            if keyword not in present:
                continue
            i = joined.find(keyword)
            while i >= 0:
                hits.setdefault(bisect_right(starts, i) - 1, set()).add(n)
                i = joined.find(keyword, i + 1)
    out: list[tuple[Rule, ...]] = [()] * len(lowered)
    for t, found in hits.items():
        out[t] = tuple(RULES[n] for n in sorted(found))
    return out


def find_secrets(text: str, rules: tuple[Rule, ...] | None = None) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, kind) spans in ``text``, sorted by start.

    ``rules``: a subset of ``RULES`` known to hold every rule that can match (``rules_by_text``)."""
    if rules is None:
        rules = RULES
    if not rules:
        return []
    lowered = text.lower()
    spans: list[tuple[int, int, str]] = []
    for rule in rules:
        if not any(k in lowered for k in rule.keywords):
            continue
        for m in rule.pattern.finditer(text):
            if rule.word_start and not _starts_word(text, m.start()):
                continue
            start, end = m.span(rule.group)
            if start < 0 or end <= start:
                continue
            if rule.accept is not None and not rule.accept(m.group(rule.group)):
                continue
            spans.append((start, end, rule.kind))
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0]), s[2]))
    merged: list[tuple[int, int, str]] = []
    for span in spans:
        if merged and span[0] < merged[-1][1]:
            last = merged[-1]
            if span[1] > last[1]:
                merged[-1] = (last[0], span[1], last[2])
            continue
        merged.append(span)
    return merged


def redact_text(text: str, rules: tuple[Rule, ...] | None = None) -> tuple[str, list[Redaction]]:
    """Replace every secret with ``[REDACTED:<kind>]``; offsets refer to the returned text.

    ``rules``: as for ``find_secrets`` (``rules_by_text`` of many texts at once)."""
    spans = find_secrets(text, rules)
    if not spans:
        return text, []
    out: list[str] = []
    records: list[Redaction] = []
    pos = 0
    length = 0
    for start, end, kind in spans:
        chunk = text[pos:start]
        out.append(chunk)
        length += len(chunk)
        ph = placeholder(kind)
        out.append(ph)
        records.append(Redaction(kind, length, length + len(ph), end - start))
        length += len(ph)
        pos = end
    out.append(text[pos:])
    return "".join(out), records


__all__ = [
    "KINDS",
    "REDACTION_VERSION",
    "RULES",
    "Redaction",
    "find_secrets",
    "placeholder",
    "redact_text",
    "rules_by_text",
]
