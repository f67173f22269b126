"""Readable hydration and verified windows (issue 11): the term comes back, metadata does not."""

from __future__ import annotations

from contextfork.cold.readable import readable_step
from contextfork.cold.window import find_windows, verify_window
from contextfork.transcript.model import (
    RawLine,
    Step,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
)


def _step() -> Step:
    return Step(
        index=3,
        blocks=[
            TextBlock(role="assistant", text="Let me check the config."),
            ThinkingBlock(text="private musing"),
            ToolCall(id="t1", name="Bash", input={"command": "cat config/db.yml", "timeout": 30}),
            ToolResult(call_id="t1", content="host: db\nport: 5433\n", exit_code=0),
        ],
        raw=[RawLine(offset=0, text='{"uuid":"u1","cwd":"/x","message":{"usage":{}}}\n')],
    )


def test_readable_form_keeps_words_calls_and_results_without_transport_metadata() -> None:
    text = readable_step(_step())
    assert "Let me check the config." in text
    assert "[tool call: Bash]" in text and "command: cat config/db.yml" in text
    assert "[tool result: Bash, exit 0]\nhost: db\nport: 5433" in text
    assert "uuid" not in text and "cwd" not in text and "usage" not in text
    assert "private musing" not in text
    assert readable_step(_step()) == text  # deterministic


def test_window_delivers_the_line_holding_the_term_from_a_large_node() -> None:
    filler = [f"line {i}: nothing to see here" for i in range(2000)]
    filler[1234] = "ERROR: PaymentGatewayTimeout after 30s on /v1/charge"
    text = "\n".join(filler) + "\n"
    windows = find_windows(text, ["PaymentGatewayTimeout"], context=2, max_bytes=1000)
    assert len(windows) == 1
    w = windows[0]
    assert "PaymentGatewayTimeout" in w.text and w.text.count("\n") == 5
    assert w.length < 1000 and verify_window(text, w)
    assert text.encode()[w.offset : w.offset + w.length].decode() == w.text


def test_window_matches_whole_tokens_only_and_merges_neighbours() -> None:
    text = "support ticket\nport 5433\nthe port again\n" + "x\n" * 50 + "port far below\n"
    windows = find_windows(text, ["port"], context=1)
    assert [w.text.splitlines()[0] for w in windows] == ["support ticket", "x"]
    assert all("port" in w.terms for w in windows)


def test_window_prefers_regions_holding_more_terms() -> None:
    text = "alpha only\n" + "x\n" * 20 + "alpha and beta.py together\n"
    windows = find_windows(text, ["alpha", "beta.py"], context=0)
    assert windows[0].text == "alpha and beta.py together\n"


def test_tampered_window_does_not_verify() -> None:
    text = "a\nsecret sauce here\nb\n"
    w = find_windows(text, ["sauce"], context=0)[0]
    assert verify_window(text, w)
    assert not verify_window(text.replace("sauce", "gravy"), w)


def test_oversized_single_line_is_cut_on_a_utf8_boundary() -> None:
    text = "é" * 3000 + " needle " + "é" * 3000 + "\n"
    w = find_windows(text, ["needle"], max_bytes=500)[0]
    assert w.length <= 500 and "needle" in w.text and verify_window(text, w)
