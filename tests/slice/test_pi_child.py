"""A child pi's role comes from what it was started with (pi 0.73.1's subagent example
extension: ``pi --mode json -p --no-session [--model M] [--tools a,b]
[--append-system-prompt <tmp>/prompt-<agent>.md] "Task: …"``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork.slice.roles import pi_child, role_for
from tests.helpers import Repo, cli
from tests.slice.parent import SESSION, parent_session

NODE = ["/usr/bin/node", "/x/node_modules/@mariozechner/pi-coding-agent/dist/cli.js"]


def _argv(agent: str | None, tools: str | None) -> list[str]:
    argv = [*NODE[1:], "--mode", "json", "-p", "--no-session", "--model", "claude-haiku-4-5"]
    if tools:
        argv += ["--tools", tools]
    if agent:
        argv += ["--append-system-prompt", f"/tmp/pi-subagent-Ab12Cd/prompt-{agent}.md"]
    return [*argv, "Task: find where QUUXRATE is set"]


@pytest.mark.parametrize(("agent", "tools", "role"), [
    ("scout", "read,grep,find,ls,bash", "explorer"),
    ("planner", "read,grep,find,ls", "planner"),
    ("reviewer", "read,grep,find,ls,bash", "reviewer"),
    ("worker", None, "default"),
    (None, "read,grep,find,ls", "explorer"),  # no prompt file: read-only tools
    (None, "read,bash,edit,write", "default"),
    (None, None, "default"),
])  # fmt: skip
def test_a_child_pi_gets_the_role_of_its_agent_name_else_of_its_tools(
    agent: str | None, tools: str | None, role: str
) -> None:
    agent_type, given = pi_child(_argv(agent, tools))
    assert agent_type == agent
    assert (given or role_for(agent_type, {})) == role


def test_slice_with_a_child_argv_is_cut_for_that_agents_role(repo: Repo, tmp_path: Path) -> None:
    parent = parent_session(repo.path).write(tmp_path / f"{SESSION}.jsonl")
    res = cli("slice", "--transcript", str(parent), "--task", "find QUUXRATE", "--child-argv",
              json.dumps(_argv("scout", "read,grep,find,ls,bash")), "--json", cwd=repo.path)  # fmt: skip
    assert res.returncode == 0, res.stderr + res.stdout
    data = res.json()["data"]
    assert (data["role"], data["agent_type"]) == ("explorer", "scout")
    assert "for the explorer role (agent type scout)" in data["text"]


def test_an_agent_name_with_odd_characters_in_the_prompt_file_is_not_taken() -> None:
    assert pi_child(["--append-system-prompt", "/tmp/x/notes.md", "Task: x"]) == (None, None)
    assert pi_child(["--append-system-prompt"]) == (None, None)  # flag without its value


def test_child_argv_that_is_not_a_json_list_of_strings_is_a_usage_error(repo: Repo) -> None:
    res = cli("slice", "--child-argv", '{"a": 1}', "--json", cwd=repo.path)
    assert res.returncode == 2 and "JSON list of strings" in res.stdout + res.stderr
