"""``hooks install --claude --proxy``: the proxy as the project's default, and a client that
still works where contextfork is not installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import Repo, clean_env, make_repo, run_cli
from tests.proxy.rig import Upstream
from tests.proxy.test_launcher import CLIENT


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream()
    yield up
    up.close()


def _bin(tmp_path: Path, with_contextfork: bool) -> Path:
    """A PATH directory holding a fake `claude` (and `contextfork` when asked)."""
    d = tmp_path / ("bin-cf" if with_contextfork else "bin-plain")
    d.mkdir(exist_ok=True)
    (d / "client.py").write_text(CLIENT)
    claude = d / "claude"
    claude.write_text(f"#!/bin/sh\nexec {sys.executable} {d / 'client.py'} once\n")
    claude.chmod(0o755)
    if with_contextfork:
        cf = d / "contextfork"
        cf.write_text(f"#!/bin/sh\nexec {sys.executable} -m contextfork \"$@\"\n")
        cf.chmod(0o755)
    return d


def _shell(repo: Path, env: dict[str, str], function: str) -> str:
    proc = subprocess.run(["bash", "-c", f"{function}\nclaude"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=90, check=False)
    assert proc.returncode == 0, proc.stderr
    return next(ln.split()[1] for ln in proc.stdout.splitlines() if ln.startswith("BASE"))


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_printed_function_uses_the_proxy_where_enabled_and_the_plain_client_elsewhere(
        tmp_path: Path, repo: Repo, upstream: Upstream) -> None:
    res = run_cli("hooks", "install", "--claude", "--proxy", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    function = json.loads(res.stdout)["data"]["shell"]
    assert json.loads((repo.path / ".contextfork" / "proxy-default.json").read_text()) == {
        "claude": True}
    pdir = tmp_path / "proxy-dir"
    pdir.mkdir(mode=0o700)
    base_env = clean_env({"CONTEXTFORK_PROXY_DIR": str(pdir), "CONTEXTFORK_PROXY_GRACE": "1",
                          "ANTHROPIC_BASE_URL": upstream.url, "CONTEXTFORK_SERVER": "off"})
    plain_path = f"{_bin(tmp_path, False)}{os.pathsep}/usr/bin{os.pathsep}/bin"
    with_cf = f"{_bin(tmp_path, True)}{os.pathsep}/usr/bin{os.pathsep}/bin"
    other = make_repo(tmp_path / "other")

    proxied = _shell(repo.path, {**base_env, "PATH": with_cf}, function)
    elsewhere = _shell(other.path, {**base_env, "PATH": with_cf}, function)
    without = _shell(repo.path, {**base_env, "PATH": plain_path}, function)

    assert "/c/" in proxied and proxied != upstream.url
    assert elsewhere == upstream.url  # a project that did not opt in: the client directly
    assert without == upstream.url  # contextfork absent: the client still works


def test_uninstall_removes_the_proxy_default_with_the_hooks(repo: Repo) -> None:
    assert run_cli("hooks", "install", "--claude", "--proxy", cwd=repo.path).returncode == 0

    res = run_cli("hooks", "uninstall", "--claude", cwd=repo.path)

    assert res.returncode == 0, res.stderr
    assert not (repo.path / ".contextfork" / "proxy-default.json").exists()


def test_proxy_needs_claude_or_codex(repo: Repo) -> None:
    res = run_cli("hooks", "install", "--git", "--proxy", cwd=repo.path)

    assert res.returncode == 2 and "--proxy goes with --claude or --codex" in res.stderr
