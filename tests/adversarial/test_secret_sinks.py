"""0 planted secrets in any stored or sent byte: package files, cold store, hook output, push.

One Claude Code session carries the whole corpus (tests/adversarial/secret_corpus.py): in the
user's prompt, in a failing command (the failed-commands seed), in its error output and in a
large tool output. The pre-compact hook folds it into the cold store and exports a package; the
prompt hook pages the tool output back; ``push`` sends the package to a bare remote. Every file
under ``.contextfork/``, every hook stdout and every object on the remote is searched.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.secret_corpus import FAILED_COMMAND, corpus_lines, fragments, leaks
from tests.harness import cc_fixture
from tests.helpers import git, run_cli
from tests.lifecycle.conftest import Shared
from tests.lifecycle.conftest import shared as _shared_fixture

MARKER = cc_fixture.BIG_MARKER


@pytest.fixture
def shared(tmp_path: Path) -> Shared:
    return _shared_fixture.__wrapped__(tmp_path)  # type: ignore[attr-defined,no-any-return]


def _transcript(path: Path, cwd: Path) -> Path:
    corpus = "\n".join(corpus_lines())
    lines = cc_fixture.lines(cwd)
    lines[0]["message"]["content"] = "Fix the billing port bug; my creds:\n" + corpus
    for obj in lines:
        content = obj.get("message", {}).get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_use" and block["id"] == "toolu_02":
                block["input"]["command"] = FAILED_COMMAND
            if block.get("type") == "tool_result" and block["tool_use_id"] == "toolu_01":
                block["content"] = cc_fixture.big_output() + "\n" + corpus
                obj["toolUseResult"]["stdout"] = block["content"]
            if block.get("type") == "tool_result" and block["tool_use_id"] == "toolu_02":
                block["content"] = "Exit code 1\n" + corpus
                obj["toolUseResult"] = "Error: " + block["content"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(o) + "\n" for o in lines))
    return path


def _hook(cwd: Path, event: str, payload: dict[str, Any]) -> str:
    res = run_cli("hook", event, cwd=cwd, input=json.dumps(payload))
    assert res.returncode == 0, res.stderr
    return res.stdout


def _stored_leaks(root: Path) -> dict[str, list[str]]:
    out = {}
    for f in sorted((root / ".contextfork").rglob("*")):
        if f.is_file() and not f.is_symlink():
            found = leaks(f.read_bytes())
            if found:
                out[str(f.relative_to(root))] = found
    return out


def _remote_leaks(remote: Path) -> list[str]:
    data = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"], cwd=remote, capture_output=True,
        check=True,
    ).stdout
    return leaks(data)


def test_the_corpus_has_thirty_kinds_and_the_transcript_really_holds_them(tmp_path: Path) -> None:
    assert len(corpus_lines()) >= 30
    t = _transcript(tmp_path / "t.jsonl", tmp_path)
    raw = t.read_bytes()
    assert len(leaks(raw)) == len(fragments())  # every fragment planted (json-escaped or not)


def test_no_secret_in_the_cold_store_package_hook_output_or_pushed_objects(
    shared: Shared, tmp_path: Path
) -> None:
    a = shared.a.path
    sid = cc_fixture.SESSION
    t = _transcript(tmp_path / "proj" / f"{sid}.jsonl", a)
    base = {"session_id": sid, "transcript_path": str(t), "cwd": str(a),
            "permission_mode": "default"}  # fmt: skip
    out = _hook(a, "pre-compact", {**base, "hook_event_name": "PreCompact", "trigger": "auto",
                                   "custom_instructions": ""})  # fmt: skip
    assert leaks(out.encode()) == []
    pkgs = [p for p in (a / ".contextfork" / "packages").iterdir() if p.is_dir()]
    assert len(pkgs) == 1
    meta = json.loads((pkgs[0] / "session_metadata.json").read_text())
    assert meta["telemetry"]["failed_commands"], "the failing command was seeded"
    assert list((a / ".contextfork" / "cold" / sid / "cold_nodes").iterdir())
    # the prompt hook pages the tool output (with the corpus) back into the prompt
    ask = {**base, "hook_event_name": "UserPromptSubmit",
           "prompt": f"what did grep say about {MARKER}?"}  # fmt: skip
    ctx = _hook(a, "user-prompt-submit", ask)
    assert MARKER in ctx and "[REDACTED:" in ctx
    assert leaks(ctx.encode()) == []
    # the export from the CLI with the same transcript, and every stored file
    res = run_cli("export", "--transcript", str(t), "--json", cwd=a)
    assert res.returncode == 0, res.stderr
    assert leaks(res.stdout.encode()) == []
    assert _stored_leaks(a) == {}
    # push sends both packages (nothing to refuse: everything was scrubbed) and nothing leaks
    res = run_cli("push", "origin", "--json", cwd=a)
    assert res.returncode == 0, res.stdout + res.stderr
    assert len(res.json()["data"]["packages"]) == 2
    assert _remote_leaks(shared.remote) == []
    assert git(shared.remote, "for-each-ref", "refs/contextfork/")
