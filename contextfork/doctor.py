"""``contextfork doctor``: is this installation and this repository in working order?

Every failure mode a user hits silently shows up here as one line with its fix: hooks that a
harness runs through a shell with its own PATH and that exit 127 without a trace, a detached
HEAD or a half-finished rebase a checkpoint would record, a policy file the status line quietly
ignores, a cold store that fails its hashes. Each check is cheap (no transcript parsing, no
tokenizer load): reading files, one ``git`` call per question, one ``--version`` per distinct
installed command. ``error`` means something is broken (exit 1); ``warning`` means it works
but not as intended; ``ok`` lines also say what is not installed and how to add it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import textwrap
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from contextfork import __version__, layout
from contextfork.envelope import Result
from contextfork.errors import ContextforkError, ExitCode

Status = Literal["ok", "warning", "error"]
MIN_GIT = (2, 25)
_EVENTS = ("UserPromptSubmit", "PreCompact", "SessionStart", "SubagentStart", "SubagentStop")


@dataclass(frozen=True)
class Check:
    """One line of the report: what was looked at, its state, and what to do about it."""

    name: str
    status: Status
    detail: str
    fix: str | None = None


# ------------------------------------------------------------------ environment


def check_contextfork() -> Check:
    return Check("contextfork", "ok", f"contextfork {__version__} on Python "
                 f"{sys.version.split()[0]} ({sys.executable})")  # fmt: skip


def check_git() -> Check:
    from contextfork import gitstate

    try:
        line = gitstate.out(tempfile.gettempdir(), "--version")
    except ContextforkError as err:
        return Check("git", "error", err.one_line(), "install git (2.25 or newer) and put it on PATH")
    found = re.search(r"(\d+)\.(\d+)", line)
    if found and (int(found.group(1)), int(found.group(2))) < MIN_GIT:
        return Check("git", "warning", f"{line}: older than {MIN_GIT[0]}.{MIN_GIT[1]}",
                     "upgrade git")  # fmt: skip
    return Check("git", "ok", line)


def check_repo(start: Path | None) -> tuple[Check, Path | None]:
    from contextfork import gitstate

    try:
        loc = gitstate.locate(start)
    except ContextforkError as err:
        return Check("repo", "error", err.message,
                     "run inside a git repository or pass --repo PATH"), None  # fmt: skip
    head = gitstate.head(loc.root)
    op = gitstate.operation_in_progress(loc.git_dir)
    if op is not None:
        return Check("repo", "warning", f"{loc.root}: a {op} is in progress; a checkpoint "
                     "would record its half-done state",
                     f"finish it (`git {op} --continue`) or abort it (`git {op} --abort`)"), loc.root  # fmt: skip
    if head.unborn:
        return Check("repo", "warning", f"{loc.root}: no commit yet (unborn HEAD); packages "
                     "record no base commit", "make a first commit"), loc.root  # fmt: skip
    if head.detached:
        return Check("repo", "warning", f"{loc.root}: detached HEAD at {str(head.sha)[:12]}; "
                     "checkpoints belong to no branch",
                     "`git switch -c <branch>` to keep working on a branch"), loc.root  # fmt: skip
    return Check("repo", "ok", f"{loc.root} on {head.branch} at {str(head.sha)[:12]}"), loc.root


def check_mcp() -> Check:
    if importlib.util.find_spec("mcp") is not None:  # found, never imported (it is slow)
        return Check("mcp", "ok", "the MCP extra is installed (`contextfork mcp`)")
    return Check("mcp", "warning", "the MCP extra is not installed; `contextfork mcp` cannot run",
                 "pip install 'contextfork[mcp]' (or `pip install mcp`)")  # fmt: skip


def check_tokenizer() -> Check:
    from contextfork import tokens

    path, state = tokens.cache_status()
    if state == "verified":
        return Check("tokenizer", "ok", f"cache verified ({path})")
    build = "python -c 'from contextfork.tokens import count_tokens; count_tokens(\"x\")'"
    if state == "absent":
        return Check("tokenizer", "warning", f"no cache yet ({path}); the first exact token "
                     "count loads the vocabulary slowly (~0.3 s)", f"build it now: {build}")  # fmt: skip
    return Check("tokenizer", "warning", f"cache at {path} fails its sha256; it is rebuilt on "
                 "next use", f"rebuild it now: {build}")  # fmt: skip


# ------------------------------------------------------------------ repository state


def check_policy(root: Path) -> Check:
    from contextfork.telemetry.models import load_policy_file

    path = layout.policy_file(root)
    if not path.exists():
        return Check("policy", "ok", "defaults (no .contextfork/policy.json)")
    try:
        pol = load_policy_file(path)
    except ContextforkError as err:
        return Check("policy", "error", f"{err.one_line()}; the status line and the hooks "
                     "silently use the defaults", err.hint or "contextfork policy init --force")  # fmt: skip
    t = pol.tokens
    return Check("policy", "ok", f"{path}: warning {t.warning:,} / fork {t.fork:,} tokens")


def check_cold(root: Path) -> list[Check]:
    from contextfork.cold import api as cold_api

    base = layout.cold_root(root)
    sessions = sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
    if not sessions:
        return [Check("cold", "ok", "no cold stores in this repository")]
    out = []
    for store in sessions:
        name = f"cold {store.name}"
        nodes_dir = store / "cold_nodes"
        nodes = sum(1 for _ in nodes_dir.glob("step_*.json")) if nodes_dir.is_dir() else 0
        try:
            res = cold_api.validate(store_dir=store)
        except ContextforkError as err:
            out.append(Check(name, "error", err.one_line(),
                             f"contextfork fold validate --session {store.name}"))  # fmt: skip
            continue
        errors = sum(p.severity == "error" for p in res.problems)
        warnings = sum(p.severity == "warning" for p in res.problems)
        detail = f"{nodes} nodes, {errors} errors, {warnings} warnings"
        see = f"see `contextfork fold validate --session {store.name}`"
        if errors:
            out.append(Check(name, "error", f"{detail}: {res.problems[0].message}", see))
        elif warnings:
            out.append(Check(name, "warning", detail, see))
        else:
            out.append(Check(name, "ok", detail))
    return out


def _committed_state(root: Path) -> list[str]:
    """Paths under ``.contextfork/`` that the repository itself tracks (one ``git ls-files``)."""
    from contextfork import gitstate

    data = gitstate.run(root, ["ls-files", "-z", "--", layout.STATE_DIR], check=False).stdout
    return sorted(p.decode("utf-8", "surrogateescape") for p in data.split(b"\0") if p)


def check_packages(root: Path) -> list[Check]:
    """One line per package no session is offered (``contextfork.provenance``) and per
    committed ``.contextfork/`` entry: a repository's own files there are never trusted."""
    from contextfork import provenance
    from contextfork.package import store

    try:
        refs = store.list_packages(root)
    except ContextforkError as err:
        return [Check("packages", "error", err.one_line(), err.hint)]
    committed = _committed_state(root)
    tops = sorted({"/".join(p.split("/")[:3]) for p in committed})  # .contextfork/<kind>/<name>
    out = []
    for ref in refs:
        st = provenance.standing(root, ref.package_id, ref.path)
        if st.offered:
            continue
        rel = layout.rel(layout.PACKAGES, ref.package_id)
        name, pid = f"package {ref.package_id}", ref.package_id
        if rel in tops:
            out.append(Check(name, "warning", f"committed to the repository ({rel}); never "
                             "offered to a session", f"git rm -r --cached {rel} (and ask why it "
                             "was committed)"))  # fmt: skip
        elif st.code == "provenance_mismatch":
            out.append(Check(name, "warning", f"{st.problem}; never offered",
                             f"`contextfork validate {pid}`; remove it, or accept these bytes "
                             f"with `contextfork resume {pid} --trust`"))  # fmt: skip
        else:
            out.append(Check(name, "warning", f"{st.problem}; never offered", f"inspect it "
                             f"(`contextfork validate {pid}`), then `contextfork resume {pid} "
                             "--trust`, or remove it"))  # fmt: skip
    named = {layout.rel(layout.PACKAGES, r.package_id) for r in refs}
    for top in tops:
        if top not in named:
            out.append(Check(f"committed {top}", "warning", f"{top} is committed to the "
                             "repository; contextfork never trusts it as its own state",
                             f"git rm -r --cached {top}"))  # fmt: skip
    if not out:
        return [Check("packages", "ok", f"{len(refs)} package(s), each exported, pulled or "
                      "trusted here")]  # fmt: skip
    return out


# ------------------------------------------------------------------ hooks


_GIT_CALL = re.compile(
    r"^\s*(?:exec\s+)?(.+?)\s+-m\s+contextfork(?:\.lifecycle)?\.(?:githooks|gitrun)\b", re.M
)


def check_git_hooks(root: Path, runs: _Runner) -> Check:
    from contextfork import gitstate
    from contextfork.lifecycle import githooks

    hdir = gitstate.hooks_path(root)
    found: dict[str, Path] = {}
    for hook in githooks.HOOKS:
        for cand in (hdir / hook, hdir / f"{hook}.legacy"):
            if githooks.is_ours(cand):
                found[hook] = cand
    install = "contextfork hooks install --git"
    if not found:
        return Check("hooks git", "ok", "not installed", f"to checkpoint on commit: {install}")
    missing = [h for h in githooks.HOOKS if h not in found]
    if missing:
        return Check("hooks git", "warning", f"only {', '.join(found)} installed "
                     f"({', '.join(missing)} missing)", install)  # fmt: skip
    for path in found.values():
        m = _GIT_CALL.search(path.read_text(encoding="utf-8", errors="replace"))
        if m is None:
            continue  # post-commit only runs `git notes`: nothing of ours to resolve
        why = runs(f"{m.group(1)} -m contextfork")
        if why is not None:
            return Check("hooks git", "error", f"{path} calls {m.group(1)}, which does not run "
                         f"contextfork ({why})", f"reinstall from this environment: {install}")  # fmt: skip
    return Check("hooks git", "ok", f"pre-commit and post-commit in {hdir}; interpreter runs")


_PREFIX = re.compile(r"^(.*?)\s+(?:hooks\s+run|hook|statusline)(?:\s|$)")


def _ours_in(data: dict[str, Any]) -> tuple[dict[str, str], str | None]:
    """Our hook commands per event, and our statusLine command (``is_ours`` decides)."""
    from contextfork.harness.hooks.install import is_ours

    found: dict[str, str] = {}
    hooks = data.get("hooks")
    for event, groups in (hooks.items() if isinstance(hooks, dict) else ()):
        for group in groups if isinstance(groups, list) else ():
            items = group.get("hooks") if isinstance(group, dict) else None
            for item in items if isinstance(items, list) else ():
                cmd = item.get("command") if isinstance(item, dict) else None
                if isinstance(cmd, str) and is_ours(cmd):
                    found[event] = cmd
    sl = data.get("statusLine")
    sl_cmd = sl.get("command") if isinstance(sl, dict) else None
    return found, sl_cmd if isinstance(sl_cmd, str) and is_ours(sl_cmd) else None


def check_harness(name: str, path: Path, install: str, runs: _Runner) -> Check:
    """Claude Code or Codex: which of our hooks a settings file holds, and do they run."""
    if not path.exists():
        return Check(name, "ok", f"not installed ({path} absent)", f"to install: {install}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        data = f"not readable JSON ({err})"
    if not isinstance(data, dict):
        bad = data if isinstance(data, str) else "the top level is not an object"
        return Check(name, "error", f"{path}: {bad}; the harness ignores it",
                     "fix the file, then re-run the install")  # fmt: skip
    events, statusline = _ours_in(data)
    commands = [*events.values(), *([statusline] if statusline else [])]
    if not commands:
        return Check(name, "ok", f"not installed in {path}", f"to install: {install}")
    for cmd in dict.fromkeys(commands):
        m = _PREFIX.match(cmd)
        why = runs(m.group(1)) if m else "unrecognised command"
        if why is not None:
            return Check(name, "error", f"`{cmd}` does not run ({why}): the harness gets "
                         "nothing from it", f"reinstall from this environment: {install}")  # fmt: skip
    held = [e for e in _EVENTS if e in events]
    what = f"{len(held)}/{len(_EVENTS)} hooks" + (" + statusLine" if statusline else "") + f" in {path}"
    legacy = [c for c in events.values() if re.search(r"\shook\s", c)]
    if len(held) < len(_EVENTS):
        missing = ", ".join(e for e in _EVENTS if e not in events)
        return Check(name, "warning", f"{what}; missing {missing}", install)
    if legacy:
        return Check(name, "warning", f"{what}, in the legacy `hook <event>` form (works)",
                     f"{install} upgrades them to `hooks run <event>` in place")  # fmt: skip
    bare = [c for c in commands if shlex.split(c)[:1] == ["contextfork"]]
    if bare:
        return Check(name, "warning", f"{what}, called as bare `contextfork` (works only when "
                     "it is on the harness's PATH)", f"{install} writes the absolute path")  # fmt: skip
    return Check(name, "ok", f"{what}; commands run")


def check_shared_claude(root: Path, runs: _Runner) -> Check:
    """The committed .claude/settings.json must not hold this machine's paths (an install by an
    older version): other clones get them through git or ``export`` and every hook exits 127."""
    from contextfork.harness.hooks.claude_local import SHARED_FILE, machine_paths_in_shared
    from contextfork.harness.hooks.install import is_ours

    bad = machine_paths_in_shared(root, is_ours)
    if bad:
        return Check("hooks claude shared", "warning",
                     f"{root / SHARED_FILE} (committed, exported) holds this machine's path "
                     f"`{bad[0]}`: on another clone every such hook exits 127",
                     "contextfork hooks install --claude moves them to "
                     ".claude/settings.local.json")  # fmt: skip
    return check_harness("hooks claude shared", root / SHARED_FILE,
                         "contextfork hooks install --claude --shared (portable command)", runs)


def check_plugin(root: Path | None, user_settings: Path) -> Check:
    """The Claude Code plugin: enabled or not, and not beside a ``hooks install`` (each of our
    hooks would then run twice: the injected brief, the folds, the exports)."""
    from contextfork.harness.hooks.claude_local import ours_in
    from contextfork.harness.hooks.install import is_ours

    files = [user_settings]
    if root is not None:
        files += [root / ".claude" / "settings.json", root / ".claude" / "settings.local.json"]
    enabled = []
    for f in files:
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        plugins = data.get("enabledPlugins") if isinstance(data, dict) else None
        if isinstance(plugins, dict):
            enabled += [k for k, v in plugins.items() if v is True and k.startswith("contextfork@")]
    if not enabled:
        return Check("hooks claude plugin", "ok", "the contextfork plugin is not enabled",
                     "claude plugin install contextfork@contextfork (after `claude plugin "
                     "marketplace add <contextfork repo>`)")  # fmt: skip
    doubled = [str(f) for f in files if any("hooks run" in c for c in ours_in(f, is_ours))]
    if doubled:
        return Check("hooks claude plugin", "warning",
                     f"the plugin {enabled[0]} and hooks installed in {doubled[0]} both run: "
                     "each hook fires twice (two briefs, two exports)",
                     "keep one: contextfork hooks uninstall --claude (or --user), or "
                     f"claude plugin uninstall {enabled[0]}")  # fmt: skip
    return Check("hooks claude plugin", "ok", f"{enabled[0]} enabled (hooks, MCP server, "
                 "/contextfork:handoff, /contextfork:fork, /contextfork:context)")  # fmt: skip


# ------------------------------------------------------------------ the report


def check_server() -> Check:
    """The warm command server: off (the default), on and running, or on but unable to serve
    here and why (then every command is cold, which is correct but ~2x slower)."""
    from contextfork.server import client, control

    if not client.enabled():
        on, why = client.mode()
        if on:
            return Check("server", "warning", "on, but this platform has no fork(), /proc or "
                         "Unix socket descriptor passing: every command runs cold")  # fmt: skip
        return Check("server", "ok", f"off ({why}): every command starts its own interpreter",
                     "contextfork server enable to have commands served warm")  # fmt: skip
    data = control.status().data
    reason = client.unsafe_dir_reason(data["directory"]) if os.path.lexists(data["directory"]) else None
    if reason:
        return Check("server", "warning", f"cannot run: {reason}; every command runs cold",
                     f"chmod 700 {data['directory']}, or set {client.ENV_DIR} to a private "
                     "directory")  # fmt: skip
    if data["key"] is None:
        return Check("server", "warning", f"cannot serve here: {control.never_here()}")
    stuck = data["unresponsive"]
    if stuck:
        return Check("server", "warning", f"pid {stuck['pid']} {stuck['state']}: every command "
                     "runs cold", f"kill -CONT {stuck['pid']}, or contextfork server stop")  # fmt: skip
    info = data["running"]
    if info is None:
        failed = [ln for ln in data["log_tail"] if "not started" in ln]
        if failed and failed[-1] == data["log_tail"][-1]:
            why = failed[-1].split(": ", 2)[-1]
            return Check("server", "warning", f"cannot start: {why}; every command runs cold",
                         f"its log: {data['log']}")  # fmt: skip
        return Check("server", "ok", "not running; the next command starts it")
    return Check("server", "ok", f"pid {info['pid']}, {info['served']} command(s) served "
                 f"({info['socket']})")  # fmt: skip


class _Runner:
    """``<command> --version`` through a shell, as install checks it; once per command."""

    def __init__(self) -> None:
        self._seen: dict[str, str | None] = {}

    def __call__(self, command: str) -> str | None:
        if command not in self._seen:
            from contextfork.harness.hooks.entrypoint import runs

            self._seen[command] = runs(command)
        return self._seen[command]


def run(start: Path | None = None) -> Result:
    """All checks; exit 1 (CHECK_FAILED) when one is an error."""
    from contextfork.harness.hooks.install import claude_settings_path, codex_hooks_path

    runs = _Runner()
    checks = [check_contextfork(), check_git()]
    repo, root = check_repo(start)
    checks.append(repo)
    if root is not None:
        checks += [check_git_hooks(root, runs),
                   check_harness("hooks claude project", claude_settings_path(root, "project"),
                                 "contextfork hooks install --claude", runs),
                   check_shared_claude(root, runs)]  # fmt: skip
    user = claude_settings_path(root or Path.cwd(), "user")
    checks.append(check_harness("hooks claude user", user,
                                "contextfork hooks install --claude --user", runs))  # fmt: skip
    checks.append(check_plugin(root, user))
    if root is not None:
        checks.append(check_harness("hooks codex", codex_hooks_path(root),
                                    "contextfork hooks install --codex", runs))  # fmt: skip
        checks += [check_policy(root), *check_packages(root), *check_cold(root)]
    checks += [check_tokenizer(), check_mcp(), check_server()]
    counts = {s: sum(c.status == s for c in checks) for s in ("ok", "warning", "error")}
    return Result(
        "doctor",
        data={
            "checks": [asdict(c) for c in checks],
            "counts": counts,
            "repo": str(root) if root else None,
        },
        exit_code=int(ExitCode.CHECK_FAILED) if counts["error"] else 0,
        text=render_text(checks, counts),
    )


def render_text(checks: list[Check], counts: dict[str, int]) -> str:
    """One line per check (status, name, detail), the fix indented below; fits 80 columns
    as long as details wrap (plain lines, not a table, so nothing is ever cut)."""
    width = max(len(c.name) for c in checks)
    pad = " " * (8 + width + 2)
    cols = max(60, shutil.get_terminal_size((100, 24)).columns)  # COLUMNS, else 100 when piped

    def wrap(first: str, text: str) -> list[str]:
        return textwrap.wrap(text, cols, initial_indent=first, subsequent_indent=pad,
                             break_on_hyphens=False) or [first]  # fmt: skip

    lines = []
    for c in checks:
        lines += wrap(f"{c.status:<7} {c.name:<{width}}  ", c.detail)
        if c.fix:
            lines += wrap(pad, f"fix: {c.fix}" if c.status != "ok" else f"({c.fix})")
    lines.append(f"{counts['ok']} ok, {counts['warning']} warning(s), {counts['error']} error(s)")
    return "\n".join(lines)


__all__ = ["Check", "run"]
