"""The Claude Code plugin in this repository says what contextfork itself installs."""

from __future__ import annotations

import json
from pathlib import Path

from contextfork import __version__
from contextfork.harness.hooks.commands import command_text
from contextfork.harness.hooks.install import CLAUDE_HOOKS

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugins" / "contextfork"


def test_plugin_hooks_version_and_handoff_command_match_the_package() -> None:
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    got = {e: (g[0]["hooks"][0]["command"], g[0]["hooks"][0]["timeout"]) for e, g in hooks.items()}
    assert got == {e: (f"contextfork {args}", t) for e, (args, t, _m) in CLAUDE_HOOKS.items()}
    assert json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())["version"] == __version__
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    [entry] = market["plugins"]
    assert (ROOT / entry["source"]).resolve() == PLUGIN and entry["version"] == __version__
    assert (PLUGIN / "commands" / "handoff.md").read_text() == command_text()
    server = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["contextfork"]
    assert (server["command"], server["args"]) == ("contextfork", ["mcp"])
