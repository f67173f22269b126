"""Two /compacts in one interactive Claude Code process (issue 24 item 6): does the transcript
re-append earlier rows with the same uuids? Driven in tmux with the real client and the mock."""

from __future__ import annotations

import collections
import json
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.mock_anthropic import Reply, Usage
from tests.e2e.rigs import ClaudeRig
from tests.e2e.test_claude_fork import _bash


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def _wait(pred: object, timeout: float = 90) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():  # type: ignore[operator]
            return True
        time.sleep(0.5)
    return False


def _lines(path: Path) -> list[dict[str, object]]:
    if not path.is_file():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_two_compacts_in_one_interactive_process_repeat_no_row(claude: ClaudeRig) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    claude.trust_project()
    cfg = claude.config_dir / ".claude.json"
    data = json.loads(cfg.read_text())
    data["customApiKeyResponses"] = {"approved": [claude.env["ANTHROPIC_API_KEY"][-20:]],
                                     "rejected": []}  # fmt: skip
    data["theme"] = "dark"
    cfg.write_text(json.dumps(data))
    claude.mock.script(
        _bash("seq 1 50 | sed 's/^/row-/'"), Reply(text="First turn done.", usage=Usage(input_tokens=5000)),
        _bash("echo second"), Reply(text="Second turn done.", usage=Usage(input_tokens=6000)),
        Reply(text="Third turn done.", usage=Usage(input_tokens=4000)),
    )
    name = f"cf-rows-{claude.repo.path.name}-{time.monotonic_ns()}"
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in claude.env.items())
    cmd = f"cd {shlex.quote(str(claude.repo.path))} && env -i {env} {shlex.quote(str(claude.bin))} --allowedTools Bash"
    _tmux("new-session", "-d", "-s", name, "-x", "200", "-y", "50", cmd)
    try:
        def screen() -> str:
            return _tmux("capture-pane", "-p", "-t", name)

        def send(text: str) -> None:
            _tmux("send-keys", "-t", name, "-l", text)
            time.sleep(0.3)
            _tmux("send-keys", "-t", name, "Enter")

        assert _wait(lambda: "❯" in screen(), 60), screen()
        time.sleep(2)
        send("Produce some output")
        sessions = claude.sessions_dir
        assert _wait(lambda: any("First turn done." in p.read_text() for p in sessions.glob("*.jsonl")), 90), screen()
        path = next(p for p in sessions.glob("*.jsonl") if "First turn done." in p.read_text())
        send("/compact")
        assert _wait(lambda: sum(o.get("subtype") == "compact_boundary" for o in _lines(path)) >= 1, 120), screen()
        time.sleep(2)
        send("Now the second turn")
        assert _wait(lambda: "Second turn done." in path.read_text(), 90), screen()
        send("/compact")
        assert _wait(lambda: sum(o.get("subtype") == "compact_boundary" for o in _lines(path)) >= 2, 120), screen()
        time.sleep(2)
        send("And a third")
        assert _wait(lambda: "Third turn done." in path.read_text(), 90), screen()
        time.sleep(1)
    finally:
        _tmux("kill-session", "-t", name)
    rows = _lines(path)
    counts = collections.Counter(str(o["uuid"]) for o in rows if isinstance(o.get("uuid"), str))
    repeated = {u: n for u, n in counts.items() if n > 1}
    kinds = collections.Counter(str(o.get("type")) for o in rows if not isinstance(o.get("uuid"), str))
    boundaries = sum(o.get("subtype") == "compact_boundary" for o in rows)
    print(f"\n{len(rows)} rows, {len(counts)} uuids, {boundaries} compactions, repeated: "
          f"{len(repeated)}; rows without a uuid: {dict(kinds)}")
    assert not repeated, f"{len(repeated)} uuids written more than once: {list(repeated.items())[:5]}"
