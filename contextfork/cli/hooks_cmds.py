"""CLI: hooks install|uninstall (--git, --claude, --codex), ``hooks run <event>`` (dispatched
before Typer loads, in contextfork/entry.py), its hidden legacy alias ``hook <event>``, and the
git-hook runner."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from contextfork.cli.common import JsonOpt, RepoOpt, emit, guarded, repo_root


def _harness() -> Any:
    from contextfork.harness.hooks import install as harness_install

    return harness_install


def _targets(git: bool, claude: bool, codex: bool, pi: bool = False) -> None:
    from contextfork.errors import UsageError

    if not (git or claude or codex or pi):
        raise UsageError(
            "say which hooks: --git, --claude [--project|--user], --codex or --pi [--project|--user]")
    if sum((git, claude, codex, pi)) > 1:
        raise UsageError("pass one of --git, --claude, --codex, --pi at a time")


def _with_proxy(result: Any, root: Any, harness: str, proxy: bool) -> Any:
    """The install's result, plus the proxy opt-in (``contextfork.proxy.optin``) if asked."""
    if not proxy or not result.ok:
        return result
    from contextfork.proxy import optin

    extra = optin.enable(root, harness)
    data = result.data if isinstance(result.data, dict) else {"install": result.data}
    result.data = {**data, **extra.data}
    result.text = f"{result.text or ''}\n{extra.text}".strip()
    return result


def _without_proxy(result: Any, root: Any, harness: str) -> Any:
    """Uninstall also removes the proxy opt-in that install added."""
    from contextfork.proxy import optin

    if result.ok and optin.disable(root, harness):
        result.text = f"{result.text or ''}\nremoved the proxy default for {harness}".strip()
    return result


def _scope(project: bool, user: bool) -> str:
    from contextfork.errors import UsageError

    if project and user:
        raise UsageError("--project and --user are exclusive")
    return "user" if user else "project"


def _claude_scope(project: bool, user: bool, shared: bool) -> str:
    """Claude Code: a project install is this machine's (settings.local.json); --shared is the
    committed settings.json with the portable command."""
    from contextfork.errors import UsageError

    if shared and (project or user):
        raise UsageError("--shared, --project and --user are exclusive")
    return "shared" if shared else _scope(project, user)


Git = Annotated[bool, typer.Option("--git", help="git pre-commit/post-commit checkpoint hooks.")]
Claude = Annotated[bool, typer.Option(
    "--claude", help="Claude Code hooks (.claude/settings.local.json: this machine's paths).")]
Codex = Annotated[bool, typer.Option("--codex", help="Codex CLI hooks (hooks.json).")]
Pi = Annotated[bool, typer.Option("--pi", help="pi coding agent extension (.pi/extensions/).")]
Project = Annotated[bool, typer.Option("--project", help="Claude/pi: this project's settings.")]
User = Annotated[bool, typer.Option("--user", help="Claude/pi: the user's settings.")]
Shared = Annotated[bool, typer.Option(
    "--shared", help="Claude: the committed .claude/settings.json, portable command only.")]
ProxyOpt = Annotated[bool, typer.Option(
    "--proxy", help="Claude/Codex: `contextfork run --if-enabled` uses the proxy in this project.")]


_RUN_HELP = (
    "Run a harness hook (Claude Code / Codex run these, JSON on stdin).\n\n"
    "user-prompt-submit: page folded details the prompt names back in (hash-verified, "
    "<= 9,500 chars); warn once when the footprint crosses a threshold. "
    "pre-compact: fold the whole transcript and export a package before the harness compacts. "
    "session-start: after compact, inject the latest handoff brief; at startup/resume, validate "
    "an unconsumed package and inject its resume brief with the drift report. "
    "subagent-start: inject the parent's role slice into a new subagent (docs/slice.md). "
    "subagent-stop: fold the subagent's transcript into the cold store, linked to the parent. "
    "--codex: the input comes from Codex.\n\n"
    "They always exit 0 and print hook JSON or nothing; errors go to "
    ".contextfork/logs/hooks.log. Install them with `contextfork hooks install --claude` or "
    "`--codex`."
)
_RUN_USAGE = "user-prompt-submit|pre-compact|session-start|subagent-start|subagent-stop [--codex]"

_LEGACY_HELP = (
    "Legacy alias of `contextfork hooks run EVENT` (settings written by older versions call "
    "it); `hooks install` upgrades those entries in place."
)

_GIT_HOOK_HELP = (
    "Run a git hook's work (fail-open unless --strict: an internal error then fails the hook); "
    "for hook managers."
)

# These commands run on every prompt or commit, so their runners (hookrunner, githooks) read
# their own few arguments without Typer, which costs ~60 ms of CPU per call; entry.py calls the
# runners directly. Typer registers them for --help and the docs and hands the arguments on
# untouched: one parser per command (docs/design/cli-parsers.md).
_VERBATIM: dict[str, Any] = {"allow_extra_args": True, "ignore_unknown_options": True}


def _harness_hook(ctx: typer.Context) -> None:
    from contextfork.harness.hooks.runner import main

    raise typer.Exit(main(list(ctx.args)))


def register(app: typer.Typer) -> None:
    hooks = typer.Typer(
        help="Install, remove and run git and agent-harness hooks.", no_args_is_help=True
    )
    app.add_typer(hooks, name="hooks")
    hooks.command(
        "run", help=_RUN_HELP, options_metavar=_RUN_USAGE, context_settings=_VERBATIM
    )(_harness_hook)
    app.command(
        "hook", help=_LEGACY_HELP, options_metavar=_RUN_USAGE, hidden=True,
        context_settings=_VERBATIM,
    )(_harness_hook)  # fmt: skip

    @hooks.command("install")
    @guarded("hooks install")
    def install(
        git: Git = False, claude: Claude = False, codex: Codex = False, pi: Pi = False,
        project: Project = False, user: User = False, shared: Shared = False,
        proxy: ProxyOpt = False,
        strict: Annotated[bool, typer.Option(help="git: a failed checkpoint blocks the commit.")] = False,
        keep: Annotated[int, typer.Option(help="git: checkpoints kept (0 = all).", min=0)] = 20,
        repo: RepoOpt = None, json: JsonOpt = False,
    ) -> None:  # fmt: skip
        """Install hooks; an existing git hook is kept as .legacy and still runs."""
        _targets(git, claude, codex, pi)
        root = repo_root(repo)
        if proxy and not (claude or codex):
            from contextfork.errors import UsageError

            raise UsageError("--proxy goes with --claude or --codex")
        if pi:
            from contextfork.harness.pi import install as pi_install

            emit(pi_install.install_pi(root, _scope(project, user)), json)
        elif git:
            from contextfork.lifecycle import githooks

            emit(githooks.install(root, strict=strict, keep=keep), json)
        elif claude:
            emit(_with_proxy(_harness().install_claude(root, _claude_scope(project, user, shared)),
                             root, "claude", proxy), json)
        else:
            emit(_with_proxy(_harness().install_codex(root), root, "codex", proxy), json)

    @hooks.command("uninstall")
    @guarded("hooks uninstall")
    def uninstall(
        git: Git = False, claude: Claude = False, codex: Codex = False, pi: Pi = False,
        project: Project = False, user: User = False, shared: Shared = False,
        repo: RepoOpt = None, json: JsonOpt = False,
    ) -> None:  # fmt: skip
        """Remove exactly what install added and restore what was there."""
        _targets(git, claude, codex, pi)
        root = repo_root(repo)
        if pi:
            from contextfork.harness.pi import install as pi_install

            emit(pi_install.uninstall_pi(root, _scope(project, user)), json)
        elif git:
            from contextfork.lifecycle import githooks

            emit(githooks.uninstall(root), json)
        elif claude:
            emit(_without_proxy(_harness().uninstall_claude(root, _claude_scope(project, user, shared)),
                                root, "claude"), json)
        else:
            emit(_without_proxy(_harness().uninstall_codex(root), root, "codex"), json)

    @app.command(
        "git-hook", help=_GIT_HOOK_HELP, options_metavar="pre-commit|post-commit [--strict]",
        context_settings=_VERBATIM,
    )  # fmt: skip
    def git_hook(ctx: typer.Context) -> None:
        from contextfork.lifecycle import githooks

        raise typer.Exit(githooks.main(list(ctx.args)))
