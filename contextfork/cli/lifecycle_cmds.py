"""CLI: resume, packages list|show|clean, log, push, pull."""

from __future__ import annotations

from typing import Annotated

import typer

from contextfork.cli.common import JsonOpt, RepoOpt, emit, guarded, repo_root

PackageArg = Annotated[str | None, typer.Argument(help="Package dir or id (default: latest).")]
WithColdOpt = Annotated[
    bool | None,
    typer.Option("--with-cold/--without-cold", help="Share the cold-store sessions the packages "
                 "reference (as `contextfork fold push|pull` does); default: when there are "
                 "some, and one that cannot go is a warning."),
]  # fmt: skip


def register(app: typer.Typer) -> None:
    @app.command()
    @guarded("resume")
    def resume(
        package: PackageArg = None,
        apply: Annotated[
            bool, typer.Option(help="Restore the exported working state here.")
        ] = False,
        strict: Annotated[bool, typer.Option(help="Exit 5 when the repo drifted.")] = False,
        force: Annotated[
            bool, typer.Option(help="With --apply: allow a dirty tree, overwrite files in the way.")
        ] = False,
        allow_different_head: Annotated[
            bool, typer.Option(help="With --apply: apply onto another HEAD than the recorded one.")
        ] = False,
        session: Annotated[str | None, typer.Option(help="Session id that resumes.")] = None,
        mark_consumed: Annotated[
            bool | None,
            typer.Option(
                "--mark-consumed/--no-mark-consumed",
                help="Record the package as consumed (default: only with --apply), so "
                "SessionStart no longer offers it to a new session.",
            ),
        ] = None,
        rollback: Annotated[
            bool, typer.Option(help="Undo an interrupted --apply (from its journal).")
        ] = False,
        claude: Annotated[bool, typer.Option(
            "--claude", help="Write the package's conversation for `claude --resume` here.")] = False,
        codex: Annotated[bool, typer.Option(
            "--codex", help="Write the package's conversation for `codex resume` here.")] = False,
        pi: Annotated[bool, typer.Option(
            "--pi", help="Write the package's conversation for `pi --session` here.")] = False,
        trust: Annotated[
            bool, typer.Option(help="Accept a package that was not exported or pulled here "
                               "(after inspecting it); recorded, so sessions are offered it.")
        ] = False,
        repo: RepoOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Validate a package, report drift, print the resume brief (exit 3 tampered, 5 drift)."""
        from contextfork.resume.api import resume as do_resume

        if claude or codex or pi:
            from contextfork.package.conversation import resume_session

            client = "claude" if claude else "codex" if codex else "pi"
            emit(resume_session(repo_root(repo), package, client), json)
            return
        if rollback:
            from contextfork.resume.api import rollback as do_rollback

            emit(do_rollback(repo_root(repo)), json)
            return

        emit(do_resume(repo_root(repo), package, apply=apply, strict=strict, force=force,
                       allow_different_head=allow_different_head, session_id=session,
                       mark=apply if mark_consumed is None else mark_consumed, trust=trust),
             json)  # fmt: skip

    packages = typer.Typer(help="List, show and clean packages.", no_args_is_help=True)
    app.add_typer(packages, name="packages")

    @packages.command("list")
    @guarded("packages list")
    def list_cmd(repo: RepoOpt = None, json: JsonOpt = False) -> None:
        """Every package: id, created, trigger, HEAD, consumed, size."""
        from contextfork.lifecycle import admin

        emit(admin.list_packages(repo_root(repo)), json)

    @packages.command("show")
    @guarded("packages show")
    def show_cmd(package: PackageArg = None, repo: RepoOpt = None, json: JsonOpt = False) -> None:
        """The manifest and the handoff of one package."""
        from contextfork.lifecycle import admin

        emit(admin.show(repo_root(repo), package), json)

    @packages.command("clean")
    @guarded("packages clean")
    def clean_cmd(
        keep: Annotated[int, typer.Option(help="Always keep the newest N packages.")] = 10,
        yes: Annotated[
            bool, typer.Option("--yes", help="Really delete (default: dry run).")
        ] = False,
        force: Annotated[bool, typer.Option(help="Also delete unconsumed packages.")] = False,
        repo: RepoOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Delete old packages: dry run unless --yes; unconsumed ones only with --force."""
        from contextfork.lifecycle import admin

        emit(admin.clean(repo_root(repo), keep=keep, yes=yes, force=force), json)

    @app.command()
    @guarded("log")
    def log(
        limit: Annotated[int, typer.Option("-n", "--limit", help="How many commits.", min=1)] = 20,
        repo: RepoOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Recent commits with the checkpoint packages their git notes name."""
        from contextfork.lifecycle import admin

        emit(admin.log(repo_root(repo), limit), json)

    @app.command()
    @guarded("push")
    def push(
        remote: Annotated[str, typer.Argument(help="Git remote.")] = "origin",
        package: Annotated[str | None, typer.Argument(help="Package id (default: all).")] = None,
        allow_secrets: Annotated[
            bool,
            typer.Option(
                "--allow-secrets", help="Push even if a package file holds a secret."
            ),
        ] = False,
        with_head: Annotated[
            bool,
            typer.Option(
                "--with-head",
                help="Also send the recorded HEAD and the unpushed commits under it.",
            ),
        ] = False,
        with_cold: WithColdOpt = None,
        repo: RepoOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Store packages as parentless commits under refs/contextfork/packages/ and push them.

        Says whether each package's HEAD is on the remote; local commits are sent only with
        --with-head. Refuses (exit 1) when a file to send holds a secret, unless --allow-secrets."""
        from contextfork.lifecycle import sharing

        result = sharing.push(repo_root(repo), remote, package, allow_secrets=allow_secrets,
                              with_head=with_head, with_cold=with_cold)  # fmt: skip
        emit(result, json)

    @app.command()
    @guarded("pull")
    def pull(
        remote: Annotated[str, typer.Argument(help="Git remote.")] = "origin",
        with_cold: WithColdOpt = None,
        repo: RepoOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Fetch refs/contextfork/packages/* and materialize the verified packages here."""
        from contextfork.lifecycle import sharing

        emit(sharing.pull(repo_root(repo), remote, with_cold=with_cold), json)
