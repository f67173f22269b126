"""~35 planted secrets (every scrubber rule, plus cut keys and JSON-escaped forms) for sink tests.

Values come from ``tests.cold.test_redact.PLANTED`` (generated at test time, never committed).
``fragments`` are the strings that must never appear in any stored or sent byte: each secret,
and each line of a multi-line one.
"""

from __future__ import annotations

import json

from tests.cold.test_redact import PLANTED, _s

AN = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _key_body(n: int) -> list[str]:
    return [_s(AN + "/+", 64) for _ in range(n)]


_CUT = _key_body(3)
_ESC_PW = _s(AN, 15) + "4Kq"
_ESC_ENV = _s(AN, 13) + "8Lw"
_ESC_BEARER = _s(AN, 36)
_CMD_TOKEN = "ghp_" + _s(AN, 36)
_CMD_DB = _s(AN, 14) + "3Zp"

EXTRA: dict[str, tuple[str, str, list[str]]] = {
    "cut-private-key": (
        "{}",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(_CUT) + "\n" + _s(AN, 30),
        _CUT,
    ),
    "escaped-password-field": (
        "{}", json.dumps({"out": json.dumps({"user": "u", "password": _ESC_PW})}), [_ESC_PW]
    ),
    "escaped-dotenv": ("{}", json.dumps({"stdout": f"A=1\nDB_PASSWORD={_ESC_ENV}\nB=2"}), [_ESC_ENV]),
    "escaped-bearer": (
        "{}", json.dumps({"h": json.dumps({"Authorization": f"Bearer {_ESC_BEARER}"})}), [_ESC_BEARER]
    ),
}

#: A failing shell command that carries three secrets (the failed-commands seed stores it).
FAILED_COMMAND = (
    f"curl -fsS -H 'Authorization: Bearer {_ESC_BEARER}' https://api.example.com && "
    f"GITHUB_TOKEN={_CMD_TOKEN} gh release list && psql postgres://admin:{_CMD_DB}@db.internal/app"
)
COMMAND_FRAGMENTS = [_ESC_BEARER, _CMD_TOKEN, _CMD_DB]


def corpus_lines() -> list[str]:
    """One text line (or block) per planted secret."""
    out = [t.format(s) for t, s in PLANTED.values()]
    out += [t.format(s) for t, s, _f in EXTRA.values()]
    return out


def fragments() -> list[str]:
    """Every string that must never be stored or sent."""
    found: list[str] = []
    for _t, secret in PLANTED.values():
        found += [line for line in secret.splitlines() if len(line) >= 8 and "-----" not in line]
    for _t, _v, frags in EXTRA.values():
        found += frags
    return found + COMMAND_FRAGMENTS


def leaks(data: bytes) -> list[str]:
    text = data.decode("utf-8", "replace")
    return [f for f in fragments() if f in text]
