"""The real Claude Code through ``contextfork run`` (the per-user proxy) against the mock.

What the mock receives is what the proxy forwarded: every assertion about folding, pairs and
notes is about the bytes the model would really have been sent.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from contextfork.proxy.anthropic import pair_faults
from tests.e2e.clients import Run, run_bounded
from tests.e2e.mock_anthropic import Reply, ToolUse, Usage, request_text
from tests.e2e.rigs import ClaudeRig, read_jsonl

KEY = "sk-ant-e2e-not-a-real-key"  # what claude_env gives the client
PEEK = re.compile(r"`(contextfork context peek --session (\S+) --step N)`")


def _proxied(claude: ClaudeRig, **knobs: str) -> Path:
    """Run the client through `contextfork run` with its own proxy directory."""
    pdir = claude.tmp / "proxy-dir"
    pdir.mkdir(mode=0o700, exist_ok=True)
    claude.env.update({"CONTEXTFORK_PROXY_DIR": str(pdir), "CONTEXTFORK_PROXY_GRACE": "1",
                       "CONTEXTFORK_SERVER": "off", **knobs})
    if os.environ.get("PYTHONPATH"):  # a checkout that is not the installed one
        claude.env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return pdir


def _run(claude: ClaudeRig, *args: str, timeout: float = 150) -> Run:
    run = run_bounded([sys.executable, "-m", "contextfork", "run", "--", str(claude.bin), *args],
                      cwd=claude.repo.path, env=claude.env, timeout=timeout)
    claude.runs.append(run)
    return run


def _prompt(claude: ClaudeRig, text: str, *extra: str) -> dict[str, Any]:
    run = _run(claude, "-p", text, "--output-format", "json", "--allowedTools", "Bash,Agent",
               *extra)
    assert run.returncode == 0, f"claude failed\n{run}"
    result = json.loads(run.stdout)
    assert not result.get("is_error"), f"claude reported an error\n{run}"
    return dict(result)


def _bash(command: str, text: str = "Running it.") -> Reply:
    return Reply(text=text, tool_uses=[ToolUse("Bash", {"command": command,
                                                        "description": "Run a command"})],
                 usage=Usage(input_tokens=3000))


def _proxy_log(claude: ClaudeRig) -> list[dict[str, Any]]:
    return read_jsonl(claude.repo.path / ".contextfork" / "logs" / "proxy.log")


def _peek_reply(body: dict[str, Any]) -> Reply:
    """The model reads a fold note and asks for step 1's exact bytes the way the note says."""
    m = PEEK.search(request_text(body))
    assert m, "no note named a way back"
    return _bash(m.group(1).replace("N", "1"), "Reading the folded step back.")


def test_a_long_session_through_the_proxy_folds_live_pages_back_exactly_and_leaks_no_key(
        claude: ClaudeRig) -> None:
    pdir = _proxied(claude, CONTEXTFORK_PROXY_ADAPTIVE="0", CONTEXTFORK_PROXY_BUDGET="1500")
    # each reply names a row of the listing before it: no step is stale, so only an epoch
    # commit (the budget's watermark) folds them
    steps = [_bash(f"seq 1 {120 + 9 * i} | sed 's/^/zq{i}_row_/'", f"Saw zq{i - 1}_row_3.")
             for i in range(7)]
    claude.mock.script(*steps, Reply(text="Seven listings done.", usage=Usage(input_tokens=4000)))

    first = _prompt(claude, "Make the seven listings")

    assert first["result"] == "Seven listings done."  # the stream reached the client whole
    sid = str(first["session_id"])
    claude.mock.script(
        Reply(make=_peek_reply),
        _bash("python3 -c \"import os,urllib.request,urllib.error;"
              "r=urllib.request.Request(os.environ['ANTHROPIC_BASE_URL']+'/v1/messages',"
              "b'{}',{'Host':'rebind.attacker.example'});"
              "exec('try: urllib.request.urlopen(r)\\nexcept urllib.error.HTTPError as e: "
              "print(\\'refused\\', e.code)')\""),
        Reply(text="Listing zero is back.", usage=Usage(input_tokens=4000)),
    )
    second = _prompt(claude, "Show me the first listing again", "--resume", sid)
    assert second["result"] == "Listing zero is back."

    mains = claude.mock.main_requests()
    assert all(pair_faults(b["messages"]) == set() for b in mains), "a request broke tool pairs"
    notes = [b for b in mains if "[contextfork note: folded" in request_text(b)]
    assert notes, "no request carried a fold note"
    last_of_first = mains[len(steps)]
    assert "zq0_row_1\n" not in request_text(last_of_first), "step 1 was still sent whole"
    log = _proxy_log(claude)
    assert any(r.get("action") == "edit" and r.get("session") == sid for r in log), log[-3:]
    assert max(int(r.get("epochs", 0)) for r in log) >= 1, "no epoch was committed"
    assert not [r for r in log if r.get("action") == "pass-through"], "a request passed through"

    results = [p for b in mains for m in b["messages"] if isinstance(m.get("content"), list)
               for p in m["content"] if p.get("type") == "tool_result"]
    peek = next(json.dumps(p["content"]) for p in results
                if "zq0_row_120" in json.dumps(p["content"]) and "verified" in json.dumps(p))
    original = "\n".join(f"zq0_row_{n}" for n in range(1, 121))
    assert json.dumps(original)[1:-1] in peek, "the peek did not give step 1's exact bytes"
    refusal = next(json.dumps(p["content"]) for p in results if "refused" in json.dumps(p))
    assert "refused 403" in refusal

    state_files = [p for p in (claude.repo.path / ".contextfork").rglob("*") if p.is_file()]
    logs = [p for p in pdir.rglob("*") if p.is_file()]
    assert any(p.name == "proxy.log" for p in logs)
    for p in state_files + logs:
        assert KEY.encode() not in p.read_bytes(), f"the API key was written to {p}"


def test_upstream_529_and_400_reach_claude_code_unchanged(claude: ClaudeRig) -> None:
    _proxied(claude)
    overloaded = {"type": "error", "error": {"type": "overloaded_error",
                                             "message": "scripted-overload-7f3a"}}
    bad = {"type": "error", "error": {"type": "invalid_request_error",
                                      "message": "scripted-bad-request-91c2"}}
    no_retry = {"x-should-retry": "false", "request-id": "req_e2e"}
    claude.mock.script(Reply(error=(529, overloaded, no_retry)))
    runs = [_run(claude, "-p", "hello", "--output-format", "json")]
    assert len(claude.mock.main_requests()) == 1, "the proxy retried or swallowed a request"
    # Claude Code 2.1.328 itself tries a 400 six times before it reports it
    claude.mock.script(*[Reply(error=(400, bad, no_retry)) for _ in range(8)])
    runs.append(_run(claude, "-p", "hello", "--output-format", "json"))

    got = [json.loads(r.stdout) for r in runs]
    assert [g.get("api_error_status") for g in got] == [529, 400], runs
    assert "scripted-overload-7f3a" in got[0]["result"]
    assert "scripted-bad-request-91c2" in got[1]["result"]


def test_a_subagent_in_parallel_with_the_main_conversation_is_kept_apart(
        claude: ClaudeRig) -> None:
    _proxied(claude, CONTEXTFORK_PROXY_ADAPTIVE="0", CONTEXTFORK_PROXY_BUDGET="1500")

    def in_sub(body: dict[str, Any]) -> bool:
        return "sub-task-marker" in json.dumps(body.get("messages", [])[:1])

    claude.mock.script(
        Reply(text="Delegating.", tool_uses=[ToolUse("Agent", {
            "description": "look", "prompt": "sub-task-marker: list the files",
            "subagent_type": "general-purpose"})]),
        Reply(text="sub: listing", when=in_sub,
              tool_uses=[ToolUse("Bash", {"command": "ls; echo sub-ran", "description": "x"})]),
        Reply(text="sub done", when=in_sub),
        _bash("echo main-keeps-working", "Meanwhile in the main conversation."),
        Reply(text="All done."),
    )

    result = _prompt(claude, "delegate something")

    sid = str(result["session_id"])
    log = [r for r in _proxy_log(claude) if r.get("event") == "request"]
    sessions = {r.get("session") for r in log if r.get("endpoint") == "messages"}
    assert sid in sessions
    assert any(s and s.startswith(f"{sid}-agent-") for s in sessions), sessions
    assert not [r for r in log if r.get("sync") == "reset"], "a history was mixed and reset"
    for body in claude.mock.message_requests():
        assert pair_faults(body["messages"]) == set()
        head = json.dumps(body["messages"][:1])
        if "sub-task-marker" not in head:  # the main conversation never holds the sub's calls
            assert "echo sub-ran" not in json.dumps(body["messages"])


def test_a_proxy_killed_mid_session_is_restarted_and_the_session_finishes(
        claude: ClaudeRig) -> None:
    pdir = _proxied(claude)
    kill = ("kill -9 $(python3 -c \"import json,sys;"
            f"print(json.load(open('{pdir}/proxy.json'))['pid'])\")")
    claude.mock.script(_bash("echo before-kill"), _bash(kill), _bash("echo after-kill"),
                       Reply(text="Survived the proxy."))

    result = _prompt(claude, "Run the three commands")

    assert result["result"] == "Survived the proxy."
    starts = [r for r in read_jsonl(pdir / "proxy.log") if r.get("event") == "start"]
    assert len(starts) == 2 and starts[0]["port"] == starts[1]["port"], starts
    texts = [request_text(b) for b in claude.mock.main_requests()]
    assert any("after-kill" in t for t in texts)
