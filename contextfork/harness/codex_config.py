"""Codex's hooks feature flag in the project's ``.codex/config.toml``: set it, take it back out.

Codex reads ``[features] hooks = true`` (the canonical key since Codex 0.130, where
``codex_hooks`` became a deprecated alias that prints a warning at every start; later releases
turn hooks on by default, where the line is harmless). ``hooks install --codex`` therefore:

- leaves any explicit setting alone: ``true`` in the project or user config means nothing to do;
  ``false`` (in either) is the user's decision and is reported with the fix, never overridden;
- otherwise adds one line, ``hooks = true`` (``codex_hooks = true`` when the ``codex`` on PATH is
  older than 0.130), under the project's ``[features]`` table, or appends that table; each line
  we add carries a marker comment, so it is recognisable without any record;
- edits the text minimally (no TOML writer: comments, order and spacing stay), and writes only
  if ``tomllib`` parses the result as exactly the old document plus that one key.

Uninstall restores the original bytes when the file is still as we left it (``install_state``),
else removes exactly our chunk (or, failing that, our marked lines), again verified by parsing.
Codex loads a project's ``.codex/`` layer only when the project is trusted.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextfork import atomic
from contextfork.harness import install_state

MARK = "# added by contextfork hooks install --codex"
KEYS = ("hooks", "codex_hooks")
CANONICAL_SINCE = (0, 130, 0)

_HEADER = re.compile(r"""^[ \t]*\[[ \t]*(?:features|"features"|'features')[ \t]*\][ \t]*(?:#.*)?$""")
_ANY_HEADER = re.compile(r"^[ \t]*\[")
_OUR_LINE = re.compile(
    r"^[ \t]*(hooks|codex_hooks)[ \t]*=[ \t]*true[ \t]*" + re.escape(MARK) + r"[ \t]*$"
)
_OUR_HEADER = re.compile(r"^[ \t]*\[features\][ \t]*" + re.escape(MARK) + r"[ \t]*$")


def project_config(root: Path) -> Path:
    return root / ".codex" / "config.toml"


def user_config() -> Path:
    home = os.environ.get("CODEX_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".codex") / "config.toml"


@dataclass
class Flag:
    value: bool | None  # the explicit setting, None when absent
    key: str | None = None
    error: str | None = None  # unreadable / not valid TOML


def read_flag(path: Path) -> Flag:
    if not path.exists():
        return Flag(None)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        return Flag(None, error=str(err))
    features = data.get("features")
    if isinstance(features, dict):
        for key in KEYS:
            if key in features:
                value = features[key]
                return Flag(value if isinstance(value, bool) else None, key)
    return Flag(None)


def feature_key() -> str:
    """``hooks``, or ``codex_hooks`` for a ``codex`` on PATH older than 0.130."""
    exe = shutil.which("codex")
    if exe is None:
        return "hooks"
    try:
        proc = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return "hooks"
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", proc.stdout)
    if m and tuple(int(g) for g in m.groups()) < CANONICAL_SINCE:
        return "codex_hooks"
    return "hooks"


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _parses_as(text: str, *expected: dict[str, Any]) -> bool:
    try:
        return tomllib.loads(text) in expected
    except tomllib.TOMLDecodeError:
        return False


def add_flag(text: str, key: str) -> tuple[str, str] | None:
    """``text`` with ``key = true`` under ``[features]``, and the exact chunk inserted; None
    when the file defines ``features`` in a form we will not edit (inline or dotted keys)."""
    try:
        old = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    expected = copy.deepcopy(old)
    features = expected.setdefault("features", {})
    if not isinstance(features, dict):
        return None
    features[key] = True
    nl = _newline(text)
    line = f"{key} = true  {MARK}"
    lines = text.splitlines(keepends=True)
    heads = [i for i, ln in enumerate(lines) if _HEADER.match(ln.rstrip("\r\n"))]
    if len(heads) > 1:
        return None
    if heads:
        i = heads[0]
        pos = sum(len(ln) for ln in lines[: i + 1])
        chunk = line + nl if lines[i].endswith("\n") else nl + line
    else:
        if not text or text.endswith(nl + nl) or text == nl:
            sep = ""
        else:
            sep = nl if text.endswith("\n") else nl + nl
        pos = len(text)
        chunk = f"{sep}[features]  {MARK}{nl}{line}{nl}"
    new = text[:pos] + chunk + text[pos:]
    return (new, chunk) if _parses_as(new, expected) else None


def _without_marked_lines(text: str) -> str:
    lines = text.splitlines(keepends=True)
    out = [ln for ln in lines if not _OUR_LINE.match(ln.rstrip("\r\n"))]
    for i, ln in enumerate(out):
        if not _OUR_HEADER.match(ln.rstrip("\r\n")):
            continue
        rest = out[i + 1 :]
        body = []
        for nxt in rest:
            if _ANY_HEADER.match(nxt):
                break
            body.append(nxt)
        if all(not b.strip() for b in body):
            return "".join(out[:i] + rest)
    return "".join(out)


def remove_flag(text: str, chunk: str | None) -> str | None:
    """``text`` without our line (and our ``[features]`` header if nothing else is under it);
    None when that cannot be done and verified."""
    m = next((_OUR_LINE.match(ln) for ln in text.splitlines() if _OUR_LINE.match(ln)), None)
    if m is None:
        return text
    try:
        old = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    exp_a = copy.deepcopy(old)
    features = exp_a.get("features")
    if not isinstance(features, dict) or features.get(m.group(1)) is not True:
        return None  # our line was moved out of [features]: leave it to the user
    del features[m.group(1)]
    exp_b = {k: v for k, v in exp_a.items() if k != "features" or v}
    if chunk and text.count(chunk) == 1:
        cand = text.replace(chunk, "", 1)
        if _parses_as(cand, exp_a, exp_b):
            return cand
    cand = _without_marked_lines(text)
    return cand if _parses_as(cand, exp_a, exp_b) else None


@dataclass
class Outcome:
    state: str
    path: Path
    key: str | None = None
    detail: str | None = None


def enable(root: Path) -> Outcome:
    """Make sure Codex runs hooks for this project (see the module docstring for the rules)."""
    path = project_config(root)
    here = read_flag(path)
    if here.error:
        return Outcome("not_editable", path, detail=f"not valid TOML ({here.error})")
    if here.value is not None:
        return Outcome("enabled" if here.value else "disabled_here", path, here.key)
    user_path = user_config()
    user = read_flag(user_path)
    if user.value is not None:
        state = "enabled_in_user_config" if user.value else "disabled_in_user_config"
        return Outcome(state, user_path, user.key)
    target = install_state.real_target(path)
    before = target.read_bytes() if target.exists() else None
    try:
        text = "" if before is None else before.decode("utf-8")
    except UnicodeDecodeError:
        return Outcome("not_editable", path, detail="not UTF-8")
    key = feature_key()
    planned = add_flag(text, key)
    if planned is None:
        return Outcome(
            "not_editable", path, key, "`features` is defined inline or with dotted keys"
        )
    new, chunk = planned
    data = new.encode("utf-8")
    created = install_state.missing_dirs(target)
    mode = target.stat().st_mode & 0o777 if before is not None else None
    atomic.write_bytes(target, data, mode=mode)
    install_state.note_write(root, target, before, data, created, {"chunk": chunk})
    return Outcome("added", path, key)


def disable(root: Path) -> Outcome:
    """Take out exactly what ``enable`` added."""
    path = project_config(root)
    target = install_state.real_target(path)
    if not target.exists():
        install_state.forget(root, target)
        return Outcome("absent", path)
    current = target.read_bytes()
    rec = install_state.load(root, target)
    if install_state.restore_exact(root, target, current):
        return Outcome("original_bytes" if target.exists() else "file_removed", path)
    try:
        text = current.decode("utf-8")
    except UnicodeDecodeError:
        return Outcome("not_editable", path, detail="not UTF-8")
    if not any(_OUR_LINE.match(ln) for ln in text.splitlines()):
        install_state.forget(root, target)
        return Outcome("absent", path)
    new = remove_flag(text, str(rec.extra.get("chunk") or "") if rec else None)
    if new is None:
        return Outcome("not_editable", path, detail=f"remove the line marked `{MARK}` by hand")
    if rec is not None and rec.before is None and not new.strip():
        install_state.remove_created(root, target, rec)
        install_state.forget(root, target)
        return Outcome("file_removed", path)
    atomic.write_bytes(target, new.encode("utf-8"), mode=target.stat().st_mode & 0o777)
    install_state.forget(root, target)
    return Outcome("flag_removed", path)


__all__ = ["MARK", "Outcome", "add_flag", "disable", "enable", "read_flag", "remove_flag"]
