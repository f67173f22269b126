"""The recorded bill users read, pinned to the token: `replay`'s "native as recorded" line (the
figures docs/render-replay.md publishes) and `status`'s billing, on real recorded sessions.

Each figure depends on which recorded count is a cache read and which a cache write; a swap
anywhere (an adapter's usage fields, the bill, the sum) changes a number here."""

from __future__ import annotations

from pathlib import Path

from contextfork.render.policies import parse_policies
from contextfork.render.replay import replay
from contextfork.transcript import load_session
from tests.helpers import cli

CC = "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
PI = "pi/large-session.jsonl"
GEMINI = "mini-swe-agent/django__django-16560.traj.json"


def test_the_recorded_bill_of_the_real_claude_code_session_is_the_published_one(
    transcripts_dir: Path,
) -> None:
    report = replay(load_session(transcripts_dir / CC), parse_policies("native"))
    rec = report.native_recorded
    assert rec is not None
    assert rec.model_dump() == {
        "prompt_tokens": 15_121_271, "cached_tokens": 14_771_617, "cache_write_tokens": 349_474,
        "fresh_tokens": 180, "cost_usd": 10.881448, "bill_usd": 11.853923,
    }
    # opus-4-6 on the 1-hour cache it asked for: $5 fresh, $0.50 read, $10 write per Mtok
    card = report.price_card
    assert (card.input_per_mtok, card.cache_read_per_mtok, card.cache_write_per_mtok,
            card.output_per_mtok, card.ttl_seconds) == (5.0, 0.5, 10.0, 25.0, 3600)
    assert round((180 * 5.0 + 14_771_617 * 0.5 + 349_474 * 10.0) / 1e6, 6) == rec.cost_usd
    assert report.output_tokens == 38_899
    assert round(rec.cost_usd + 38_899 * 25.0 / 1e6, 6) == rec.bill_usd


def test_replay_prints_the_recorded_bill_of_an_implicitly_cached_session(
    transcripts_dir: Path, tmp_path: Path,
) -> None:
    """Gemini has no write price: what is not read is billed as fresh input."""
    r = cli("replay", "--transcript", str(transcripts_dir / GEMINI), "--policy", "native",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert ("native as recorded: 3,354,221 prompt tokens, $1.1669 prompt side, "
            "$1.4363 with output") in text
    assert "cache write none (implicit cache)" in text


def test_status_bills_the_real_pi_session_by_its_recorded_usage(
    transcripts_dir: Path, tmp_path: Path,
) -> None:
    """pi records cacheRead and cacheWrite per call; status sums them as recorded."""
    r = cli("status", "--json", "--transcript", str(transcripts_dir / PI), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.json()["data"]["billing"] == {
        "method": "step-usage", "input_tokens": 1_049, "output_tokens": 83_156,
        "cache_creation_input_tokens": 4_296_232, "cache_read_input_tokens": 43_229_469,
        "total_tokens": 47_609_906, "entries": 453, "files": 1,
    }
