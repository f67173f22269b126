"""The command a harness runs to reach *this* contextfork, by absolute path, checked to work.

Claude Code and Codex run hook and statusLine commands through a shell with their own PATH. A
bare ``contextfork`` only works when the venv it lives in happens to be on that PATH; started
from any other shell, every hook exits 127 and nothing reaches hooks.log. So, like the git hooks
(which call the installing interpreter), we install an absolute path: the ``contextfork``
console script beside the interpreter running this install (what ``pip``/``pipx``/``uv tool``
put there), else ``<python> -m contextfork``. The path is quoted for a POSIX shell (a venv
under "My Tools/" still works), and ``checked_command`` runs ``<command> --version`` through
/bin/sh with a PATH that holds no venv before anything is written.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from contextfork import __version__
from contextfork.errors import CheckFailed

NAME = "contextfork"
_BARE_PATH = os.pathsep.join(("/usr/bin", "/bin")) if os.name != "nt" else ""


def _quote(arg: str) -> str:
    return shlex.quote(arg) if os.name != "nt" else f'"{arg}"'


def candidates(python: str | None = None) -> list[list[str]]:
    """argv prefixes to try, best first: the console script beside ``python``, then ``-m``."""
    py = os.path.abspath(python or sys.executable)
    out: list[list[str]] = []
    bindir = Path(py).parent
    for name in (NAME, f"{NAME}.exe") if os.name == "nt" else (NAME,):
        script = bindir / name
        if script.is_file() and os.access(script, os.X_OK):
            out.append([str(script)])
            break
    out.append([py, "-m", NAME])
    return out


def render(argv: list[str]) -> str:
    return " ".join(_quote(a) for a in argv)


def _runs(command: str) -> str | None:
    """None when ``<command> --version`` prints our version through a shell; else why not."""
    env = dict(os.environ)
    if _BARE_PATH:
        env["PATH"] = _BARE_PATH  # the harness's PATH is unknown: prove we do not need one
    try:
        line = f"{command} --version"  # through a shell, as the harness runs it
        proc = subprocess.run(  # the exact installed string, through a shell
            line if os.name == "nt" else ["/bin/sh", "-c", line], shell=os.name == "nt",
            env=env, capture_output=True, text=True,
            timeout=60, check=False, stdin=subprocess.DEVNULL,
            cwd=tempfile.gettempdir(),  # not here: `-m` would find a source tree in the cwd
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{type(exc).__name__}: {exc}"
    got = proc.stdout.strip()
    if proc.returncode == 0 and got == f"{NAME} {__version__}":
        return None
    detail = (proc.stderr.strip().splitlines() or [got or "no output"])[-1]
    return f"exit {proc.returncode}: {detail}"


def runs(command: str) -> str | None:
    """None when the installed ``command`` runs this contextfork (``doctor`` asks this of every
    command it finds in a settings file or git hook); else why not."""
    return _runs(command)


def checked_command(python: str | None = None) -> str:
    """The shell command prefix for hooks; raises ``CheckFailed`` when none of them runs."""
    tried: list[str] = []
    for argv in candidates(python):
        command = render(argv)
        why = _runs(command)
        if why is None:
            return command
        tried.append(f"`{command}` ({why})")
    raise CheckFailed(
        "cannot install hooks: no absolute contextfork command runs here: " + "; ".join(tried),
        hint="reinstall contextfork in this environment (pip install contextfork), then retry",
    )


__all__ = ["candidates", "checked_command", "render", "runs"]
