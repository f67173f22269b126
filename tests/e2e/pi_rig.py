"""The real pi coding agent (npm, pinned) against the Anthropic mock, with contextfork's extension.

pi reads its providers from ``$HOME/.pi/agent/models.json``: one provider ``mock`` with
``"api": "anthropic-messages"`` and the mock's ``baseUrl`` (any apiKey), one model whose
``contextWindow`` the test chooses (pi's threshold compaction and contextfork's epoch budget
both derive from it). ``pi -p "…" --provider mock --model <id>`` runs a whole tool-using session.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.clients import Run, base_env, run_bounded
from tests.e2e.mock_anthropic import MockAnthropic
from tests.e2e.rigs import contextfork_cmd
from tests.helpers import Repo, make_repo

MODEL = "mock-sonnet"


@dataclass
class PiRig:
    tmp: Path
    repo: Repo
    mock: MockAnthropic
    home: Path
    bin: Path
    env: dict[str, str]
    runs: list[Run] = field(default_factory=list)

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

    def contextfork(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([*contextfork_cmd(), *args], cwd=self.repo.path, env=self.env,
                              capture_output=True, text=True, timeout=120, check=False)
        if check:
            assert proc.returncode == 0, f"contextfork {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
        return proc

    def run(self, prompt: str, *extra: str, timeout: float = 150,
            env: dict[str, str] | None = None) -> Run:
        args = [str(self.bin), "-p", prompt, "--provider", "mock", "--model", MODEL, *extra]
        run = run_bounded(args, cwd=self.repo.path, env={**self.env, **(env or {})},
                          timeout=timeout)
        self.runs.append(run)
        return run

    def log(self) -> list[dict[str, Any]]:
        path = self.repo.path / ".contextfork" / "logs" / "pi.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def sessions(self) -> list[Path]:
        return sorted((self.home / ".pi" / "agent" / "sessions").rglob("*.jsonl"))
