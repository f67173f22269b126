"""The real Codex CLI with contextfork's hooks, against the Responses API mock."""

from __future__ import annotations

import json
import re

from tests.e2e.mock_openai import Call, OAReply, input_text
from tests.e2e.rigs import CodexRig


def _trust(codex: CodexRig) -> None:
    """What trusting the project records, so Codex reads its .codex/ (hooks and features)."""
    with (codex.codex_home / "config.toml").open("a") as f:
        f.write(f'\n[projects."{codex.repo.path.resolve()}"]\ntrust_level = "trusted"\n')


def test_codex_exec_runs_a_real_command_against_the_mock(codex: CodexRig) -> None:
    codex.mock.script(
        OAReply(text="Looking.", calls=[Call("exec_command", {"cmd": "git status --short; echo codex-ran-it"})]),
        OAReply(text="Finished."),
    )

    run = codex.run("exec", "List the changes")

    assert run.returncode == 0, run
    assert "Finished." in run.stdout
    second = codex.mock.response_requests()[1]
    outputs = [i for i in second["input"] if i.get("type") == "function_call_output"]
    assert outputs and "codex-ran-it" in json.dumps(outputs), second["input"][-3:]


def test_codex_session_start_hook_injects_the_pending_package_brief(codex: CodexRig) -> None:
    _trust(codex)
    codex.contextfork("hooks", "install", "--codex")
    pkg = json.loads(codex.contextfork("export", "--goal", "Port billing to the snarfle API", "--json").stdout)["data"]

    run = codex.run("exec", "--dangerously-bypass-hook-trust", "Carry on")

    assert run.returncode == 0, run
    log = codex.hooks_log()
    assert any(e.get("event") == "session-start" and e.get("action") == "inject" for e in log), log
    text = input_text(codex.mock.response_requests()[0])
    assert pkg["package_id"] in text, "the SessionStart hook's brief did not reach the model"
    assert "snarfle" in text


def _session_id(run_stderr: str) -> str:
    match = re.search(r"session id: ([0-9a-f-]{36})", run_stderr)
    assert match, run_stderr[-2000:]
    return match.group(1)


def test_codex_user_prompt_submit_pages_a_folded_step_back_in(codex: CodexRig) -> None:
    _trust(codex)
    codex.contextfork("hooks", "install", "--codex")
    codex.mock.script(OAReply(text="Hello."))
    first = codex.run("exec", "--dangerously-bypass-hook-trust", "Start")
    assert first.returncode == 0, first
    sid = _session_id(first.stderr)
    codex.contextfork(
        "fold", "add", "1", "Set the quibble threshold to 4711 in limits.toml", "--session", sid,
        stdin="quibble_threshold = 4711\n",
    )

    codex.mock.script(OAReply(text="It is 4711."))
    run = codex.run("exec", "--dangerously-bypass-hook-trust", "resume", sid, "What is the quibble threshold?")

    assert run.returncode == 0, run
    text = input_text(codex.mock.response_requests()[-1])
    assert "quibble_threshold = 4711" in text, "the folded step was not paged into the Codex request"


def test_status_of_a_codex_rollout_equals_the_mocks_usage(codex: CodexRig) -> None:
    codex.mock.script(
        OAReply(text="Looking.", calls=[Call("exec_command", {"cmd": "echo hi"})], input_tokens=2100),
        OAReply(text="Finished.", input_tokens=2600, cached_tokens=1000, output_tokens=12),
    )
    run = codex.run("exec", "List the changes")
    assert run.returncode == 0, run
    sid = _session_id(run.stderr)
    [rollout] = (codex.codex_home / "sessions").rglob(f"rollout-*{sid}.jsonl")

    status = json.loads(codex.contextfork("status", "--transcript", str(rollout), "--json").stdout)["data"]

    assert status["session"]["format"] == "codex"
    assert status["tokens"]["source"] == "recorded"
    assert status["tokens"]["total"] == 2600, status["tokens"]
    assert status["steps"]["tool_calls"] == 1
