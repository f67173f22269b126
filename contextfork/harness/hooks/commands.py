"""The ``/handoff`` command for each harness: the model writes the parts, contextfork verifies.

One text (``templates/commands/handoff.md``) in the place each harness reads commands from:
Claude Code's project commands (``.claude/commands/handoff.md``), Codex's custom prompts
(``$CODEX_HOME/prompts/handoff.md``, run as ``/prompts:handoff``) and pi's prompt templates
(``.pi/prompts/handoff.md``). The text names no path of this machine, so the project files can be
committed. A file someone else wrote there is never overwritten.
"""

from __future__ import annotations

import os
from pathlib import Path

from contextfork import atomic
from contextfork.resources import template_path

NAME = "handoff.md"
MARK = "contextfork MCP tool `export_session_context`"  # how we recognise our own file


def source_path() -> Path:
    return template_path(f"commands/{NAME}")


def command_text() -> str:
    return source_path().read_text(encoding="utf-8")


def command_path(root: Path, harness: str) -> Path:
    if harness == "claude-code":
        return root / ".claude" / "commands" / NAME
    if harness == "claude-code-user":
        from contextfork.transcript.locate import claude_config_dir

        return claude_config_dir() / "commands" / NAME
    if harness == "codex":
        home = os.environ.get("CODEX_HOME")
        return (Path(home).expanduser() if home else Path.home() / ".codex") / "prompts" / NAME
    if harness == "pi":
        return root / ".pi" / "prompts" / NAME
    raise ValueError(harness)


def install(root: Path, harness: str) -> tuple[Path, str]:
    """Write the command; (path, "written" | "unchanged" | "kept_foreign")."""
    path = command_path(root, harness)
    text = command_text()
    if path.exists():
        current = path.read_text(encoding="utf-8", errors="replace")
        if current == text:
            return path, "unchanged"
        if MARK not in current:
            return path, "kept_foreign"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, text)
    return path, "written"


def uninstall(root: Path, harness: str) -> bool:
    path = command_path(root, harness)
    if path.is_file() and MARK in path.read_text(encoding="utf-8", errors="replace"):
        path.unlink()
        project = harness in ("claude-code", "pi")  # .claude/.pi of the project, not a home dir
        for parent in (path.parent, path.parent.parent)[: 2 if project else 1]:  # if empty
            try:
                parent.rmdir()
            except OSError:
                break
        return True
    return False


def unwritten_parts(pkg: Path) -> list[str]:
    """The judgement parts of a package that nobody wrote (no model, no harness summary)."""
    import json

    try:
        record = json.loads((pkg / "handoff_claims.json").read_text(encoding="utf-8"))
        parts = record.get("parts") or {}
    except (OSError, ValueError, AttributeError):
        parts = {}
    wanted = ("active_goal", "settled_decisions", "open_risks", "next_action")
    return [p for p in wanted if (parts.get(p) or {}).get("source", "not recorded") == "not recorded"]


def offer(pkg: Path, session_id: str) -> str | None:
    """What ``fork`` says when the package's judgement parts are not recorded: ``/handoff``."""
    missing = unwritten_parts(pkg)
    if not missing:
        return None
    return (f"  handoff:   {', '.join(missing)} not recorded; to have the model write them "
            f"(contextfork verifies each claim): `claude --resume {session_id}`, then `/handoff`")
