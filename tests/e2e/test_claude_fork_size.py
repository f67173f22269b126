"""A fork is never bigger than what it replaces (issue 24 item 3), with the real Claude Code.

The size that matters is the first request the resumed session sends: the same prompt, resumed
from the original and from the fork, through the loopback mock. Sizes are the request's
characters (system + messages; both send the same tools).
"""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.mock_anthropic import Reply, Usage
from tests.e2e.rigs import ClaudeRig
from tests.e2e.test_claude_fork import _bash, _fork, _fork_id

QUESTION = "What did you do so far?"


def _size(req: dict[str, Any]) -> int:
    return len(json.dumps({"system": req.get("system"), "messages": req.get("messages")},
                          ensure_ascii=False))  # fmt: skip


def _first_request(claude: ClaudeRig, session_id: str) -> dict[str, Any]:
    claude.mock.script(Reply(text="Resumed.", usage=Usage(input_tokens=2000)))
    claude.prompt(QUESTION, resume=session_id)
    return claude.mock.main_requests()[-1]


def test_a_fork_sends_no_more_than_the_original_before_and_after_a_compact(
    claude: ClaudeRig,
) -> None:
    claude.contextfork("hooks", "install", "--claude", "--project")
    claude.mock.script(
        _bash("seq 1 900 | sed 's/^/line-of-output-/'"),
        _bash("echo small-result-thud"),
        Reply(text="Done with the output.", usage=Usage(input_tokens=6000)),
    )
    sid = str(claude.prompt("Produce some output")["session_id"])
    first = _fork_id(_fork(claude))
    before, forked = _size(_first_request(claude, sid)), _size(_first_request(claude, first))
    print(f"\nbefore /compact: original {before:,} chars, fork {forked:,} chars")
    assert forked <= before

    # After a /compact the large result is no longer sent: a fork would only add its brief.
    claude.prompt("/compact", resume=sid, allowed=())
    claude.mock.script(
        _bash("echo after-compact-bazola"),
        Reply(text="Continued after the compaction.", usage=Usage(input_tokens=3500)),
    )
    claude.prompt("Continue the work", resume=sid)
    sessions = sorted(claude.sessions_dir.glob("*.jsonl"))
    refused = claude.contextfork_json("fork", "--transcript", str(claude.transcript(sid)))
    print(f"after /compact: {refused['data']['nothing_to_save']}")
    assert refused["data"]["fork"] is None
    assert sorted(claude.sessions_dir.glob("*.jsonl")) == sessions  # nothing written

    # A large result after the compaction is sent on every call: now a fork is worth it.
    claude.mock.script(
        _bash("seq 1 900 | sed 's/^/later-output-/'"),
        Reply(text="More output.", usage=Usage(input_tokens=9000)),
    )
    claude.prompt("Produce more output", resume=sid)
    second = _fork_id(_fork(claude, "--transcript", str(claude.transcript(sid))))
    after, forked_after = _size(_first_request(claude, sid)), _size(_first_request(claude, second))
    print(f"after /compact and a new large result: original {after:,} chars, fork {forked_after:,} chars")
    assert forked_after <= after


def test_a_fresh_forks_figure_predicts_its_first_request_within_ten_percent(
    claude: ClaudeRig,
) -> None:
    from tests.e2e.mock_anthropic import ToolUse, request_tokens

    claude.contextfork("hooks", "install", "--claude", "--project")
    measured = Usage(measured=True)  # the mock reports what each request really holds
    claude.mock.script(
        Reply(text="Running a command.", tool_uses=[ToolUse(
            "Bash", {"command": "seq 1 900 | sed 's/^/line-of-output-/'", "description": "Run"})],
            usage=measured),
        Reply(text="Done with the output.", usage=Usage(measured=True)),
    )
    claude.prompt("Produce some output")
    data = _fork(claude)
    predicted = int(data["context_tokens_after"]["total"])
    assert data["context_tokens_after"]["includes_harness_overhead"] is True
    status = claude.contextfork_json("status", "--transcript", str(data["fork"]))["data"]
    assert status["tokens"]["total"] == predicted  # the badge's figure is the same one
    first = _first_request(claude, _fork_id(data))
    actual = request_tokens(first)
    alone = predicted - int(status["tokens"]["harness_overhead"])
    print(f"\nfresh fork: predicted {predicted:,} tokens ({alone:,} without the harness "
          f"overhead), first request {actual:,} ({predicted / actual - 1:+.1%})")
    assert abs(predicted - actual) <= 0.10 * actual
