from __future__ import annotations

from contextfork.tokens import count_tokens, estimate_tokens, truncate_to_tokens


def test_count_tokens_is_exact_o200k() -> None:
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2


def test_estimate_is_chars_over_four() -> None:
    assert estimate_tokens("abcdefgh") == 2


def test_truncate_keeps_valid_utf8_prefix() -> None:
    text = "ünïcödé " * 100
    cut = truncate_to_tokens(text, 10)
    assert text.startswith(cut) and count_tokens(cut) <= 10
