"""The Claude Code plugin, installed with the real client from this repository's marketplace:
its hooks fire (the brief reaches a new session) and its /handoff command expands."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import contextfork
from tests.e2e.mock_anthropic import Reply, Usage
from tests.e2e.rigs import ClaudeRig

CF_ROOT = Path(contextfork.__file__).resolve().parents[1]


def _shim(claude: ClaudeRig) -> None:
    """`contextfork` on the PATH runs the code under test (the plugin calls the installed one)."""
    bindir = claude.tmp / "shim-bin"
    bindir.mkdir()
    shim = bindir / "contextfork"
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(CF_ROOT))} exec "
                    f"{shlex.quote(sys.executable)} -m contextfork \"$@\"\n")  # fmt: skip
    shim.chmod(0o755)
    claude.env["PATH"] = f"{bindir}:{claude.env['PATH']}"


def test_plugin_installs_from_the_local_marketplace_and_its_hooks_and_commands_work(
    claude: ClaudeRig,
) -> None:
    _shim(claude)
    added = claude.run("plugin", "marketplace", "add", str(CF_ROOT), timeout=120)
    assert added.returncode == 0, added
    installed = claude.run("plugin", "install", "contextfork@contextfork", timeout=120)
    assert installed.returncode == 0, installed
    listed = claude.run("plugin", "list", timeout=60)
    assert "contextfork@contextfork" in listed.stdout and "enabled" in listed.stdout, listed
    assert not (claude.repo.path / ".claude").exists()  # nothing written into the project
    servers = claude.run("mcp", "list", timeout=120)
    line = next((ln for ln in servers.stdout.splitlines() if "contextfork" in ln), "")
    assert "Connected" in line, servers  # the plugin's MCP server runs
    pkg = json.loads(claude.contextfork("export", "--goal", "Ship the plugin", "--json").stdout)
    pid = pkg["data"]["package_id"]
    claude.trust_project()
    claude.mock.script(Reply(text="Hello.", usage=Usage(input_tokens=3000)))
    claude.prompt("hi")
    first = json.dumps(claude.mock.main_requests()[0])
    assert pid in first and "Ship the plugin" in first  # the plugin's SessionStart hook ran
    claude.mock.script(Reply(text="Writing it.", usage=Usage(input_tokens=3200)))
    claude.prompt("/contextfork:handoff the plugin")
    assert "contextfork checks each item" in json.dumps(claude.mock.main_requests()[-1])
