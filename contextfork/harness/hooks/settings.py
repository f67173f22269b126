"""A harness's JSON settings file: our entries merged in and taken out, in the file's own style.

A settings file belongs to the user, so nothing is rewritten wholesale: ``merge_hooks`` puts
our hook groups beside theirs (recognised by command, ``is_ours``), ``unmerge_hooks`` takes them
out again and keeps the containers that existed before, ``dump_like`` writes JSON with the
file's indent, line endings and final newline, and ``write``/``put_back`` go through
``install_state`` so that uninstall restores the original bytes. ``install`` says what to merge.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from contextfork import atomic
from contextfork.errors import UsageError
from contextfork.harness.hooks import install_state

# Ours in any form we ever wrote: bare `contextfork ...` (earlier versions), an absolute console
# script (quoted when the path has a space) or `<python> -m contextfork ...`.
# Both hook forms count: `hooks run <event>` (now) and `hook <event>` (the legacy alias).
_OURS = re.compile(
    r"(^|[/\\\s\"'])contextfork(\.exe)?[\"']?\s+"
    r"((hooks\s+run|hook)\s+(user-prompt-submit|pre-compact|session-start|subagent-start|subagent-stop)|statusline)(\s|$)"
)


def is_ours(command: object) -> bool:
    return isinstance(command, str) and bool(_OURS.search(command))


def parse(path: Path, raw: bytes) -> dict[str, Any]:
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


def write(root: Path, path: Path, data: dict[str, Any], before: bytes | None) -> None:
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


def put_back(
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

