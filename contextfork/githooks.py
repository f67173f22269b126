"""Git hooks: pre-commit checkpoints, post-commit notes, installed in pre-commit's own style.

Installation follows pre-commit's installer: scripts rendered from templates carry an ownership
marker; a foreign hook is kept as ``<hook>.legacy`` and chained (it runs first and its exit code
still counts); installing twice changes nothing; uninstall puts back exactly what was there.
The scripts call the interpreter that installed them (absolute path), so they work without an
activated virtualenv.

The runner (``python -m contextfork.githooks pre-commit``) is on every commit's path: it imports
only what a checkpoint needs, and it fails open — an internal error is one line on stderr and the
commit goes on, unless the hooks were installed ``--strict``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

MARKER = "contextfork-managed-hook: v1"
HOOKS = ("pre-commit", "post-commit")
CONFIG = "git-hooks.json"
PENDING = "hooks/pending-note.txt"  # the note text itself; post-commit attaches it verbatim
NOTE_KEY = "contextfork-checkpoint"


def is_ours(path: Path) -> bool:
    try:
        return MARKER.encode() in path.read_bytes()[:512]
    except OSError:
        return False


def _state_dir(root: Path) -> Path:
    from contextfork.package.store import contextfork_dir

    return contextfork_dir(root)


def load_config(root: Path) -> dict[str, Any]:
    """Raw config (plain json on the hook path; the pydantic model checks it on install)."""
    try:
        data = json.loads((_state_dir(root) / CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# --- install / uninstall ------------------------------------------------------------------------


def _hooks_dir(root: Path) -> Path:
    from contextfork import gitstate
    from contextfork.errors import UsageError

    hdir = gitstate.hooks_path(root)
    configured = gitstate.config_get(root, "core.hooksPath")
    if configured and (hdir == root or root in hdir.parents) and not hdir.is_relative_to(
        gitstate.git_dir(root)
    ):
        raise UsageError(
            f"core.hooksPath is set to {configured!r}, a hooks directory inside the work tree "
            "(shared, versioned hooks); contextfork will not rewrite it",
            hint="call `contextfork git-hook pre-commit` / `post-commit` from those hooks, use the "
            "pre-commit framework hook id `contextfork-checkpoint`, or unset core.hooksPath",
        )
    return hdir


def _render(hook: str, strict: bool) -> str:
    import shlex

    from contextfork import __version__
    from contextfork.gitstate import NOTES_REF
    from contextfork.package.store import STATE_DIR
    from contextfork.resources import render_template

    return render_template(
        f"git-{hook}.sh.j2", marker=MARKER, hook=hook, strict=strict,
        python=shlex.quote(sys.executable), version=__version__,
        pending=shlex.quote(f"{STATE_DIR}/{PENDING}"), notes_ref=NOTES_REF,
    )  # fmt: skip


def install(root: Path, *, strict: bool = False, keep: int = 20) -> Any:
    """Install both hooks; returns an envelope ``Result``."""
    from contextfork import atomic, gitstate
    from contextfork.envelope import Result
    from contextfork.errors import UsageError
    from contextfork.lifecycle_models import GitHookConfig, InstalledHook

    if keep < 0:
        raise UsageError(f"--keep must be 0 (keep all) or more, not {keep}")
    hdir = _hooks_dir(root)
    plan = []
    for hook in HOOKS:
        path, legacy = hdir / hook, hdir / f"{hook}.legacy"
        foreign = os.path.lexists(path) and not is_ours(path)
        if foreign and os.path.lexists(legacy):
            raise UsageError(
                f"{path} is a foreign hook and {legacy.name} already exists; refusing to replace "
                "either", hint="merge them by hand, then install again",
            )  # fmt: skip
        plan.append((hook, path, legacy, foreign))
    hdir.mkdir(parents=True, exist_ok=True)
    installed, moved = [], []
    for hook, path, legacy, foreign in plan:
        if foreign:
            os.rename(path, legacy)  # keeps the exact bytes, mode, even a symlink
            moved.append(hook)
        atomic.write_text(path, _render(hook, strict), mode=0o755)
        kept = str(legacy) if os.path.lexists(legacy) else None
        installed.append(InstalledHook(hook=hook, path=str(path), legacy=kept))
    gitstate.ensure_excluded(root)
    cfg = GitHookConfig(keep_checkpoints=keep, strict=strict, python=sys.executable,
                        hooks=installed)  # fmt: skip
    atomic.write_json(_state_dir(root) / CONFIG, cfg.model_dump(mode="json"))
    lines = [f"Installed git hooks in {hdir}: {', '.join(HOOKS)}"
             + (" (strict: a failed checkpoint blocks the commit)" if strict else "")]
    lines += [f"  kept the existing {h} as {h}.legacy (it still runs first)" for h in moved]
    lines.append(f"  checkpoints kept: {keep or 'all'}; interpreter: {sys.executable}")
    data = {"hooks_dir": str(hdir), "legacy_kept": moved, **cfg.model_dump(mode="json")}
    return Result("hooks install", data=data, text="\n".join(lines))


def uninstall(root: Path) -> Any:
    from contextfork.envelope import Problem, Result

    hdir = _hooks_dir(root)
    removed, restored, problems = [], [], []
    for hook in HOOKS:
        path, legacy = hdir / hook, hdir / f"{hook}.legacy"
        if not os.path.lexists(path):
            continue
        if not is_ours(path):
            problems.append(Problem("warning", "foreign_hook", "not installed by contextfork; "
                                    "left alone", str(path)))  # fmt: skip
            continue
        if os.path.lexists(legacy):
            os.replace(legacy, path)
            restored.append(hook)
        else:
            os.unlink(path)
        removed.append(hook)
    cfg = _state_dir(root) / CONFIG
    if cfg.exists():
        os.unlink(cfg)
    text = f"Removed contextfork hooks from {hdir}: {', '.join(removed) or 'none installed'}"
    text += "".join(f"\n  restored the previous {h}" for h in restored)
    data = {"hooks_dir": str(hdir), "removed": removed, "restored": restored}
    return Result("hooks uninstall", data=data, problems=problems, text=text)


# --- the hooks themselves -----------------------------------------------------------------------


def _hook_root() -> Path:
    """The work tree a hook runs for; GIT_DIR/GIT_INDEX_FILE from git are not followed blindly."""
    from contextfork import gitstate
    from contextfork.errors import UsageError

    loc = gitstate.locate(Path.cwd())  # one git call: root and git dir
    root = loc.root
    given = os.environ.get("GIT_DIR")
    if given and Path(given).resolve() != loc.git_dir.resolve():
        raise UsageError(f"GIT_DIR={given} is not the git dir of {root}; checkpoint skipped")
    return root


def pre_commit(root: Path) -> str:
    """Write a checkpoint package of the state being committed; returns its id."""
    from contextfork import atomic
    from contextfork.hashing import sha256_file
    from contextfork.package.export import ExportOptions, export
    from contextfork.packages_admin import prune_checkpoints
    from contextfork.resume.state import session_from_env

    # A note left by an earlier attempt (aborted commit, failed checkpoint) names another state:
    # drop it first, so post-commit never attaches it to this commit.
    (_state_dir(root) / PENDING).unlink(missing_ok=True)
    cfg = load_config(root)
    out = export(root, ExportOptions(trigger="pre-commit", session_id=session_from_env()))
    pending = {
        "package_id": out.package_id,
        "manifest_sha256": sha256_file(out.path / "manifest.json")[0],
        "package_sha256": out.manifest["package_sha256"],
    }
    atomic.write_text(_state_dir(root) / PENDING, note_text(pending))
    keep = cfg.get("keep_checkpoints", 20)
    prune_checkpoints(root, keep if isinstance(keep, int) else 20)
    return out.package_id


def note_text(pending: dict[str, str]) -> str:
    return (
        f"{NOTE_KEY}: {pending['package_id']}\n"
        f"manifest-sha256: {pending['manifest_sha256']}\n"
        f"package-sha256: {pending['package_sha256']}\n"
    )


def parse_note(text: str) -> dict[str, str]:
    fields = {}
    for line in text.splitlines():
        key, sep, val = line.partition(": ")
        if sep:
            fields[key.strip()] = val.strip()
    return fields


def post_commit(root: Path) -> str | None:
    """Attach the pending checkpoint note to the commit just made; None when there is none.

    The installed post-commit script does the same in two shell lines (no Python start-up on
    every commit); this is the path for hook managers (`contextfork git-hook post-commit`).
    """
    from contextfork import gitstate

    pending_file = _state_dir(root) / PENDING
    try:
        text = pending_file.read_text(encoding="utf-8")
    except OSError:
        return None
    head = gitstate.resolve_commit(root, "HEAD")
    if head is None or NOTE_KEY not in parse_note(text):
        return None
    gitstate.add_note(root, head, text)
    os.unlink(pending_file)
    return parse_note(text)[NOTE_KEY]


def main(argv: list[str]) -> int:
    hook = argv[0] if argv else ""
    strict = "--strict" in argv
    if hook not in HOOKS:
        print(f"contextfork git-hook: unknown hook {hook!r} (expected one of {HOOKS})",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        root = _hook_root()
        done = pre_commit(root) if hook == "pre-commit" else post_commit(root)
    except Exception as exc:  # noqa: BLE001 - fail-open is the contract of this hook
        message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        print(f"contextfork {hook}: {message}".splitlines()[0], file=sys.stderr)
        return 1 if strict else 0
    if done and hook == "pre-commit":
        print(f"contextfork: checkpoint {done}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
