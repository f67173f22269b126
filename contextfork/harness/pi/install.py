"""``hooks install --pi`` / ``hooks uninstall --pi``: contextfork's extension file for pi.

pi auto-discovers extensions from ``.pi/extensions/*.ts`` (project) and
``~/.pi/agent/extensions/*.ts`` (user; ``$PI_CODING_AGENT_DIR/extensions`` when set) and loads
TypeScript as is, so installing is writing one file: the packaged ``hooks/pi/contextfork.ts``
with the absolute contextfork command (checked to run without the user's PATH, as for Claude
Code hooks; ``entrypoint``) written into it. The file is ours by name *and* by its first line;
a file of that name that is not ours is never overwritten, and uninstall removes exactly our
file (and the directories the install created), nothing else.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from contextfork import atomic
from contextfork.envelope import Result
from contextfork.errors import CheckFailed, UsageError
from contextfork.harness.hooks import install_state

FILE_NAME = "contextfork.ts"
MARKER = "// contextfork for pi:"
_ARGV = re.compile(r"/\*CONTEXTFORK_ARGV\*/.*?/\*END_CONTEXTFORK_ARGV\*/", re.S)


def extension_source() -> str:
    """The packaged extension (``contextfork/_data/hooks/pi`` in a wheel, ``hooks/pi`` here)."""
    from contextfork.resources import data_dir

    return (data_dir("hooks") / "pi" / FILE_NAME).read_text(encoding="utf-8")


def extension_path(root: Path, scope: str) -> Path:
    if scope == "project":
        return root / ".pi" / "extensions" / FILE_NAME
    if scope == "user":
        env = os.environ.get("PI_CODING_AGENT_DIR")
        base = Path(env).expanduser() if env else Path.home() / ".pi" / "agent"
        return base / "extensions" / FILE_NAME
    raise UsageError(f"unknown scope {scope!r}", hint="use --project or --user")


def checked_argv(argv: list[str] | None = None) -> list[str]:
    """The contextfork argv the extension spawns: the first candidate that runs through a shell
    without our PATH (the console script beside this interpreter, else ``python -m``)."""
    if argv is not None:
        return argv
    from contextfork.harness.hooks.entrypoint import candidates, render, runs

    tried = []
    for cand in candidates():
        why = runs(render(cand))
        if why is None:
            return cand
        tried.append(f"`{render(cand)}` ({why})")
    raise CheckFailed("cannot install the pi extension: no absolute contextfork command runs "
                      "here: " + "; ".join(tried),
                      hint="reinstall contextfork in this environment, then retry")


def render_extension(argv: list[str]) -> str:
    text = extension_source()
    literal = json.dumps(argv, ensure_ascii=False)
    out, n = _ARGV.subn(lambda _m: f"/*CONTEXTFORK_ARGV*/ {literal} /*END_CONTEXTFORK_ARGV*/",
                        text, count=1)
    if n != 1:  # pragma: no cover - the packaged file always has the slot
        raise CheckFailed("the packaged pi extension has no command slot (broken install?)")
    return out


def is_ours(raw: bytes) -> bool:
    return raw.decode("utf-8", errors="replace").lstrip("\ufeff").startswith(MARKER)


def install_pi(root: Path, scope: str, argv: list[str] | None = None) -> Result:
    path = extension_path(root, scope)
    command = checked_argv(argv)
    text = render_extension(command).encode("utf-8")
    before = path.read_bytes() if path.is_file() else None
    if path.exists() and (before is None or not is_ours(before)):
        raise UsageError(f"{path} exists and is not contextfork's extension; left untouched",
                         hint="move it away (or rename it), then retry")
    state = "unchanged" if before == text else ("updated" if before is not None else "added")
    if state != "unchanged":
        created = install_state.missing_dirs(path)
        atomic.write_bytes(path, text)
        install_state.note_write(root, path, before, text, created)
    lines = [f"pi extension ({scope}): {path} {state}",
             f"  command: {' '.join(command)} (absolute; checked to run without your PATH)",
             "  pi loads it at its next start: live folding on every model call, the "
             "contextfork_context tool, threshold compactions answered by an epoch commit"]
    if scope == "project":  # pi's prompt templates: /handoff, the model writes, we verify
        from contextfork.harness.hooks import commands

        cmd_path, cmd_state = commands.install(root, "pi")
        lines.append(f"  /handoff prompt ({cmd_path}): {cmd_state.replace('_', ' ')}")
    return Result("hooks install", data={
        "harness": "pi", "scope": scope, "path": str(path), "command": command,
        "state": state, "changed": state != "unchanged"}, text="\n".join(lines))


def uninstall_pi(root: Path, scope: str) -> Result:
    path = extension_path(root, scope)
    where = {"harness": "pi", "scope": scope, "path": str(path)}
    if not path.is_file():
        return Result("hooks uninstall", data={**where, "removed": False, "changed": False},
                      text=f"{path} does not exist; nothing to remove")
    if not is_ours(path.read_bytes()):
        return Result("hooks uninstall", data={**where, "removed": False, "changed": False},
                      text=f"{path} is not contextfork's extension; left untouched")
    rec = install_state.load(root, path)
    install_state.remove_created(root, path, rec)
    install_state.forget(root, path)
    return Result("hooks uninstall", data={**where, "removed": True, "changed": True},
                  text=f"pi extension ({scope}): {path} removed")


__all__ = ["extension_path", "install_pi", "render_extension", "uninstall_pi"]
