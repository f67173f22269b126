"""``contextfork slice``: one role's slice of a parent session (thin: parse, call, emit)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from contextfork.cli.common import JsonOpt, RepoOpt, emit, guarded


def register(app: typer.Typer) -> None:
    @app.command("slice")
    @guarded("slice")
    def slice_cmd(
        role: Annotated[str | None, typer.Option(
            "--role", help="planner|coder|tester|reviewer|explorer|default, or one the policy "
            "file defines (default: the role of --agent-type, else default).")] = None,
        session: Annotated[str | None, typer.Option(
            "--session", help="Parent session id (default: this project's newest session).")] = None,
        transcript: Annotated[Path | None, typer.Option(
            "--transcript", help="Parent transcript file (Claude Code or Codex).")] = None,
        agent_type: Annotated[str | None, typer.Option(
            "--agent-type", help="Subagent type (Explore, plugin:name, …): picks the role by the "
            "policy's mapping and the task by the parent's newest agent call of that type.")] = None,
        budget: Annotated[int | None, typer.Option(
            "--budget", help="Most characters (default: the role's, 9,000: fits the hook cap).")] = None,
        task: Annotated[str | None, typer.Option(
            "--task", help="Key the slice to this task text (default: the parent's newest "
            "Agent/Task call, when one can be read).")] = None,
        child_argv: Annotated[str | None, typer.Option(
            "--child-argv", help="JSON list: a child pi's own arguments; its agent name (the "
            "--append-system-prompt file prompt-NAME.md) or its --tools pick the role.")] = None,
        repo: RepoOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """A role's slice of the parent session: verified blocks labelled with their step and
        payload_sha256, within a budget; what did not fit is named for `fold show`."""
        from contextfork.slice.api import parse_argv, slice_result

        emit(slice_result(role, session=session, transcript=transcript, agent_type=agent_type,
                          budget=budget, task=task, repo=repo,
                          child_argv=parse_argv(child_argv)), as_json)  # fmt: skip
