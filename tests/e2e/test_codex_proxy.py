"""The real Codex through ``contextfork run`` (the per-user proxy) against the Responses mock."""

from __future__ import annotations

import json
import os
import sys

from contextfork.proxy.responses import pair_faults
from tests.e2e.clients import Run, run_bounded
from tests.e2e.mock_openai import Call, OAReply, input_text
from tests.e2e.rigs import CodexRig, read_jsonl


def _run(codex: CodexRig, *args: str, timeout: float = 150) -> Run:
    pdir = codex.tmp / "proxy-dir"
    pdir.mkdir(mode=0o700, exist_ok=True)
    env = {**codex.env, "CONTEXTFORK_PROXY_DIR": str(pdir), "CONTEXTFORK_PROXY_GRACE": "1",
           "CONTEXTFORK_SERVER": "off", "CONTEXTFORK_PROXY_ADAPTIVE": "0",
           "CONTEXTFORK_PROXY_BUDGET": "1500"}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    run = run_bounded([sys.executable, "-m", "contextfork", "run", "--", str(codex.bin), *args],
                      cwd=codex.repo.path, env=env, timeout=timeout)
    codex.runs.append(run)
    return run


def test_codex_through_the_proxy_folds_live_keeping_pairs_and_encrypted_reasoning(
        codex: CodexRig) -> None:
    replies = [OAReply(text=f"Listing {i}; saw qx{i - 1}_row_3.", reasoning=f"gAAAAenc-{i}-" + "z" * 40,
                       calls=[Call("exec_command", {"cmd": f"seq 1 {110 + 7 * i} | sed 's/^/qx{i}_row_/'"})])
               for i in range(7)]
    codex.mock.script(*replies, OAReply(text="All seven listed."))

    run = _run(codex, "exec", "Make the seven listings")

    assert run.returncode == 0, run
    assert "All seven listed." in run.stdout
    bodies = codex.mock.response_requests()
    assert len(bodies) == 8
    assert all(pair_faults(b["input"]) == set() for b in bodies), "a request broke call pairs"
    assert any("[contextfork note: folded" in input_text(b) for b in bodies), "nothing folded"
    assert "qx0_row_1\\n" not in json.dumps(bodies[-1]["input"]), "step 1 was still sent whole"
    sent = {json.dumps(i, sort_keys=True) for b in bodies for i in b["input"]
            if i.get("type") == "reasoning"}
    made = {f"gAAAAenc-{i}-" + "z" * 40 for i in range(7)}
    assert sent and {json.loads(s)["encrypted_content"] for s in sent} <= made
    key = bodies[0]["prompt_cache_key"]
    log = read_jsonl(codex.repo.path / ".contextfork" / "logs" / "proxy.log")
    edits = [r for r in log if r.get("endpoint") == "responses" and r.get("action") == "edit"]
    assert edits and all(r.get("session") == key for r in edits)
    assert not [r for r in log if r.get("action") == "pass-through"], log[-3:]


def test_codex_with_its_built_in_provider_goes_through_the_proxy(codex: CodexRig) -> None:
    (codex.codex_home / "config.toml").write_text(
        'model = "gpt-5-codex"\napproval_policy = "never"\nsandbox_mode = "danger-full-access"\n')
    codex.env["OPENAI_BASE_URL"] = codex.mock.url + "/v1"  # where the user's calls would go
    codex.mock.script(OAReply(text="Through the proxy."))

    run = _run(codex, "exec", "Say hello")

    assert run.returncode == 0, run
    assert "Through the proxy." in run.stdout
    [body] = codex.mock.response_requests()
    log = read_jsonl(codex.repo.path / ".contextfork" / "logs" / "proxy.log")
    assert [r.get("endpoint") for r in log if r.get("event") == "request"] == ["responses"]
    assert body["prompt_cache_key"]
