"""The real agent clients, installed from npm by package name, and a bounded way to run them.

Pinned versions: what contextfork is tested against. They are installed once into a cache
directory (``$CONTEXTFORK_E2E_CACHE``, default ``~/.cache/contextfork-e2e``) with the ordinary
npm client and reused while the installed version matches. Every run of a client gets its own
HOME and config directories under the test's tmp_path, a loopback mock as its API, and a hard
timeout that kills the whole process group (a hung client never hangs the suite).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
CLAUDE_VERSION = "2.1.328"
CODEX_PACKAGE = "@openai/codex"
CODEX_VERSION = "0.169.0"
PI_PACKAGE = "@mariozechner/pi-coding-agent"
PI_VERSION = "0.73.1"
PINNED = {CLAUDE_PACKAGE: CLAUDE_VERSION, CODEX_PACKAGE: CODEX_VERSION, PI_PACKAGE: PI_VERSION}

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def cache_dir() -> Path:
    env = os.environ.get("CONTEXTFORK_E2E_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "contextfork-e2e"


def node_missing() -> str | None:
    """Why the suite cannot run here (no node / npm), or None."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH: the end-to-end suite needs the real npm clients"
    return None


def _installed_version(prefix: Path, package: str) -> str | None:
    try:
        data = json.loads((prefix / "node_modules" / package / "package.json").read_bytes())
    except (OSError, ValueError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, str) else None


def install_clients(prefix: Path | None = None, timeout: float = 600) -> Path:
    """``npm install`` the pinned clients into the cache (once; a lock serialises parallel runs)."""
    prefix = prefix or cache_dir()
    prefix.mkdir(parents=True, exist_ok=True)
    with (prefix / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = [f"{p}@{v}" for p, v in PINNED.items() if _installed_version(prefix, p) != v]
        if missing:
            proc = subprocess.run(
                ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                 "--save-exact", "--loglevel=error", *missing],
                capture_output=True, text=True, timeout=timeout, check=False,
            )
            if proc.returncode != 0:
                raise RuntimeError(f"npm install {' '.join(missing)} failed:\n{proc.stderr[-3000:]}")
            still = [p for p, v in PINNED.items() if _installed_version(prefix, p) != v]
            if still:
                raise RuntimeError(f"npm install did not leave the pinned versions of {still}")
    return prefix


@dataclass
class Run:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def json(self) -> object:
        return json.loads(self.stdout)

    def __str__(self) -> str:
        return (
            f"$ {' '.join(self.args)}\nexit {self.returncode} after {self.seconds:.1f}s\n"
            f"--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}"
        )


class ClientTimeout(AssertionError):
    pass


def run_bounded(
    args: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 90, stdin: str | None = None
) -> Run:
    """Run a client in its own process group; on timeout kill the whole group and fail."""
    started = time.monotonic()
    proc = subprocess.Popen(
        args, cwd=cwd, env=env, text=True, start_new_session=True,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise ClientTimeout(
            f"{' '.join(args)} did not finish within {timeout}s (killed)\n"
            f"--- stdout\n{out[-2000:]}\n--- stderr\n{err[-2000:]}"
        ) from None
    finally:
        if proc.poll() is None:  # pragma: no cover - communicate returned: the leader is gone
            os.killpg(proc.pid, signal.SIGKILL)
    # Children the client left behind (MCP servers, shells) go with the group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    return Run(args, proc.returncode, out, err, time.monotonic() - started)


def base_env(home: Path, *, path_extra: list[Path] | None = None) -> dict[str, str]:
    """A minimal environment: a temp HOME, our venv's bin and node on PATH, nothing else."""
    path = [str(p) for p in (path_extra or [])] + [str(VENV_BIN)]
    path += [p for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    env = {
        "PATH": os.pathsep.join(dict.fromkeys(path)),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "E2E", "GIT_AUTHOR_EMAIL": "e2e@example.com",
        "GIT_COMMITTER_NAME": "E2E", "GIT_COMMITTER_EMAIL": "e2e@example.com",
        # cold, or through the suite's one command server (tests/conftest.py)
        **{k: v for k, v in os.environ.items() if k.startswith("CONTEXTFORK_SERVER")},
        # a checkout under test that is not the venv's editable install (a git worktree):
        # the client's hooks must run the code under test
        **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
    }
    home.mkdir(parents=True, exist_ok=True)
    return env


def claude_env(home: Path, config_dir: Path, base_url: str) -> dict[str, str]:
    """What makes the real Claude Code talk only to the mock and write only under tmp."""
    env = base_env(home)
    config_dir.mkdir(parents=True, exist_ok=True)
    env.update(
        {
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": "sk-ant-e2e-not-a-real-key",
            "CLAUDE_CONFIG_DIR": str(config_dir),
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "MCP_TIMEOUT": "60000",  # a loaded CI machine starts the MCP server slowly
        }
    )
    return env
