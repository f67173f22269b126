"""The IPCF-1.1 normative projection (``ipcf-projection-v2``): identities any peer can recompute.

A store written here must give the same ``projection_sha256`` as any other IPCF-1.1
implementation for the same step, so the projection is exactly the eight normative fields —
projection version, step id, the NFC content without trailing whitespace, and the
de-duplicated, sorted identifiers, files, commands and errors, plus the SHA-256 of the active
folding policy — as canonical JSON. The four term lists use the specification's extraction
rules (below), which are deliberately simpler than the recall index's own terms
(``identifiers.extract``: full-extension files, prefixes, error names): those richer terms are
kept in the node outside the projection (``index_terms``) and drive our page-in.

The policy hash is taken over the IPCF view of our policy (the fields the specification
names, with our caps in them), so a store on default caps hashes like the reference default.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from contextfork.hashing import canonical_sha256

PROJECTION_V2 = "ipcf-projection-v2"

_EN_STOP = {
    "and", "the", "for", "with", "this", "that", "from", "are", "was", "were", "will", "can",
    "has", "had", "have", "what", "which", "how", "did", "you", "all", "any", "not", "but",
    "we", "is", "it", "on", "at", "to", "of", "in", "do", "be", "or", "an", "as", "if", "by",
    "so", "no", "up", "my",
}  # fmt: skip
_TR_STOP = {
    "ve", "ile", "için", "olan", "bir", "bu", "şu", "daha", "gibi", "kadar", "diye", "veya",
    "ya", "ama", "fakat", "lakin", "çünkü", "böyle", "nasıl", "neden", "ne", "hangi", "var",
    "yok", "şey", "mi", "mu", "mü", "mı",
}  # fmt: skip

# The specification's four patterns, in a form whose cost is linear in the text and whose
# matches are exactly the specification's (tests/adversarial/test_linear_extraction.py keeps the
# specification's own patterns as the oracle and compares them on generated and recorded text):
#
# - _FILES: the specification's ``(?:[\w.-]+[/\\])+[\w.-]+\.[a-zA-Z0-9]+|[\w.-]+\.(?:py|…)``
#   tried at every position costs the length of the run of ``[\w.-]`` after it (20 KB of dots:
#   7 s). A match can only start where a *chain* starts: a ``[\w.-]`` character that follows
#   neither a ``[\w.-]`` character nor a single separator after one (``a/b/c`` is one chain,
#   ``a//b`` two). Proof: the parts of a chain after its first separator are the same whatever
#   the start inside its first part, so if the chain's start fails both alternatives fail at
#   every later start in it, and after a match the rest of the chain holds no further candidate
#   (the match took its last file-like part). The two bounded lookbehinds skip those starts, so
#   each chain is scanned a fixed number of times.
# - _COMMANDS: ``^\s*`` crossed line ends, so every line start of a blank region rescanned the
#   region (20 KB of newlines: 6.6 s). ``^[^\S\n]*`` stops at the line end; the same command
#   is found from the last line start before it, with the same end, so the list is the same.
# - _ERRORS and _IDENT start only at word boundaries and scan one word: linear as written.
_FILES = re.compile(
    r"(?<![\w.-])(?<![\w.-][/\\])"
    r"(?:(?:[\w.-]+[/\\])+[\w.-]+\.[a-zA-Z0-9]+"
    r"|[\w.-]+\.(?:py|js|ts|json|md|sql|sh|yml|yaml|html|css|rs|go|cs))"
)
_COMMANDS = re.compile(r"^[^\S\n]*(?:\$|>)\s*([a-zA-Z0-9_.-]+(?:\s+[^;\n\r]+)?)", re.MULTILINE)
_ERRORS = re.compile(
    r"\b(?:[A-Z][a-zA-Z0-9]+Error|[A-Z][a-zA-Z0-9]+Exception|FATAL|PANIC|Traceback)\b"
    r"|HTTP\s+[45]\d{2}|\b[A-Z]{2,}_[A-Z0-9_]+_ERROR\b"
)
_IDENT = re.compile(r"\b[^\W\d]\w{2,}\b|\b[0-9]{3,}\b")


def fold_token(word: str) -> str:
    """Lowercase + NFC, combining dot above dropped, dotless i folded (the spec's token fold)."""
    return unicodedata.normalize("NFC", word.lower()).replace("\u0307", "").replace("ı", "i")


_STOP = {fold_token(w) for w in _EN_STOP | _TR_STOP} | _EN_STOP | _TR_STOP


def extract_files(text: str) -> list[str]:
    return sorted({m.replace("\\", "/") for m in _FILES.findall(text)})


def extract_commands(text: str) -> list[str]:
    return sorted({m.strip() for m in _COMMANDS.findall(text) if m.strip()})


def extract_errors(text: str) -> list[str]:
    return sorted(set(_ERRORS.findall(text)))


def extract_identifiers(text: str) -> list[str]:
    words = _IDENT.findall(unicodedata.normalize("NFC", text))
    return sorted({f for f in (fold_token(w) for w in words) if f not in _STOP})


def normative_terms(summary: str, content: str) -> dict[str, list[str]]:
    """The four projection lists of one step, from its NFC summary and payload text."""
    combined = unicodedata.normalize("NFC", summary) + "\n" + unicodedata.normalize("NFC", content)
    return {
        "identifiers": extract_identifiers(combined),
        "files": extract_files(combined),
        "commands": extract_commands(combined),
        "errors": extract_errors(combined),
    }


def ipcf_policy_view(policy: dict[str, Any]) -> dict[str, Any]:
    """Our page-in policy in the specification's field names (what a peer hashes)."""
    return {
        "policy_version": "1.1",
        "max_rehydration_tokens_per_call": policy.get("per_call_token_cap", 3000),
        "max_rehydration_tokens_per_turn": policy.get("per_turn_token_cap", 3500),
        "scope": "single_turn",
        "eviction_trigger": "after_response",
        "integrity_verification": True,
    }


def folding_policy_hash(policy: dict[str, Any]) -> str:
    return canonical_sha256(ipcf_policy_view(policy))


def projection_v2(node: dict[str, Any]) -> dict[str, Any]:
    """The eight normative fields of a node whose projection_version is ipcf-projection-v2."""
    content = str(node["content"])
    return {
        "projection_version": PROJECTION_V2,
        "step_id": node["step_id"],
        "normalized_content": unicodedata.normalize("NFC", content).rstrip(),
        "identifiers": sorted(set(node["identifiers"])),
        "files": sorted(set(node["files"])),
        "commands": sorted(set(node["commands"])),
        "errors": sorted(set(node["errors"])),
        "folding_policy_hash": node["policy_sha256"],
    }
