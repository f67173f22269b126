"""Codex's hooks feature flag in the project's ``.codex/config.toml``: set it, take it back out.

Codex reads ``[features] hooks = true`` (the canonical key since Codex 0.130, where
``codex_hooks`` became a deprecated alias that prints a warning at every start; later releases
turn hooks on by default, where the line is harmless). ``hooks install --codex`` therefore:

- leaves any explicit setting alone: ``true`` in the project or user config means nothing to do;
  ``false`` (in either) is the user's decision and is reported with the fix, never overridden;
- otherwise adds one line, ``hooks = true`` (``codex_hooks = true`` when the ``codex`` on PATH is
  older than 0.130), under the project's ``[features]`` table, or appends that table; each line
  we add carries a marker comment, so it is recognisable without any record;
- edits the document with ``tomlkit`` (comments, order, spacing and line ends stay), and writes
  only if ``tomllib`` parses the result as exactly the old document plus that one key.

Uninstall restores the original bytes when the file is still as we left it (``install_state``),
else removes our marked key (and our marked ``[features]`` header when nothing else is under
it) with ``tomlkit``, again verified by ``tomllib``.
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

import tomlkit
import tomlkit.exceptions
from tomlkit.items import Table

from contextfork import atomic
from contextfork.harness.hooks import install_state

MARK = "# added by contextfork hooks install --codex"
KEYS = ("hooks", "codex_hooks")
CANONICAL_SINCE = (0, 130, 0)

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


def _parses_as(text: str, *expected: dict[str, Any]) -> bool:
    """The independent check: ``tomllib`` (not tomlkit) reads exactly what we meant."""
    try:
        return tomllib.loads(text) in expected
    except tomllib.TOMLDecodeError:
        return False


def _marked(item: Any) -> bool:
    return bool(item.trivia.comment.strip() == MARK)


def _mark(item: Any) -> Any:
    item.comment(MARK)
    item.trivia.comment_ws = "  "
    return item


def _dumps(doc: Any, like: str) -> str:
    """tomlkit writes the lines it adds with ``\n``; a CRLF file keeps CRLF throughout."""
    out: str = tomlkit.dumps(doc)
    if "\r\n" in like and "\n" not in like.replace("\r\n", ""):
        out = out.replace("\r\n", "\n").replace("\n", "\r\n")
    return out


def _features(doc: Any) -> Any:
    """The ``[features]`` table we may edit, ``None`` when absent, ``False`` when it is written
    in a form we leave to the user (inline table, dotted keys, an array of tables)."""
    if "features" not in doc:
        return None
    table = doc.item("features")
    if not isinstance(table, Table) or table.is_super_table():
        return False  # a super table: only [features.x] headers, or features.x = … dotted keys
    return table


def add_flag(text: str, key: str) -> str | None:
    """``text`` with ``key = true`` (marked) in ``[features]``, or None when the file defines
    ``features`` in a form we will not edit (inline or dotted keys) or is not valid TOML."""
    try:
        old = tomllib.loads(text)
        doc = tomlkit.parse(text)
    except (tomllib.TOMLDecodeError, tomlkit.exceptions.TOMLKitError):
        return None
    expected = copy.deepcopy(old)
    features = expected.setdefault("features", {})
    if not isinstance(features, dict):
        return None
    features[key] = True
    table = _features(doc)
    if table is False:
        return None
    if table is None:
        table = _mark(tomlkit.table())
        table.add(key, _mark(tomlkit.item(True)))
        doc.add("features", table)
    else:
        table.add(key, _mark(tomlkit.item(True)))
    new = _dumps(doc, text)
    return new if _parses_as(new, expected) else None


def has_our_flag(text: str) -> bool:
    try:
        table = _features(tomlkit.parse(text))
    except tomlkit.exceptions.TOMLKitError:
        return False
    return bool(table) and any(_marked(table.item(k)) for k in KEYS if k in table)


def remove_flag(text: str) -> str | None:
    """``text`` without our line (and our ``[features]`` header if nothing else is under it);
    None when that cannot be done and verified."""
    try:
        old = tomllib.loads(text)
        doc = tomlkit.parse(text)
    except (tomllib.TOMLDecodeError, tomlkit.exceptions.TOMLKitError):
        return None
    table = _features(doc)
    ours = [k for k in KEYS if table and k in table and _marked(table.item(k))]
    if not ours:
        return text
    exp_a = copy.deepcopy(old)
    for k in ours:
        if exp_a["features"].get(k) is not True:
            return None  # the user changed our value: leave it to them
        del exp_a["features"][k]
        del table[k]
    exp_b = {k: v for k, v in exp_a.items() if k != "features" or v}
    if _marked(table) and not table.value:
        del doc["features"]
    new = _dumps(doc, text)
    return new if _parses_as(new, exp_a, exp_b) else None


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
    new = add_flag(text, key)
    if new is None:
        return Outcome(
            "not_editable", path, key, "`features` is defined inline, with dotted keys or only by sub-tables"
        )
    data = new.encode("utf-8")
    created = install_state.missing_dirs(target)
    mode = target.stat().st_mode & 0o777 if before is not None else None
    atomic.write_bytes(target, data, mode=mode)
    install_state.note_write(root, target, before, data, created)
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
    if not has_our_flag(text):
        install_state.forget(root, target)
        return Outcome("absent", path)
    new = remove_flag(text)
    if new is None:
        return Outcome("not_editable", path, detail=f"remove the line marked `{MARK}` by hand")
    if rec is not None and rec.before is None and not new.strip():
        install_state.remove_created(root, target, rec)
        install_state.forget(root, target)
        return Outcome("file_removed", path)
    atomic.write_bytes(target, new.encode("utf-8"), mode=target.stat().st_mode & 0o777)
    install_state.forget(root, target)
    return Outcome("flag_removed", path)


__all__ = ["MARK", "Outcome", "add_flag", "disable", "enable", "has_our_flag", "read_flag", "remove_flag"]
