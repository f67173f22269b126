"""The real pi coding agent (npm, pinned) against the Anthropic mock, with contextfork's extension.

pi reads its providers from ``$HOME/.pi/agent/models.json``: one provider ``mock`` with
``"api": "anthropic-messages"`` and the mock's ``baseUrl`` (any apiKey), one model whose
``contextWindow`` the test chooses (pi's threshold compaction and contextfork's epoch budget
both derive from it). ``pi -p "…" --provider mock --model <id>`` runs a whole tool-using session.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.clients import Run, base_env, run_bounded
from tests.e2e.mock_anthropic import MockAnthropic
from tests.e2e.rigs import Rig, contextfork_cmd, read_jsonl
from tests.helpers import make_repo

MODEL = "mock-sonnet"


@dataclass
class PiRig(Rig):
    @classmethod
    def create(cls, tmp: Path, prefix: Path, mock: MockAnthropic, *, window: int = 200_000,
               compaction: dict[str, Any] | None = None) -> PiRig:
        repo = make_repo(tmp / "project")
        home = tmp / "home"
        env = base_env(home)
        env["PI_SKIP_VERSION_CHECK"] = "1"
        env["PI_OFFLINE"] = "1"
        agent = home / ".pi" / "agent"
        agent.mkdir(parents=True, exist_ok=True)
        models = {"providers": {"mock": {
            "baseUrl": mock.url, "api": "anthropic-messages", "apiKey": "sk-ant-e2e-not-real",
            "models": [{"id": MODEL, "name": "Mock", "contextWindow": window, "maxTokens": 4096,
                        "input": ["text"], "reasoning": False,
                        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}],
        }}}
        (agent / "models.json").write_text(json.dumps(models, indent=1))
        settings: dict[str, Any] = {"compaction": compaction or {"enabled": True}}
        (agent / "settings.json").write_text(json.dumps(settings))
        return cls(tmp, repo, mock, home, prefix / "node_modules" / ".bin" / "pi", env)

    def contextfork(self, *args: str, check: bool = True, stdin: str | None = None) -> Run:
        """A real process, unlike the other rigs: what pi's extension will run is checked as
        pi will run it."""
        run = run_bounded([*contextfork_cmd(), *args], cwd=self.repo.path, env=self.env,
                          timeout=120, stdin=stdin)
        if check:
            assert run.returncode == 0, f"contextfork failed\n{run}"
        return run

    def run(self, prompt: str, *extra: str, timeout: float = 150,
            env: dict[str, str] | None = None) -> Run:
        args = ["-p", prompt, "--provider", "mock", "--model", MODEL, *extra]
        return self._run_client(args, timeout, {**self.env, **(env or {})})

    def log(self) -> list[dict[str, Any]]:
        return read_jsonl(self.repo.path / ".contextfork" / "logs" / "pi.log")

    def sessions(self) -> list[Path]:
        return sorted((self.home / ".pi" / "agent" / "sessions").rglob("*.jsonl"))
