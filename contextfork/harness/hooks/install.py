"""Merge our hook entries into Claude Code / Codex settings without disturbing anything else.

A settings file belongs to the user: other hooks, permissions, env, a statusLine someone else
set. So we never rewrite it wholesale. We add our entries next to theirs, recognise our own by
their command string (``<contextfork> hooks run <event>``, the legacy ``<contextfork> hook <event>``
older versions wrote, or ``<contextfork> statusline``, where
``<contextfork>`` is the absolute entry point, checked at install time, or the bare name older
versions wrote — see ``entrypoint``), keep the
file's key order and formatting (indent, line endings, final newline), and on uninstall put
back exactly what was there: the original bytes when the file is still as we left it, else only
our entries come out and the containers that existed before (even an empty ``"hooks": {}``)
stay (``install_state``). Installing twice changes nothing. A symlinked settings file (dotfiles
repos) is written through to its target. The JSON merge itself is ``settings``; Codex's feature
flag lives in ``codex_config``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from contextfork.envelope import Problem, Result
from contextfork.errors import UsageError
from contextfork.harness.hooks import install_state, settings
from contextfork.harness.hooks.settings import is_ours

# event → (arguments after the contextfork command, timeout seconds, matcher or None). The
# command itself is the absolute entry point found and checked at install time (entrypoint).
CLAUDE_HOOKS: dict[str, tuple[str, int, str | None]] = {
    "UserPromptSubmit": ("hooks run user-prompt-submit", 10, None),
    "PreCompact": ("hooks run pre-compact", 120, None),
    "SessionStart": ("hooks run session-start", 30, None),
    "SubagentStart": ("hooks run subagent-start", 10, None),
    "SubagentStop": ("hooks run subagent-stop", 120, None),
}
CODEX_HOOKS: dict[str, tuple[str, int, str | None]] = {
    "UserPromptSubmit": ("hooks run user-prompt-submit --codex", 10, None),
    "PreCompact": ("hooks run pre-compact --codex", 120, None),
    "SessionStart": ("hooks run session-start --codex", 30, None),
    "SubagentStart": ("hooks run subagent-start --codex", 10, None),
    "SubagentStop": ("hooks run subagent-stop --codex", 120, None),
}
STATUSLINE_ARGS = "statusline"


def with_command(
    table: dict[str, tuple[str, int, str | None]], command: str
) -> dict[str, tuple[str, int, str | None]]:
    """The hook table with each entry's arguments behind ``command`` (the entry point)."""
    return {event: (f"{command} {args}", t, m) for event, (args, t, m) in table.items()}


def entry_command(command: str | None = None) -> str:
    """The absolute, shell-quoted contextfork command, checked to run without our PATH."""
    if command is not None:
        return command
    from contextfork.harness.hooks.entrypoint import checked_command

    return checked_command()


def claude_settings_path(root: Path, scope: str) -> Path:
    """``project``: this machine's project hooks (absolute paths, settings.local.json);
    ``shared``: the committed settings.json (the portable bare command only; ``claude_local``)."""
    if scope == "project":
        return root / ".claude" / "settings.local.json"
    if scope == "shared":
        return root / ".claude" / "settings.json"
    if scope == "user":
        env = os.environ.get("CLAUDE_CONFIG_DIR")
        base = Path(env).expanduser() if env else Path.home() / ".claude"
        return base / "settings.json"
    raise UsageError(f"unknown scope {scope!r}", hint="use --project, --shared or --user")


def codex_hooks_path(root: Path) -> Path:
    return root / ".codex" / "hooks.json"



def install_claude(root: Path, scope: str, command: str | None = None) -> Result:
    """Merge our hooks and statusLine into Claude Code's settings.

    ``command`` is the contextfork command to install (default: the absolute entry point of
    this installation, checked to run before anything is written).
    """
    from contextfork.harness.hooks import claude_local, commands

    path = claude_settings_path(root, scope)
    moved = _move_out_of_shared(root) if scope == "project" else None
    if scope == "shared" and command is None:  # committed: never this machine's paths
        command = claude_local.PORTABLE_COMMAND
    existed = path.exists()
    before = path.read_bytes() if existed else None
    data = settings.parse(path, before) if before is not None else {}
    exe = entry_command(command)
    report = settings.merge_hooks(data, with_command(CLAUDE_HOOKS, exe), path)
    problems: list[Problem] = []
    status_line = data.get("statusLine")
    statusline_command = f"{exe} {STATUSLINE_ARGS}"
    if status_line is None:
        data["statusLine"] = {"type": "command", "command": statusline_command, "padding": 0}
        sl_state = "set"
    elif isinstance(status_line, dict) and is_ours(status_line.get("command")):
        sl_state = "unchanged"
        if status_line.get("command") != statusline_command:  # an older bare or moved install
            data["statusLine"] = {**status_line, "command": statusline_command}
            sl_state = "updated"
    else:
        cmd = status_line.get("command") if isinstance(status_line, dict) else status_line
        sl_state = "kept_existing"
        problems.append(
            Problem(
                "info",
                "statusline_exists",
                f"statusLine is already set ({cmd!r}); left unchanged. "
                f"To show the badge, set its command to `{statusline_command}`.",
                str(path),
            )
        )
    changed = any(v != "unchanged" for v in report.values()) or sl_state in ("set", "updated")
    if changed:
        settings.write(root, path, data, before)
    how = ("portable: runs wherever contextfork is on the PATH" if scope == "shared"
           else "absolute; checked to run without your PATH")  # fmt: skip
    lines = [f"Claude Code hooks ({scope}) in {path}{'' if existed else ' (created)'}:",
             f"  command: {exe} ({how})"]  # fmt: skip
    lines += [f"  {event}: {state}" for event, state in report.items()]
    lines.append(f"  statusLine: {sl_state.replace('_', ' ')}")
    if moved:
        lines.append(f"  moved this machine's paths out of the shared {moved['path']}")
    cmd_path, cmd_state = commands.install(root, "claude-code-user" if scope == "user" else "claude-code")
    lines.append(f"  /handoff command ({cmd_path}): {cmd_state.replace('_', ' ')}")
    if not changed:
        lines.append("  nothing to do (already installed)")
    return Result(
        "hooks install",
        data={
            "harness": "claude-code",
            "scope": scope,
            "path": str(path),
            "command": exe,
            "events": report,
            "statusline": sl_state,
            "changed": changed or moved is not None,
            "moved_from_shared": moved,
            "handoff_command": {"path": str(cmd_path), "state": cmd_state},
        },
        problems=problems,
        text="\n".join(lines),
    )


def _move_out_of_shared(root: Path) -> dict[str, Any] | None:
    """Before a project (this machine's) install: keep settings.local.json out of git, and take
    an older install's machine-specific entries out of the committed settings.json."""
    from contextfork.harness.hooks import claude_local

    claude_local.exclude_local(root)
    if not claude_local.machine_paths_in_shared(root, is_ours):
        return None
    res = uninstall_claude(root, "shared")
    return {"path": str(claude_settings_path(root, "shared")), "removed": res.data["removed"],
            "statusline_removed": res.data.get("statusline_removed", False)}  # fmt: skip


def _drop_command(root: Path, harness: str) -> None:
    from contextfork.harness.hooks import commands

    commands.uninstall(root, harness)


def uninstall_claude(root: Path, scope: str) -> Result:
    path = claude_settings_path(root, scope)
    where: dict[str, Any] = {"harness": "claude-code", "scope": scope, "path": str(path)}
    if scope == "project":  # an older install's machine paths in the shared file go too
        from contextfork.harness.hooks import claude_local

        if claude_local.machine_paths_in_shared(root, is_ours):
            where["removed_from_shared"] = uninstall_claude(root, "shared").data["removed"]
    if not path.exists():
        _drop_command(root, "claude-code-user" if scope == "user" else "claude-code")
        return Result(
            "hooks uninstall",
            data={**where, "removed": {}, "changed": False},
            text=f"{path} does not exist; nothing to remove",
        )
    current = path.read_bytes()
    data = settings.parse(path, current)
    rec = install_state.load(root, install_state.real_target(path))
    removed = settings.unmerge_hooks(data, path, install_state.before_data(rec))
    status_line = data.get("statusLine")
    sl_removed = isinstance(status_line, dict) and is_ours(status_line.get("command"))
    if sl_removed:
        del data["statusLine"]
    changed = bool(removed) or sl_removed
    restored = settings.put_back(root, path, data, current, rec) if changed else "unchanged"
    _drop_command(root, "claude-code-user" if scope == "user" else "claude-code")
    lines = [f"Claude Code hooks ({scope}) in {path}: {restored.replace('_', ' ')}"]
    lines += [f"  {event}: removed {n}" for event, n in removed.items()]
    if sl_removed:
        lines.append("  statusLine: removed")
    if not changed:
        lines.append("  nothing of ours was installed")
    return Result(
        "hooks uninstall",
        data={**where, "removed": removed, "statusline_removed": sl_removed, "changed": changed,
              "restored": restored},
        text="\n".join(lines),
    )


_FLAG_TEXT = {
    "added": "added `{key} = true` under [features]",
    "enabled": "already on (`{key} = true`)",
    "enabled_in_user_config": "already on in the user config (`{key} = true`)",
    "disabled_here": "`{key} = false` here: left as set; Codex will not run the hooks",
    "disabled_in_user_config": "`{key} = false` in the user config: left as set",
    "not_editable": "not changed ({detail})",
}


def _codex_flag(root: Path) -> tuple[dict[str, Any], list[Problem], str]:
    from contextfork.harness.hooks import codex_config

    out = codex_config.enable(root)
    info = {"path": str(out.path), "state": out.state, "key": out.key}
    line = f"  feature flag ({out.path}): " + _FLAG_TEXT[out.state].format(
        key=out.key, detail=out.detail
    )
    problems: list[Problem] = []
    if out.state.startswith("disabled") or out.state == "not_editable":
        problems.append(
            Problem(
                "warning",
                "codex_feature_flag",
                f"Codex hooks are not enabled by contextfork: {out.path}: "
                + _FLAG_TEXT[out.state].format(key=out.key, detail=out.detail)
                + "; to run them set `[features] hooks = true` (see examples/codex/config.toml)",
                str(out.path),
            )
        )
    if out.state == "added":
        problems.append(
            Problem(
                "info",
                "codex_trust",
                "Codex reads a project's .codex/ only when the project is trusted, and asks you "
                "to review new hooks (/hooks) before they run",
                str(out.path),
            )
        )
    return info, problems, line


def install_codex(root: Path, command: str | None = None) -> Result:
    """Merge our hooks into the project's .codex/hooks.json (``command`` as in install_claude)."""
    path = codex_hooks_path(root)
    existed = path.exists()
    before = path.read_bytes() if existed else None
    data = settings.parse(path, before) if before is not None else {}
    exe = entry_command(command)
    report = settings.merge_hooks(data, with_command(CODEX_HOOKS, exe), path)
    changed = any(v != "unchanged" for v in report.values())
    if changed:
        settings.write(root, path, data, before)
    flag, flag_problems, flag_line = _codex_flag(root)
    problems = flag_problems
    from contextfork.harness.hooks import commands

    # Codex reads prompts from $CODEX_HOME only (user-level): written when CODEX_HOME names it,
    # else offered (a project install does not write into the home directory unasked).
    if os.environ.get("CODEX_HOME"):
        cmd_path, cmd_state = commands.install(root, "codex")
    else:
        cmd_path, cmd_state = commands.command_path(root, "codex"), "offered"
    lines = [f"Codex hooks in {path}{'' if existed else ' (created)'}:",
             f"  command: {exe} (absolute; checked to run without your PATH)"]  # fmt: skip
    lines += [f"  {event}: {state}" for event, state in report.items()]
    lines.append(flag_line)
    lines.append(f"  /prompts:handoff ({cmd_path}): " + (
        f"copy {commands.source_path()} there to add it"
        if cmd_state == "offered" else cmd_state.replace("_", " ")))  # fmt: skip
    changed = changed or flag["state"] == "added"
    if not changed:
        lines.append("  nothing to do (already installed)")
    return Result(
        "hooks install",
        data={"harness": "codex", "path": str(path), "command": exe, "events": report,
              "changed": changed, "feature_flag": flag},
        problems=problems,
        text="\n".join(lines),
    )  # fmt: skip


def uninstall_codex(root: Path) -> Result:
    from contextfork.harness.hooks import codex_config

    flag = codex_config.disable(root)  # first: it may leave .codex/ empty for hooks.json's turn
    path = codex_hooks_path(root)
    removed: dict[str, int] = {}
    restored = "absent"
    if path.exists():
        current = path.read_bytes()
        data = settings.parse(path, current)
        rec = install_state.load(root, install_state.real_target(path))
        removed = settings.unmerge_hooks(data, path, install_state.before_data(rec))
        restored = settings.put_back(root, path, data, current, rec) if removed else "unchanged"
    lines = [f"Codex hooks in {path}: {restored.replace('_', ' ')}"]
    lines += [f"  {e}: removed {n}" for e, n in removed.items()]
    if not removed:
        lines.append("  nothing of ours was installed")
    lines.append(f"  feature flag ({flag.path}): {flag.state.replace('_', ' ')}")
    problems = []
    if flag.state == "not_editable":
        problems.append(Problem("warning", "codex_feature_flag", str(flag.detail), str(flag.path)))
    changed = bool(removed) or flag.state not in ("absent", "not_editable")
    return Result(
        "hooks uninstall",
        data={"harness": "codex", "path": str(path), "removed": removed, "changed": changed,
              "restored": restored, "feature_flag": {"path": str(flag.path), "state": flag.state}},
        problems=problems,
        text="\n".join(lines),
    )  # fmt: skip


__all__ = ["install_claude", "install_codex", "is_ours", "uninstall_claude", "uninstall_codex"]
