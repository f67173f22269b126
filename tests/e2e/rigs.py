"""One rig per real client: a project repo, a private HOME/config, the mock, bounded runs.

A rig is what a user has: a git repository where they run ``contextfork`` and their agent.
Everything the client writes (config, transcripts, shell snapshots) stays under the test's
tmp_path; the model is the loopback mock.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.clients import Run, base_env, claude_env, run_bounded
from tests.e2e.mock_anthropic import MockAnthropic
from tests.e2e.mock_openai import MockOpenAI
from tests.helpers import Repo, cli, make_repo

# Claude Code 2.1.328 names a project's session folder (verified against the real client by
# test_claude_code_project_folder_slug_rule): every UTF-16 code unit of the working directory
# that is not [A-Za-z0-9] becomes "-"; a slug longer than 200 characters is cut to 200 and
# suffixed with "-" + base36(|javaStringHash(path)|) (32-bit `h = 31*h + unit`).
SLUG_MAX = 200


def _java_hash(text: str) -> int:
    data = text.encode("utf-16-le")
    h = 0
    for i in range(0, len(data), 2):
        h = (h * 31 + int.from_bytes(data[i : i + 2], "little")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    n = abs(n)
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def claude_slug(path: str) -> str:
    """The folder name Claude Code gives the project at ``path`` (see the rule above)."""
    slug = "".join(
        ch if ch.isascii() and ch.isalnum() else "-" * (len(ch.encode("utf-16-le")) // 2)
        for ch in path
    )
    if len(slug) <= SLUG_MAX:
        return slug
    return f"{slug[:SLUG_MAX]}-{_base36(_java_hash(path))}"


def contextfork_cmd() -> list[str]:
    return [sys.executable, "-m", "contextfork"]


# What the clients run themselves (their hooks, MCP server, status line) is tested through the
# client; a test's own setup and checks (install, export, fold, fork, status) run in-process:
# the same result without an interpreter start per call.
def run_contextfork(args: tuple[str, ...], *, cwd: Path, env: dict[str, str], stdin: str | None = None) -> Run:
    started = time.monotonic()
    res = cli(*args, cwd=cwd, input=stdin, environ=env)
    return Run([*contextfork_cmd(), *args], res.returncode, res.stdout, res.stderr,
               time.monotonic() - started)  # fmt: skip


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines file a client or a hook wrote ([] when it is absent)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@dataclass
class Rig:
    """What every client's rig holds: the project, the mock, a private HOME, the client's
    binary and environment, and every bounded run of it."""

    tmp: Path
    repo: Repo
    mock: Any
    home: Path
    bin: Path
    env: dict[str, str]
    runs: list[Run] = field(default_factory=list, kw_only=True)

    def _run_client(self, args: list[str], timeout: float, env: dict[str, str] | None) -> Run:
        run = run_bounded([str(self.bin), *args], cwd=self.repo.path, env=env or self.env, timeout=timeout)
        self.runs.append(run)
        return run

    def contextfork(self, *args: str, check: bool = True, stdin: str | None = None) -> Run:
        run = run_contextfork(args, cwd=self.repo.path, env=self.env, stdin=stdin)
        if check:
            assert run.returncode == 0, f"contextfork failed\n{run}"
        return run

    def hooks_log(self) -> list[dict[str, Any]]:
        return read_jsonl(self.repo.path / ".contextfork" / "logs" / "hooks.log")

    def packages(self) -> list[Path]:
        root = self.repo.path / ".contextfork" / "packages"
        if not root.is_dir():
            return []
        return sorted(p for p in root.iterdir() if p.is_dir() and (p / "manifest.json").exists())


@dataclass
class ClaudeRig(Rig):
    config_dir: Path

    @classmethod
    def create(cls, tmp: Path, prefix: Path, mock: MockAnthropic) -> ClaudeRig:
        repo = make_repo(tmp / "project")
        home = tmp / "home"
        config = tmp / "claude-config"
        env = claude_env(home, config, mock.url)
        return cls(tmp, repo, mock, home, prefix / "node_modules" / ".bin" / "claude", env, config)

    # -- running things
    def run(self, *args: str, timeout: float = 90, env: dict[str, str] | None = None) -> Run:
        return self._run_client(list(args), timeout, env)

    def prompt(
        self,
        text: str,
        *,
        resume: str | None = None,
        allowed: tuple[str, ...] = ("Bash",),
        extra: tuple[str, ...] = (),
        timeout: float = 90,
        env: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """``claude -p TEXT`` (JSON output); fails the test unless the turn succeeded."""
        args = ["-p", text, "--output-format", "json"]
        if allowed:
            args += ["--allowedTools", ",".join(allowed)]
        if resume:
            args += ["--resume", resume]
        run = self.run(*args, *extra, timeout=timeout, env=env)
        assert run.returncode == 0, f"claude failed\n{run}"
        result = json.loads(run.stdout)
        assert isinstance(result, dict), run
        assert not result.get("is_error"), f"claude reported an error\n{run}"
        return result

    def contextfork_json(self, *args: str, check: bool = True) -> dict[str, Any]:
        run = self.contextfork(*args, "--json", check=check)
        data = json.loads(run.stdout)
        assert isinstance(data, dict), run
        return data

    # -- what the client left behind
    @property
    def sessions_dir(self) -> Path:
        return self.config_dir / "projects" / claude_slug(str(self.repo.path.resolve()))

    def transcript(self, session_id: str) -> Path:
        return self.sessions_dir / f"{session_id}.jsonl"

    def transcript_lines(self, session_id: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.transcript(session_id).read_text().splitlines() if line.strip()]

    def trust_project(self, mcp_servers: tuple[str, ...] = ()) -> None:
        """What accepting the trust dialog (and approving project MCP servers) records."""
        path = self.config_dir / ".claude.json"
        data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        projects = data.setdefault("projects", {})
        entry = projects.setdefault(str(self.repo.path.resolve()), {})
        entry["hasTrustDialogAccepted"] = True
        entry["enabledMcpjsonServers"] = list(mcp_servers)
        data.setdefault("hasCompletedOnboarding", True)
        path.write_text(json.dumps(data, indent=2))


@dataclass
class CodexRig(Rig):
    codex_home: Path

    @classmethod
    def create(cls, tmp: Path, prefix: Path, mock: MockOpenAI) -> CodexRig:
        repo = make_repo(tmp / "project")
        home = tmp / "home"
        codex_home = tmp / "codex-home"
        codex_home.mkdir(parents=True)
        env = base_env(home)
        env.update({"CODEX_HOME": str(codex_home), "OPENAI_API_KEY": "sk-e2e-not-a-real-key"})
        (codex_home / "config.toml").write_text(mock.codex_config())
        return cls(tmp, repo, mock, home, prefix / "node_modules" / ".bin" / "codex", env, codex_home)

    def run(self, *args: str, timeout: float = 90) -> Run:
        return self._run_client(list(args), timeout, None)
