"""``contextfork slice``: what each role keeps, the labels, the budget, the task, the policy."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from contextfork.slice import roles
from contextfork.telemetry.models import SliceSection
from tests.helpers import Repo, cli
from tests.slice.parent import SESSION, parent_session

TASK_A = {"description": "check tests", "prompt": "Run the invoice tests and report", "subagent_type": "tester"}
TASK_B = {"description": "look", "prompt": "Find where QUUXRATE is defined", "subagent_type": "Explore"}


def _slice(repo: Repo, transcript: Path, *args: str) -> dict[str, Any]:
    res = cli("slice", "--transcript", str(transcript), *args, "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr + res.stdout
    data: dict[str, Any] = res.json()["data"]
    return data


@pytest.fixture
def parent(repo: Repo, tmp_path: Path) -> Path:
    return parent_session(repo.path, TASK_A, TASK_B).write(tmp_path / "t" / f"{SESSION}.jsonl")


def test_the_tester_slice_holds_the_test_commands_and_the_newest_failing_output(repo: Repo, parent: Path) -> None:
    data = _slice(repo, parent, "--role", "tester")
    text = data["text"]
    assert "$ pytest tests/test_invoice.py -q" in text
    assert "3 passed" in text  # the newest result of that command
    assert "pip install bankers-round" in text  # a failed call: do not retry
    assert "tests/test_invoice.py" in text  # a file under test
    assert data["role"] == "tester"


def test_every_live_block_is_labelled_with_the_sha256_of_exactly_its_bytes(repo: Repo, parent: Path) -> None:
    data = _slice(repo, parent, "--role", "coder")
    raw = parent.read_bytes()
    live = [b for b in data["blocks"] if b["kind"] == "live"]
    assert len(live) >= 4
    for b in live:
        start, end = b["bytes"]
        assert hashlib.sha256(raw[start:end]).hexdigest() == b["sha256"]
        # terse (~40 characters, not ~60: a slice holds 30 or more); a list names what it lists
        assert b["label"].endswith(f"bytes {start}-{end} sha256 {b['sha256'][:12]}")
        assert b.get("list") or b["label"] == f"bytes {start}-{end} sha256 {b['sha256'][:12]}"
        assert f"[{b['label']}]" in data["text"]


@pytest.mark.parametrize("budget", [200, 700, 1500, 4000])
@pytest.mark.parametrize("role", sorted(roles.BUILTIN_ROLES))
def test_the_slice_never_exceeds_its_budget(repo: Repo, parent: Path, role: str, budget: int) -> None:
    data = _slice(repo, parent, "--role", role, "--budget", str(budget))
    assert len(data["text"]) <= budget
    assert data["chars"] == len(data["text"])


def test_what_does_not_fit_is_named_instead_of_shown(repo: Repo, parent: Path) -> None:
    data = _slice(repo, parent, "--role", "coder", "--budget", "1200")
    assert data["left"], "a 1,200-char coder slice of this parent leaves blocks out"
    assert "Not shown (over the budget)" in data["text"]


def test_the_task_is_the_newest_agent_call_of_the_subagents_own_type(repo: Repo, parent: Path) -> None:
    tester = _slice(repo, parent, "--agent-type", "tester")
    explore = _slice(repo, parent, "--agent-type", "Explore")
    assert "Run the invoice tests" in tester["text"] and "QUUXRATE" not in tester["text"]
    assert "QUUXRATE" in explore["text"] and "Run the invoice tests" not in explore["text"]
    assert (tester["role"], explore["role"]) == ("tester", "explorer")


def test_two_parallel_calls_of_one_type_key_the_slice_by_role_alone(repo: Repo, tmp_path: Path) -> None:
    same = {**TASK_B, "subagent_type": "tester"}
    path = parent_session(repo.path, TASK_A, same).write(tmp_path / "p.jsonl")
    data = _slice(repo, path, "--agent-type", "tester")
    assert data["task"]["matched"] == "ambiguous"
    assert "QUUXRATE" not in data["text"] and "Run the invoice tests" not in data["text"]


def test_the_policy_file_maps_agent_types_and_overrides_a_role(repo: Repo, parent: Path) -> None:
    policy = {"policy_version": "1", "slices": {
        "agent_types": {"plugin:qa-bot": "reviewer", "Explore": "narrow"},
        "roles": {"narrow": {"sections": ["do_not_retry"], "budget": 800},
                  "tester": {"sections": ["files_under_test"]}}}}  # fmt: skip
    repo.write(".contextfork/policy.json", json.dumps(policy))
    assert cli("policy", "show", cwd=repo.path).returncode == 0  # the strict model accepts it
    narrow = _slice(repo, parent, "--agent-type", "Explore")
    assert narrow["role"] == "narrow" and narrow["budget"] == 800
    assert {b["section"] for b in narrow["blocks"]} == {"do_not_retry"}
    assert _slice(repo, parent, "--agent-type", "plugin:qa-bot")["role"] == "reviewer"
    tester = _slice(repo, parent, "--role", "tester")
    assert {b["section"] for b in tester["blocks"]} == {"files_under_test"}


def test_a_policy_with_an_unknown_section_is_refused_with_one_line(repo: Repo) -> None:
    policy = {"policy_version": "1", "slices": {"roles": {"x": {"sections": ["everything"]}}}}
    repo.write(".contextfork/policy.json", json.dumps(policy))
    res = cli("policy", "show", cwd=repo.path)
    assert res.returncode == 2 and "slices.roles.x.sections" in res.stderr, res.stderr


def test_an_unknown_role_is_a_usage_error(repo: Repo, parent: Path) -> None:
    res = cli("slice", "--transcript", str(parent), "--role", "astronaut", cwd=repo.path)
    assert res.returncode == 2
    assert "unknown role 'astronaut'" in res.stderr and "Traceback" not in res.stderr


def test_the_policy_models_sections_are_the_slicers_sections() -> None:
    assert set(SliceSection.__args__) == set(roles.SECTIONS)  # type: ignore[attr-defined]
    for spec in roles.BUILTIN_ROLES.values():
        assert set(spec["sections"]) <= set(roles.SECTIONS)


def test_agent_types_get_a_role_by_name(tmp_path: Path) -> None:
    got = {t: roles.role_for(t, {}) for t in ("Plan", "Explore", "general-purpose", "test-runner",
                                               "plugin:acme:code-reviewer", "default", "coder")}  # fmt: skip
    assert got == {"Plan": "planner", "Explore": "explorer", "general-purpose": "default",
                   "test-runner": "tester", "plugin:acme:code-reviewer": "reviewer",
                   "default": "default", "coder": "coder"}  # fmt: skip


def test_a_package_goal_reaches_the_planner_only_while_its_manifest_verifies(repo: Repo, parent: Path) -> None:
    res = cli("export", "--transcript", str(parent), "--goal", "Ship banker's rounding for invoices",
              "--json", cwd=repo.path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    pkg = Path(res.json()["data"]["path"])
    data = _slice(repo, parent, "--role", "planner", "--session", SESSION)
    goal = [b for b in data["blocks"] if b["section"] == "goal"]
    assert goal and goal[0]["kind"] == "package" and goal[0]["package"] == pkg.name
    manifest = {f["path"]: f["sha256"] for f in json.loads((pkg / "manifest.json").read_text())["files"]}
    assert goal[0]["sha256"] == manifest["handoff.json"]
    assert "Ship banker's rounding" in data["text"]
    assert "[[unfilled" not in data["text"]  # the unfilled acceptance criteria stay out
    handoff = pkg / "handoff.json"
    handoff.chmod(0o644)
    handoff.write_text(handoff.read_text().replace("Ship banker's rounding", "Delete the database"))
    tampered = _slice(repo, parent, "--role", "planner", "--session", SESSION)
    assert "Delete the database" not in tampered["text"]
    assert not [b for b in tampered["blocks"] if b["kind"] == "package"]


def test_with_a_folded_parent_blocks_name_their_store_step_and_payload_sha256(repo: Repo, parent: Path) -> None:
    res = cli("fold", "session", "--transcript", str(parent), "--session", SESSION, cwd=repo.path)
    assert res.returncode == 0, res.stderr
    data = _slice(repo, parent, "--role", "coder", "--session", SESSION)
    stepped = [b for b in data["blocks"] if b.get("step") is not None]
    assert stepped, data["blocks"]
    for b in stepped:
        shown = cli("fold", "show", str(b["step"]), "--session", SESSION, "--json", cwd=repo.path)
        node = shown.json()["data"]["node"]
        assert node["payload_sha256"] == b.get("payload_sha256", b["sha256"])
        start, end = b.get("bytes", (0, 0))
        if end:  # the block's bytes are inside the folded step's payload
            assert parent.read_bytes()[start:end] in node["content"].encode("utf-8")
    assert re.search(r"\[step \d+ payload [0-9a-f]{12} · bytes \d+-\d+ sha256 [0-9a-f]{12}\]", data["text"])


def test_the_mcp_get_slice_tool_returns_the_same_slice_as_the_cli(
    repo: Repo, parent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextfork.harness.mcp.server import build_server
    from tests.harness.test_mcp import _env, run_calls

    monkeypatch.setenv("CONTEXTFORK_ALLOWED_ROOTS", str(parent.parent.parent))
    res = run_calls(build_server(), [
        ("get_slice", {"workspace": str(repo.path), "role": "tester", "transcript_path": str(parent)}),
        ("get_slice", {"workspace": str(repo.path), "role": "tester", "transcript_path": "/etc/passwd"}),
    ])  # fmt: skip
    data = _env(res[1])["data"]
    assert data["text"] == _slice(repo, parent, "--role", "tester")["text"]
    assert res[2].is_error  # outside the allowed roots


def test_a_session_without_a_transcript_is_one_not_found_line(repo: Repo) -> None:
    res = cli("slice", "--session", "no-such-session", "--role", "coder", cwd=repo.path)
    assert res.returncode == 4 and "no transcript of session no-such-session" in res.stderr
    assert "Traceback" not in res.stderr
    bad = cli("slice", "--session", "../../etc", "--role", "coder", cwd=repo.path)
    assert bad.returncode == 2 and "not a plain name" in bad.stderr


def test_a_secret_in_the_parents_output_never_reaches_the_slice(repo: Repo, tmp_path: Path) -> None:
    from tests.slice.parent import Writer

    w = Writer(repo.path)
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    w.call("Bash", {"command": "cat .env && pytest -q"}, f"Exit code 1\nGITHUB_TOKEN={key}\n1 failed", error=True)
    path = w.write(tmp_path / "p.jsonl")
    data = _slice(repo, path, "--role", "tester")
    assert "$ cat .env && pytest -q" in data["text"]
    assert key not in data["text"] and "[REDACTED" in data["text"]
    assert any(b.get("redactions") for b in data["blocks"])


def test_a_pi_parent_session_is_read_with_pis_tool_names(repo: Repo, tmp_path: Path) -> None:
    entries = [
        {"type": "session", "id": "p1", "cwd": str(repo.path)},
        {"type": "message", "id": "e1", "message": {"role": "user", "content": [{"type": "text", "text": "fix it"}]}},
        {"type": "message", "id": "e2", "message": {"role": "assistant", "content": [
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "src/zorb.py"}},
            {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "pytest -q tests/test_zorb.py"}}]}},
        {"type": "message", "id": "e3", "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                                                    "content": [{"type": "text", "text": "def zorb(): ..."}]}},
        {"type": "message", "id": "e4", "message": {"role": "toolResult", "toolCallId": "c2", "toolName": "bash",
                                                    "content": [{"type": "text", "text": "1 failed"}], "isError": True}},
    ]  # fmt: skip
    path = tmp_path / "pi.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    tester = _slice(repo, path, "--role", "tester")
    assert "$ pytest -q tests/test_zorb.py (failed)" in tester["text"]
    explorer = _slice(repo, path, "--role", "explorer")
    assert "Read src/zorb.py" in explorer["text"]
