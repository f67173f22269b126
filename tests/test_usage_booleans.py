"""A JSON ``true`` is never a number of tokens.

Python's ``bool`` is an ``int`` (``isinstance(True, int)``, ``int(True) == 1``), so a reader
that checks for an int alone counts a ``true`` in a usage field as one token, and a context
window of ``true`` as one token wide. Every place that reads a recorded token figure is fed one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork.transcript import load_session
from contextfork.transcript.model import Usage
from tests.helpers import cli
from tests.transcript.builders import CC, text, write_jsonl

T = True  # the value under test, wherever a count belongs


def _claude_code(path: Path) -> Path:
    cc = CC()
    rec = cc.assistant("m1", [text("hi")], usage=(3, 7, 0, 0))
    rec["message"]["usage"].update(cache_creation_input_tokens=T, cache_read_input_tokens=T)
    return write_jsonl(path, [cc.user("go", parent=None), rec])


def _pi(path: Path) -> Path:
    return write_jsonl(path, [
        {"type": "session", "id": "p", "timestamp": "2025-11-20T10:00:00Z", "cwd": "/p"},
        {"type": "message", "timestamp": "2025-11-20T10:00:01Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "go"}]}},
        {"type": "message", "timestamp": "2025-11-20T10:00:02Z", "message": {
            "role": "assistant", "content": [{"type": "text", "text": "hi"}],
            "usage": {"input": 3, "output": 7, "cacheRead": T, "cacheWrite": T}}},
    ])


def _codex(path: Path) -> Path:
    def rec(kind: str, payload: dict[str, object]) -> dict[str, object]:
        return {"timestamp": "2025-12-28T12:00:00.000Z", "type": kind, "payload": payload}

    usage = {"input_tokens": 3, "cached_input_tokens": T, "output_tokens": 7}
    return write_jsonl(path, [
        rec("session_meta", {"id": "cx", "cwd": "/w"}),
        rec("response_item", {"type": "message", "role": "user",
                              "content": [{"type": "input_text", "text": "go"}]}),
        rec("response_item", {"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": "hi"}]}),
        rec("event_msg", {"type": "token_count",
                           "info": {"total_token_usage": usage, "last_token_usage": usage}}),
    ])


def _mini_swe(path: Path) -> Path:
    usage = {"prompt_tokens": 3, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": T}}
    path.write_text(json.dumps({
        "info": {"exit_status": "Submitted"}, "trajectory_format": "mini-swe-agent-1",
        "messages": [
            {"role": "system", "content": "s"}, {"role": "user", "content": "go"},
            {"role": "assistant", "content": "hi", "extra": {"response": {"usage": usage}}},
        ],
    }))
    return path


def _openai_chat(path: Path) -> Path:
    usage = {"prompt_tokens": 3, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": T}}
    path.write_text(json.dumps([{"role": "user", "content": "go"},
                                {"role": "assistant", "content": "hi", "usage": usage}]))
    return path


@pytest.mark.parametrize("build", [_claude_code, _pi, _codex, _mini_swe, _openai_chat],
                         ids=lambda f: f.__name__.strip("_"))
def test_a_true_in_recorded_usage_counts_no_token(build: object, tmp_path: Path) -> None:
    assert callable(build)
    s = load_session(build(tmp_path / "t.json"))
    usage = [st.usage for st in s.steps if st.usage is not None]
    assert usage == [Usage(input_tokens=3, output_tokens=7)], s.format


def test_the_ccusage_billing_counts_no_true(tmp_path: Path) -> None:
    from contextfork.telemetry.scan import billing_totals

    totals = billing_totals(_claude_code(tmp_path / "s.jsonl"))
    assert (totals["input_tokens"], totals["output_tokens"], totals["cache_creation_input_tokens"],
            totals["cache_read_input_tokens"], totals["total_tokens"]) == (3, 7, 0, 0, 10)


def test_a_pi_compaction_with_tokens_before_true_has_no_size(tmp_path: Path) -> None:
    f = _pi(tmp_path / "pi.jsonl")
    with open(f, "a") as fh:
        fh.write(json.dumps({"type": "compaction", "timestamp": "2025-11-20T10:00:03Z",
                             "summary": "so far", "tokensBefore": T}) + "\n")
    s = load_session(f)
    assert [c.pre_tokens for c in s.compactions] == [None]


def test_the_proxy_reads_no_token_from_a_true_in_the_api_usage() -> None:
    from contextfork.proxy.usage import normalise

    assert normalise({"input_tokens": T, "output_tokens": 7, "cache_read_input_tokens": T}) == {
        "output_tokens": 7}
    openai = {"input_tokens": 10, "output_tokens": 7, "input_tokens_details": {"cached_tokens": T}}
    assert normalise(openai) == {"input_tokens": 10, "output_tokens": 7}


def test_the_status_line_ignores_a_context_window_of_true(tmp_path: Path) -> None:
    f = _claude_code(tmp_path / "s.jsonl")
    payload = {"session_id": "s", "transcript_path": str(f), "cwd": str(tmp_path)}
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    lines = [cli("statusline", input=json.dumps({**payload, "context_window": w}), env=env,
                 cwd=tmp_path).stdout for w in ({"context_window_size": T}, None)]
    assert lines[0] == lines[1] and "%" not in lines[0]


def test_the_pi_worker_ignores_a_context_window_of_true() -> None:
    from contextfork.harness.pi.worker import Worker

    w = Worker()
    sized = w.session({"session": "a", "context_window": T}).policy
    assert sized == w.session({"session": "b"}).policy
    assert sized != w.session({"session": "c", "context_window": 200_000}).policy
