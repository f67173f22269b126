"""SPEC §9 conduct: a closed pipe is silent (exit 141, like a Unix tool killed by SIGPIPE), a
query may start with "-", and click's usage errors are one line with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import Repo, clean_env, run_cli
from tests.transcript.builders import CC, write_jsonl


def _big_transcript(path: Path) -> Path:
    cc = CC()
    big = "\n".join(f"line {i}: " + "x" * 100 for i in range(3000))  # ~330 KB of output
    recs = [
        cc.user("list everything"),
        cc.assistant("m1", [{"type": "tool_use", "id": "t1", "name": "Bash",
                             "input": {"command": "cat big"}}]),
        cc.result("t1", big),
        cc.assistant("m2", [{"type": "text", "text": "done"}]),
        cc.user("thanks"),
    ]
    return write_jsonl(path, recs)


def test_closed_pipe_is_silent_and_not_a_failure(tmp_path: Path, repo: Repo) -> None:
    transcript = _big_transcript(tmp_path / "big.jsonl")
    proc = subprocess.Popen(
        [sys.executable, "-m", "contextfork", "render", "--transcript", str(transcript),
         "--policy", "base", "--json"],
        cwd=repo.path, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)  # the reader takes a little, then goes away (`| head -c 10`)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    code = proc.wait(timeout=60)
    assert err == ""
    # 141 when the write fails; CPython sometimes ends a partial write without an error, and
    # then the command simply finishes: either way silent, never "Broken pipe" and exit 1.
    assert code in (0, 141)


def test_query_starting_with_dash_is_text_not_an_option(tmp_path: Path, repo: Repo) -> None:
    transcript = _big_transcript(tmp_path / "big.jsonl")
    folded = run_cli("fold", "session", "--transcript", str(transcript), cwd=repo.path)
    assert folded.returncode == 0, folded.stderr
    bare = run_cli("fold", "recall", "-x everything", "--json", cwd=repo.path)
    assert bare.returncode == 0, bare.stderr
    dashed = run_cli("fold", "recall", "--json", "--", "-x everything", cwd=repo.path)
    assert dashed.returncode == 0, dashed.stderr
    assert json.loads(bare.stdout)["data"] == json.loads(dashed.stdout)["data"]
    scan = run_cli("fold", "scan", "-v flag: list everything", cwd=repo.path)
    assert scan.returncode == 0, scan.stderr


def test_usage_errors_are_one_line_with_exit_2(repo: Repo) -> None:
    cases = [
        ("validate", "--no-such-option"),
        ("fold", "add"),
        ("packages", "clean", "--keep", "many"),
        ("hooks", "install", "--git", "--keep", "-1"),
        ("explode",),
    ]
    for args in cases:
        res = run_cli(*args, cwd=repo.path)
        assert res.returncode == 2, (args, res.stderr)
        assert len(res.stderr.splitlines()) == 1, (args, res.stderr)
        assert res.stderr.startswith("contextfork "), (args, res.stderr)


def test_usage_error_with_json_is_an_envelope(repo: Repo) -> None:
    res = run_cli("validate", "--json", "--no-such-option", cwd=repo.path)
    assert res.returncode == 2
    env = json.loads(res.stdout)
    assert env["ok"] is False and env["exit_code"] == 2
    assert "--no-such-option" in env["problems"][0]["message"]
