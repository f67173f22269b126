"""Merge our hook entries into Claude Code / Codex settings without disturbing anything else.

A settings file belongs to the user: other hooks, permissions, env, a statusLine someone else
set. So we never rewrite it wholesale. We add our entries next to theirs, recognise our own by
their command string (``contextfork hook <event>`` / ``contextfork statusline``), keep the
file's key order, and on uninstall remove exactly those entries (plus any container our removal
left empty). Installing twice changes nothing. A symlinked settings file (dotfiles repos) is
written through to its target.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from contextfork import atomic
from contextfork.envelope import Problem, Result
from contextfork.errors import UsageError

EXE = "contextfork"
STATUSLINE_COMMAND = f"{EXE} statusline"

# event → (command, timeout seconds, matcher or None)
CLAUDE_HOOKS: dict[str, tuple[str, int, str | None]] = {
    "UserPromptSubmit": (f"{EXE} hook user-prompt-submit", 10, None),
    "PreCompact": (f"{EXE} hook pre-compact", 120, None),
    "SessionStart": (f"{EXE} hook session-start", 30, None),
}
CODEX_HOOKS: dict[str, tuple[str, int, str | None]] = {
    "UserPromptSubmit": (f"{EXE} hook user-prompt-submit --codex", 10, None),
    "PreCompact": (f"{EXE} hook pre-compact --codex", 120, None),
    "SessionStart": (f"{EXE} hook session-start --codex", 30, None),
}
_OURS = re.compile(
    r"(^|[/\\\s\"'])contextfork(\.exe)?\"?\s+(hook\s+(user-prompt-submit|pre-compact|session-start)|statusline)(\s|$)"
)


def is_ours(command: object) -> bool:
    return isinstance(command, str) and bool(_OURS.search(command))


def claude_settings_path(root: Path, scope: str) -> Path:
    if scope == "project":
        return root / ".claude" / "settings.json"
    if scope == "user":
        env = os.environ.get("CLAUDE_CONFIG_DIR")
        base = Path(env).expanduser() if env else Path.home() / ".claude"
        return base / "settings.json"
    raise UsageError(f"unknown scope {scope!r}", hint="use --project or --user")


def codex_hooks_path(root: Path) -> Path:
    return root / ".codex" / "hooks.json"


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(
            f"{path} is not valid JSON ({err}); left untouched", hint="fix the file, then retry"
        ) from err
    if not isinstance(data, dict):
        raise UsageError(f"{path}: top level is not a JSON object; left untouched")
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    mode = target.stat().st_mode & 0o777 if target.exists() else None
    atomic.write_text(target, text, mode=mode)


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
            and g.get("hooks")
            and all(isinstance(h, dict) and is_ours(h.get("command")) for h in g["hooks"])
        ]
        stripped, removed = _strip_ours(groups)
        if ours == [desired] and removed == 1:
            report[event] = "unchanged"
            continue
        hooks[event] = [*stripped, desired]
        report[event] = "updated" if removed else "added"
    return report


def unmerge_hooks(data: dict[str, Any], path: Path) -> dict[str, int]:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return {}
    report: dict[str, int] = {}
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        stripped, removed = _strip_ours(groups)
        if not removed:
            continue
        report[event] = removed
        if stripped:
            hooks[event] = stripped
        else:
            del hooks[event]
    if report and not hooks:
        del data["hooks"]
    return report


def _exe_problem() -> list[Problem]:
    if shutil.which(EXE) is None:
        return [
            Problem(
                "warning",
                "not_on_path",
                f"`{EXE}` is not on PATH; the harness will not find the hook commands",
                None,
            )
        ]
    return []


def install_claude(root: Path, scope: str) -> Result:
    path = claude_settings_path(root, scope)
    data = _read(path)
    existed = path.exists()
    report = merge_hooks(data, CLAUDE_HOOKS, path)
    problems = _exe_problem()
    status_line = data.get("statusLine")
    if status_line is None:
        data["statusLine"] = {"type": "command", "command": STATUSLINE_COMMAND, "padding": 0}
        sl_state = "set"
    elif isinstance(status_line, dict) and is_ours(status_line.get("command")):
        sl_state = "unchanged"
    else:
        cmd = status_line.get("command") if isinstance(status_line, dict) else status_line
        sl_state = "kept_existing"
        problems.append(
            Problem(
                "info",
                "statusline_exists",
                f"statusLine is already set ({cmd!r}); left unchanged. "
                f"To show the badge, set its command to `{STATUSLINE_COMMAND}`.",
                str(path),
            )
        )
    changed = any(v != "unchanged" for v in report.values()) or sl_state == "set"
    if changed:
        _write(path, data)
    lines = [f"Claude Code hooks ({scope}) in {path}{'' if existed else ' (created)'}:"]
    lines += [f"  {event}: {state}" for event, state in report.items()]
    lines.append(f"  statusLine: {sl_state.replace('_', ' ')}")
    if not changed:
        lines.append("  nothing to do (already installed)")
    return Result(
        "hooks install",
        data={
            "harness": "claude-code",
            "scope": scope,
            "path": str(path),
            "events": report,
            "statusline": sl_state,
            "changed": changed,
        },
        problems=problems,
        text="\n".join(lines),
    )


def uninstall_claude(root: Path, scope: str) -> Result:
    path = claude_settings_path(root, scope)
    if not path.exists():
        return Result(
            "hooks uninstall",
            data={
                "harness": "claude-code",
                "scope": scope,
                "path": str(path),
                "removed": {},
                "changed": False,
            },
            text=f"{path} does not exist; nothing to remove",
        )
    data = _read(path)
    removed = unmerge_hooks(data, path)
    status_line = data.get("statusLine")
    sl_removed = isinstance(status_line, dict) and is_ours(status_line.get("command"))
    if sl_removed:
        del data["statusLine"]
    changed = bool(removed) or sl_removed
    if changed:
        _write(path, data)
    lines = [f"Claude Code hooks ({scope}) in {path}:"]
    lines += [f"  {event}: removed {n}" for event, n in removed.items()]
    if sl_removed:
        lines.append("  statusLine: removed")
    if not changed:
        lines.append("  nothing of ours was installed")
    return Result(
        "hooks uninstall",
        data={
            "harness": "claude-code",
            "scope": scope,
            "path": str(path),
            "removed": removed,
            "statusline_removed": sl_removed,
            "changed": changed,
        },
        text="\n".join(lines),
    )


def _codex_feature_problem(root: Path) -> list[Problem]:
    home = os.environ.get("CODEX_HOME")
    candidates = [
        root / ".codex" / "config.toml",
        (Path(home).expanduser() if home else Path.home() / ".codex") / "config.toml",
    ]
    flag = re.compile(r"^\s*(codex_)?hooks\s*=\s*true\b", re.M)
    for cfg in candidates:
        try:
            if flag.search(cfg.read_text(encoding="utf-8")):
                return []
        except (OSError, UnicodeDecodeError):
            continue
    return [
        Problem(
            "info",
            "codex_feature_flag",
            "Codex runs hooks only with `[features] codex_hooks = true` in config.toml "
            "(see examples/codex/config.toml)",
            None,
        )
    ]


def install_codex(root: Path) -> Result:
    path = codex_hooks_path(root)
    data = _read(path)
    existed = path.exists()
    report = merge_hooks(data, CODEX_HOOKS, path)
    changed = any(v != "unchanged" for v in report.values())
    if changed:
        _write(path, data)
    problems = _exe_problem() + _codex_feature_problem(root)
    lines = [f"Codex hooks in {path}{'' if existed else ' (created)'}:"]
    lines += [f"  {event}: {state}" for event, state in report.items()]
    if not changed:
        lines.append("  nothing to do (already installed)")
    return Result(
        "hooks install",
        data={"harness": "codex", "path": str(path), "events": report, "changed": changed},
        problems=problems,
        text="\n".join(lines),
    )


def uninstall_codex(root: Path) -> Result:
    path = codex_hooks_path(root)
    if not path.exists():
        return Result(
            "hooks uninstall",
            data={"harness": "codex", "path": str(path), "removed": {}, "changed": False},
            text=f"{path} does not exist; nothing to remove",
        )
    data = _read(path)
    removed = unmerge_hooks(data, path)
    if removed:
        _write(path, data)
    lines = [f"Codex hooks in {path}:"] + [f"  {e}: removed {n}" for e, n in removed.items()]
    if not removed:
        lines.append("  nothing of ours was installed")
    return Result(
        "hooks uninstall",
        data={"harness": "codex", "path": str(path), "removed": removed, "changed": bool(removed)},
        text="\n".join(lines),
    )


__all__ = ["install_claude", "install_codex", "is_ours", "uninstall_claude", "uninstall_codex"]
