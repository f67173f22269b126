"""Claude Code's project hooks live in ``.claude/settings.local.json``: this machine's paths only.

Hooks are installed by absolute path (``entrypoint``: the harness's PATH is unknown), and an
absolute path is true on one machine only. ``.claude/settings.json`` is committed and shared,
and ``export`` + ``resume --apply`` carry it to other clones, where every such hook exits 127.
So a project install writes ``settings.local.json`` (Claude Code reads it beside
``settings.json``; it is kept out of git through ``.git/info/exclude``, so no export captures
it), and moves entries an older version left in ``settings.json`` out of it. ``--shared`` puts
only the bare ``contextfork`` command in ``settings.json``: the one command that works on every
machine where contextfork is installed (on the PATH). The Claude Code plugin is the other
portable route (``plugin/``).
"""

from __future__ import annotations

import contextlib
import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

Ours = Callable[[object], bool]  # install.is_ours (passed in: install imports this module)

SHARED_FILE = Path(".claude") / "settings.json"
EXCLUDE = "/.claude/settings.local.json"
PORTABLE_COMMAND = "contextfork"


def machine_specific(command: str) -> bool:
    """A command of ours that names a path (an absolute console script or interpreter)."""
    try:
        head = shlex.split(command)[:1]
    except ValueError:
        return True
    return head != [PORTABLE_COMMAND]


def ours_in(path: Path, is_ours: Ours) -> list[str]:
    """Every command of ours a settings file holds (hooks and statusLine)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            cmd = node.get("command")
            if isinstance(cmd, str) and is_ours(cmd):
                found.append(cmd)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    if isinstance(data, dict):
        walk({"hooks": data.get("hooks"), "statusLine": data.get("statusLine")})
    return found


def machine_paths_in_shared(root: Path, is_ours: Ours) -> list[str]:
    """Our commands with this machine's paths in the committed ``.claude/settings.json``."""
    return [c for c in ours_in(root / SHARED_FILE, is_ours) if machine_specific(c)]


def exclude_local(root: Path) -> None:
    """Keep the local settings file out of git (and so out of every export)."""
    from contextfork import gitstate

    with contextlib.suppress(Exception):  # not excluded is visible in `git status`, not fatal
        gitstate.ensure_excluded(root, EXCLUDE)
