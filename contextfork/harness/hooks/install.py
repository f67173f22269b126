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
repos) is written through to its target. Codex's feature flag lives in ``codex_config``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from contextfork import atomic
from contextfork.envelope import Problem, Result
from contextfork.errors import UsageError
from contextfork.harness.hooks import install_state

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
# Ours in any form we ever wrote: bare `contextfork ...` (earlier versions), an absolute console
# script (quoted when the path has a space) or `<python> -m contextfork ...`.
# Both hook forms count: `hooks run <event>` (now) and `hook <event>` (the legacy alias).
_OURS = re.compile(
    r"(^|[/\\\s\"'])contextfork(\.exe)?[\"']?\s+"
    r"((hooks\s+run|hook)\s+(user-prompt-submit|pre-compact|session-start|subagent-start|subagent-stop)|statusline)(\s|$)"
)


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


def is_ours(command: object) -> bool:
    return isinstance(command, str) and bool(_OURS.search(command))


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


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    return _parse(path, path.read_bytes())


def _parse(path: Path, raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(
            f"{path} is not valid JSON ({err}); left untouched", hint="fix the file, then retry"
        ) from err
    if not isinstance(data, dict):
        raise UsageError(f"{path}: top level is not a JSON object; left untouched")
    return data


_INDENT = re.compile(r"[\[{][ \t]*\r?\n([ \t]+)\S")


def dump_like(data: dict[str, Any], original: str | None) -> bytes:
    """JSON in the original file's style: its indent, line endings and final newline."""
    indent: int | str = 2
    if original:
        m = _INDENT.search(original)
        if m:
            ws = m.group(1)
            indent = len(ws) if set(ws) == {" "} else ws
    ascii_only = bool(original) and "\\u" in str(original) and str(original).isascii()
    text = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    if original is None or original.endswith("\n") or not original.strip():
        text += "\n"
    if original and "\r\n" in original:
        text = text.replace("\n", "\r\n")
    return text.encode("utf-8")


def _write(root: Path, path: Path, data: dict[str, Any], before: bytes | None) -> None:
    target = install_state.real_target(path)
    text = dump_like(data, None if before is None else before.decode("utf-8"))
    mode = target.stat().st_mode & 0o777 if target.exists() else None
    created = install_state.missing_dirs(target)
    atomic.write_bytes(target, text, mode=mode)
    if before is not None and _holds_ours(before) and install_state.load(root, target) is None:
        return  # installed by a version that kept no record: uninstall removes ours structurally
    install_state.note_write(root, target, before, text, created)


def _holds_ours(raw: bytes) -> bool:
    data = json.loads(raw.decode("utf-8"))
    sl = data.get("statusLine")
    if isinstance(sl, dict) and is_ours(sl.get("command")):
        return True
    return bool(unmerge_hooks(json.loads(raw.decode("utf-8")), Path()))


def _hooks_table(data: dict[str, Any], path: Path) -> dict[str, Any]:
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError(f"{path}: 'hooks' is not an object; left untouched")
    return hooks


def _our_entry(command: str, timeout: int, matcher: str | None) -> dict[str, Any]:
    group: dict[str, Any] = {}
    if matcher is not None:
        group["matcher"] = matcher
    group["hooks"] = [{"type": "command", "command": command, "timeout": timeout}]
    return group


def _strip_ours(groups: list[Any]) -> tuple[list[Any], int]:
    """Remove our hook items; drop matcher groups that only held ours. Returns (groups, removed)."""
    out: list[Any] = []
    removed = 0
    for group in groups:
        items = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(items, list):
            out.append(group)
            continue
        keep = [h for h in items if not (isinstance(h, dict) and is_ours(h.get("command")))]
        removed += len(items) - len(keep)
        if keep:
            out.append({**group, "hooks": keep} if len(keep) != len(items) else group)
        elif not items:
            out.append(group)  # an empty group that was not ours stays as it was
    return out, removed


def _ours_item(item: object) -> bool:
    return isinstance(item, dict) and is_ours(item.get("command"))


def _place(groups: list[Any], stripped: list[Any], desired: dict[str, Any]) -> list[Any]:
    """``stripped`` with ``desired`` where our first entry stood (an older ``hook <event>`` is
    upgraded in place, so hook order the user arranged stays); at the end when there was none."""
    for before, group in enumerate(groups):
        items = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(items, list) and any(
            isinstance(h, dict) and is_ours(h.get("command")) for h in items
        ):
            at = before + (1 if any(not _ours_item(h) for h in items) else 0)
            return [*stripped[:at], desired, *stripped[at:]]
    return [*stripped, desired]


def merge_hooks(
    data: dict[str, Any], wanted: dict[str, tuple[str, int, str | None]], path: Path
) -> dict[str, str]:
    """Put exactly one entry of ours per event; report added / updated / unchanged per event."""
    hooks = _hooks_table(data, path)
    report: dict[str, str] = {}
    for event, (command, timeout, matcher) in wanted.items():
        groups = hooks.get(event, [])
        if not isinstance(groups, list):
            raise UsageError(f"{path}: hooks.{event} is not a list; left untouched")
        desired = _our_entry(command, timeout, matcher)
        ours = [
            g
            for g in groups
            if isinstance(g, dict)
            and isinstance(g.get("hooks"), list)
            and g["hooks"]
            and all(isinstance(h, dict) and is_ours(h.get("command")) for h in g["hooks"])
        ]
        stripped, removed = _strip_ours(groups)
        if ours == [desired] and removed == 1:
            report[event] = "unchanged"
            continue
        hooks[event] = _place(groups, stripped, desired)
        report[event] = "updated" if removed else "added"
    return report


def unmerge_hooks(
    data: dict[str, Any], path: Path, before: dict[str, Any] | None = None
) -> dict[str, int]:
    """Remove our entries; drop a container our removal emptied unless it was there before."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return {}
    old_hooks = before.get("hooks") if before is not None else None
    had = set(old_hooks) if isinstance(old_hooks, dict) else set()
    report: dict[str, int] = {}
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        stripped, removed = _strip_ours(groups)
        if not removed:
            continue
        report[event] = removed
        if stripped or event in had:
            hooks[event] = stripped
        else:
            del hooks[event]
    if report and not hooks and not isinstance(old_hooks, dict):
        del data["hooks"]
    return report


def _put_back(
    root: Path, path: Path, data: dict[str, Any], current: bytes, rec: install_state.Record | None
) -> str:
    """Write the settings without our entries: the original bytes when nobody edited the file
    since we wrote it ("original_bytes"), else ours removed in the file's own style
    ("entries_removed"); a file we created and that holds nothing else goes ("file_removed")."""
    target = install_state.real_target(path)
    if install_state.restore_exact(root, target, current):
        return "original_bytes" if target.exists() else "file_removed"
    if rec is not None and rec.before is None and not data:
        install_state.remove_created(root, target, rec)
        install_state.forget(root, target)
        return "file_removed"
    text = dump_like(data, current.decode("utf-8"))
    atomic.write_bytes(target, text, mode=target.stat().st_mode & 0o777)
    install_state.forget(root, target)
    return "entries_removed"


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
    data = _parse(path, before) if before is not None else {}
    exe = entry_command(command)
    report = merge_hooks(data, with_command(CLAUDE_HOOKS, exe), path)
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
        _write(root, path, data, before)
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
    data = _parse(path, current)
    rec = install_state.load(root, install_state.real_target(path))
    removed = unmerge_hooks(data, path, install_state.before_data(rec))
    status_line = data.get("statusLine")
    sl_removed = isinstance(status_line, dict) and is_ours(status_line.get("command"))
    if sl_removed:
        del data["statusLine"]
    changed = bool(removed) or sl_removed
    restored = _put_back(root, path, data, current, rec) if changed else "unchanged"
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
    data = _parse(path, before) if before is not None else {}
    exe = entry_command(command)
    report = merge_hooks(data, with_command(CODEX_HOOKS, exe), path)
    changed = any(v != "unchanged" for v in report.values())
    if changed:
        _write(root, path, data, before)
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
        data = _parse(path, current)
        rec = install_state.load(root, install_state.real_target(path))
        removed = unmerge_hooks(data, path, install_state.before_data(rec))
        restored = _put_back(root, path, data, current, rec) if removed else "unchanged"
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
