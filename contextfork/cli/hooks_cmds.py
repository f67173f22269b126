"""CLI: hooks install|uninstall (--git, --claude, --codex) and the git-hook runner."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from contextfork.cli.common import JsonOpt, RepoOpt, emit, guarded, repo_root


def _harness() -> Any:
    from contextfork.harness import install as harness_install

    return harness_install


def _targets(git: bool, claude: bool, codex: bool) -> None:
    from contextfork.errors import UsageError

    if not (git or claude or codex):
        raise UsageError("say which hooks: --git, --claude [--project|--user], or --codex")
    if sum((git, claude, codex)) > 1:
        raise UsageError("pass one of --git, --claude, --codex at a time")


def _scope(project: bool, user: bool) -> str:
    from contextfork.errors import UsageError

    if project and user:
        raise UsageError("--project and --user are exclusive")
    return "user" if user else "project"


Git = Annotated[bool, typer.Option("--git", help="git pre-commit/post-commit checkpoint hooks.")]
Claude = Annotated[bool, typer.Option("--claude", help="Claude Code hooks (settings.json).")]
Codex = Annotated[bool, typer.Option("--codex", help="Codex CLI hooks (hooks.json).")]
Project = Annotated[bool, typer.Option("--project", help="Claude: this project's settings.")]
User = Annotated[bool, typer.Option("--user", help="Claude: the user's settings.")]


def register(app: typer.Typer) -> None:
    hooks = typer.Typer(help="Install or remove git and agent-harness hooks.", no_args_is_help=True)
    app.add_typer(hooks, name="hooks")

    @hooks.command("install")
    @guarded("hooks install")
    def install(
        git: Git = False, claude: Claude = False, codex: Codex = False,
        project: Project = False, user: User = False,
        strict: Annotated[bool, typer.Option(help="git: a failed checkpoint blocks the commit.")] = False,
        keep: Annotated[int, typer.Option(help="git: checkpoints kept (0 = all).", min=0)] = 20,
        repo: RepoOpt = None, json: JsonOpt = False,
    ) -> None:  # fmt: skip
        """Install hooks; an existing git hook is kept as .legacy and still runs."""
        _targets(git, claude, codex)
        root = repo_root(repo)
        if git:
            from contextfork import githooks

            emit(githooks.install(root, strict=strict, keep=keep), json)
        elif claude:
            emit(_harness().install_claude(root, _scope(project, user)), json)
        else:
            emit(_harness().install_codex(root), json)

    @hooks.command("uninstall")
    @guarded("hooks uninstall")
    def uninstall(
        git: Git = False, claude: Claude = False, codex: Codex = False,
        project: Project = False, user: User = False,
        repo: RepoOpt = None, json: JsonOpt = False,
    ) -> None:  # fmt: skip
        """Remove exactly what install added and restore what was there."""
        _targets(git, claude, codex)
        root = repo_root(repo)
        if git:
            from contextfork import githooks

            emit(githooks.uninstall(root), json)
        elif claude:
            emit(_harness().uninstall_claude(root, _scope(project, user)), json)
        else:
            emit(_harness().uninstall_codex(root), json)

    @app.command("git-hook", hidden=False)
    def git_hook(
        hook: Annotated[str, typer.Argument(help="pre-commit or post-commit.")],
        strict: Annotated[bool, typer.Option(help="Fail the hook on an internal error.")] = False,
    ) -> None:
        """Run a git hook's work (fail-open unless --strict); for hook managers."""
        from contextfork import githooks

        raise typer.Exit(githooks.main([hook, *(["--strict"] if strict else [])]))
