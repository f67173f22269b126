"""The real pi expands the /handoff prompt template contextfork installs in .pi/prompts/."""

from __future__ import annotations

import json
from pathlib import Path

from contextfork.harness.hooks import commands
from tests.e2e.mock_anthropic import MockAnthropic, Reply, Usage
from tests.e2e.pi_rig import PiRig


def test_pi_expands_the_handoff_prompt_template(
    tmp_path: Path, client_prefix: Path, anthropic: MockAnthropic
) -> None:
    pi = PiRig.create(tmp_path, client_prefix, anthropic)
    path, state = commands.install(pi.repo.path, "pi")
    assert state == "written" and path == pi.repo.path / ".pi" / "prompts" / "handoff.md"
    pi.mock.script(Reply(text="Writing the handoff.", usage=Usage(input_tokens=3000)))
    run = pi.run("/handoff the parser work")
    assert run.returncode == 0, run
    body = json.dumps(pi.mock.main_requests()[-1])
    assert "contextfork checks each item" in body and "Focus: the parser work" in body
