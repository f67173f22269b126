"""The scrubber catches a private key cut off by an excerpt, and secrets inside JSON-escaped text."""

from __future__ import annotations

import json

import pytest

from contextfork.redact import find_secrets, redact_text
from tests.cold.test_redact import PLANTED

BODY1 = PLANTED["private-key"][1].splitlines()[1]
BODY2 = PLANTED["private-key"][1].splitlines()[2]
PASSWORD = PLANTED["password-field"][1]
DOTENV = PLANTED["dotenv-assignment"][1]
BEARER = PLANTED["bearer-token"][1]


def _clean(text: str, *secrets: str) -> str:
    out, spans = redact_text(text)
    for s in secrets:
        assert s not in out, out
    assert spans
    return out


@pytest.mark.parametrize(
    "text",
    [
        f"-----BEGIN RSA PRIVATE KEY-----\n{BODY1}\n{BODY2[:30]}",
        f"cat id_rsa\n-----BEGIN OPENSSH PRIVATE KEY-----\n{BODY1}\n{BODY2}\n… (truncated)",
        f"-----BEGIN PRIVATE KEY----- {BODY1} {BODY2[:20]}",  # whitespace collapsed by an excerpt
        json.dumps({"stdout": f"-----BEGIN EC PRIVATE KEY-----\n{BODY1}\n{BODY2}"}),
    ],
)
def test_a_private_key_without_its_end_line_is_redacted(text: str) -> None:
    out = _clean(text, BODY1, BODY2[:20])
    assert "[REDACTED:private-key]" in out


def test_a_cut_key_keeps_the_prose_after_it() -> None:
    text = f"-----BEGIN RSA PRIVATE KEY-----\n{BODY1}\n\nthen the build failed"
    out = _clean(text, BODY1)
    assert out.endswith("then the build failed")


def test_a_whole_key_is_one_redaction() -> None:
    _out, spans = redact_text(PLANTED["private-key"][1] + "\nafter\n")
    assert [s.kind for s in spans] == ["private-key"]


@pytest.mark.parametrize("dumps", [1, 2])
def test_a_password_field_inside_json_escaped_text_is_redacted(dumps: int) -> None:
    text: str = json.dumps({"user": "a", "password": PASSWORD})
    for _ in range(dumps):
        text = json.dumps({"tool_output": text})
    assert '\\"password' in text
    _clean(text, PASSWORD)


def test_a_dotenv_line_inside_json_escaped_text_is_redacted() -> None:
    text = json.dumps({"stdout": f"cat .env\nDEBUG=1\nSTRIPE_SECRET={DOTENV}\nPORT=80\n"})
    out = _clean(text, DOTENV)
    assert "PORT=80" in out and "DEBUG=1" in out


def test_a_bearer_header_inside_json_escaped_text_is_redacted() -> None:
    text = json.dumps({"headers": json.dumps({"Authorization": f"Bearer {BEARER}"})})
    _clean(text, BEARER)


def test_escaped_placeholders_and_code_are_still_not_secrets() -> None:
    text = json.dumps(
        {"out": 'SECRET_KEY = settings.SECRET_KEY\n{"password": "changeme"}\nPASSWORD=${DB_PASS}\n'}
    )
    assert find_secrets(text) == []


def test_a_token_right_after_an_escaped_line_end_is_redacted_but_not_inside_a_word() -> None:
    pat = PLANTED["github-pat"][1]
    _clean(json.dumps({"stdout": f"token:\n{pat}\n"}), pat)
    _clean(json.dumps({"headers": f"x\nAuthorization: Bearer {BEARER}"}), BEARER)
    assert find_secrets("prefix" + pat) == []
