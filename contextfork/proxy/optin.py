"""The proxy as a project's default: ``hooks install --claude|--codex --proxy``.

A client's settings cannot say "use this base URL if contextfork is there, else the usual one":
a URL written into Claude Code's ``env`` or Codex's provider would point at a dead port the day
contextfork is gone. So the default lives where that condition can be written: a shell function
named after the client, which runs ``contextfork run --if-enabled -- <client>`` when contextfork
is installed and the plain client otherwise. ``--if-enabled`` goes through the proxy only in a
project that opted in (``.contextfork/proxy-default.json``, written by ``--proxy`` and removed by
``hooks uninstall``); elsewhere it runs the client directly, silently. The function is printed,
not written into your shell's startup file: that file is yours.
"""

from __future__ import annotations

import json
from pathlib import Path

from contextfork.envelope import Result

HARNESSES = ("claude", "codex")


def shell_function(harness: str) -> str:
    return (f"{harness}() {{ if command -v contextfork >/dev/null 2>&1; then contextfork run "
            f"--if-enabled -- {harness} \"$@\"; else command {harness} \"$@\"; fi; }}")


def _read(root: Path) -> dict[str, bool]:
    from contextfork.layout import proxy_default

    try:
        data = json.loads(proxy_default(root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if k in HARNESSES and v is True} if isinstance(
        data, dict) else {}


def enabled(root: Path | None, harness: str) -> bool:
    if root is None:
        return False
    try:
        return _read(root).get(harness, False)
    except Exception:  # noqa: BLE001 - an unsafe state dir: not enabled
        return False


def _write(root: Path, data: dict[str, bool]) -> None:
    from contextfork.atomic import write_bytes
    from contextfork.layout import ensure_state_dir, proxy_default

    path = proxy_default(root)
    if not data:
        path.unlink(missing_ok=True)
        return
    ensure_state_dir(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(path, (json.dumps(data, sort_keys=True) + "\n").encode("utf-8"))


def enable(root: Path, harness: str) -> Result:
    data = _read(root)
    data[harness] = True
    _write(root, data)
    fn = shell_function(harness)
    text = (f"{harness} goes through the contextfork proxy in this project when started as "
            f"`contextfork run --if-enabled -- {harness}`. To make that what `{harness}` "
            f"does, add this line to your shell's startup file (it falls back to the plain "
            f"{harness} where contextfork is not installed):\n{fn}")
    return Result("hooks install", data={"proxy_default": harness, "shell": fn}, text=text)


def disable(root: Path, harness: str) -> bool:
    """Remove the opt-in; whether there was one."""
    data = _read(root)
    if harness not in data:
        return False
    del data[harness]
    _write(root, data)
    return True


__all__ = ["disable", "enable", "enabled", "shell_function"]
