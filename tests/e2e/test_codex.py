"""The real Codex CLI with contextfork's hooks, against the Responses API mock."""

from __future__ import annotations

import json

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
