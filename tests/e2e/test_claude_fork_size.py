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


SUMMARY = """<analysis>What happened so far.</analysis>
<summary>
1. Primary Request and Intent:
   The user asked for a long numbered listing with seq and to keep refactoring the tokenizer in src/parser.py.

4. Errors and fixes:
   - The first test run failed on an import of parser.lexer; fixed by renaming the module.

7. Pending Tasks:
   - Finish splitting the tokenizer out of src/parser.py.

9. Optional Next Step:
   Run the parser tests again with pytest -q tests/test_parser.py.
</summary>"""
GOAL = "keep refactoring the tokenizer in src/parser.py"


def test_a_fork_after_a_compact_carries_the_live_view_and_never_repeats_the_summary(
    claude: ClaudeRig,
) -> None:
    claude.contextfork("hooks", "install", "--claude", "--project")
    claude.mock.script(
        _bash("seq 1 900 | sed 's/^/line-of-output-/'"),
        Reply(text="Done with the output.", usage=Usage(input_tokens=6000)),
    )
    sid = str(claude.prompt("Produce some output")["session_id"])
    claude.mock.script(Reply(text=SUMMARY, kind="compact"))
    claude.prompt("/compact", resume=sid, allowed=())
    text = claude.transcript(sid).read_text()
    before_compact = {json.loads(x)["uuid"] for x in text[: text.index('"compact_boundary"')]
                      .splitlines()[:-1] if '"uuid"' in x}  # fmt: skip

    # Forced right after the compaction: nothing to stub in what the harness sends, so the fork
    # is the live view plus its brief — and the brief names the summary instead of repeating it.
    forced = _fork(claude, "--force")
    fork_lines = claude.transcript(_fork_id(forced)).read_text()
    assert "line-of-output-" not in fork_lines, "the fork carries lines from before the compaction"
    carried = {json.loads(x)["forkedFrom"].get("messageUuid") for x in fork_lines.splitlines()}
    assert forced["lines_left_out"] > 0 and forced["summary_carried"] is True
    original = _first_request(claude, sid)
    fork_req = _first_request(claude, _fork_id(forced))
    sent = json.dumps(fork_req["messages"], ensure_ascii=False)
    o, f = _size(original), _size(fork_req)
    print(f"\nright after /compact, forced: original {o:,} chars, fork {f:,} chars "
          f"({f - o:+,}: the brief, predicted {forced['brief_chars']:,})")
    assert sent.count(GOAL) == 1, "the brief repeats the compaction summary"
    assert "In the compaction summary above" in sent
    assert f - o <= int(forced["brief_chars"]) * 1.1  # the fork adds its brief, nothing else
    assert len(carried & before_compact) <= 2  # at most the preserved segment

    # A large result after the compaction: a fork is written unforced and sends less.
    claude.mock.script(
        _bash("seq 1 900 | sed 's/^/later-output-/'"),
        Reply(text="More output.", usage=Usage(input_tokens=9000)),
    )
    claude.prompt("Produce more output", resume=sid)
    data = _fork(claude, "--transcript", str(claude.transcript(sid)))
    fork_id = _fork_id(data)
    carried = {json.loads(x)["forkedFrom"].get("messageUuid")
               for x in claude.transcript(fork_id).read_text().splitlines()}  # fmt: skip
    assert data["lines_left_out"] > 0 and len(carried & before_compact) <= 2
    original, fork_req = _first_request(claude, sid), _first_request(claude, fork_id)
    o, f = _size(original), _size(fork_req)
    print(f"after /compact and a new large result: original {o:,} chars, fork {f:,} chars "
          f"({f / o - 1:+.1%})")
    assert f <= o
    assert json.dumps(fork_req["messages"], ensure_ascii=False).count(GOAL) == 1
