"""One parser per command (issue 14): Typer defines every command's arguments, once.

The hot-path commands (statusline, hooks run, the legacy hook alias, git-hook) are read by their
Typer-free runners and registered with Typer only to pass their arguments on verbatim; every
other command is parsed by Typer alone, in any process (console script, in-process, MCP).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
import typer
from typer.main import get_command

from contextfork.cli import app as cli_app
from tests.helpers import Repo, cli, run_cli

PKG = Path(cli_app.__file__).resolve().parents[1]
VERBATIM = {"statusline", "hooks run", "hook", "git-hook", "pi-worker"}


def _commands(group: object, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for name, cmd in getattr(group, "commands", {}).items():
        path = f"{prefix}{name}"
        out[path] = cmd
        out.update(_commands(cmd, path + " "))
    return out


def _imports(path: Path) -> set[str]:
    """Top-level names of the modules ``path`` imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_an_abbreviated_option_is_refused_by_the_process_and_in_process(repo: Repo) -> None:
    # argparse's prefix matching once accepted `export --go x` in the console script only.
    proc = run_cli("export", "--go", "x", cwd=repo.path)
    inproc = cli("export", "--go", "x", cwd=repo.path)
    for out in (proc, inproc):
        assert out.returncode == 2, out.stderr
        assert "No such option: --go" in out.stderr
    assert not (repo.path / ".contextfork" / "packages").exists()
    assert cli("export", "--goal", "x", cwd=repo.path).returncode == 0


def test_no_second_parser_exists_beside_typer() -> None:
    """Fails when a command grows a second parser: argparse anywhere in the package, a command
    entry.py answers before Typer other than the verbatim ones, or a verbatim command whose
    Typer definition parses options or arguments of its own."""
    offenders = [str(p.relative_to(PKG)) for p in PKG.rglob("*.py") if "argparse" in _imports(p)]
    assert offenders == []
    assert not (PKG / "cli" / "fast.py").exists()
    entry = ast.parse((PKG / "entry.py").read_text(encoding="utf-8"))
    literals = {n.value for n in ast.walk(entry) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    top = {c for cs in cli_app.AREAS.values() for c in cs}
    # "run": the literal of `hooks run` (entry.py hands that to the hook runner), not `run`
    assert literals & top <= {"statusline", "hooks", "hook", "run"}, literals & top
    commands = _commands(get_command(cli_app.build()))
    for path in VERBATIM:
        params = [p.name for p in commands[path].params]  # type: ignore[attr-defined]
        assert params == ["help"] or params == [], (path, params)
        ctx = commands[path].context_settings  # type: ignore[attr-defined]
        assert ctx.get("allow_extra_args") and ctx.get("ignore_unknown_options"), path


def test_the_area_table_names_every_command_each_area_registers() -> None:
    for area, names in cli_app.AREAS.items():
        t = typer.Typer()
        importlib.import_module(f"contextfork.cli.{area}").register(t)
        found = {c.name or (c.callback.__name__ if c.callback else "") for c in t.registered_commands}
        found |= {g.name or "" for g in t.registered_groups}
        assert found == set(names), (area, found)


@pytest.mark.parametrize("args", [["doctor", "--help"], ["view", "--help"], ["export", "--help"]])
def test_the_lean_app_answers_like_the_whole_app(args: list[str]) -> None:
    lean = get_command(cli_app.app_for(args))
    whole = get_command(cli_app.build())
    assert set(lean.commands) < set(whole.commands)  # type: ignore[attr-defined]
    name = args[0]
    assert lean.commands[name].get_help(  # type: ignore[attr-defined]
        typer.Context(lean.commands[name], info_name=name)  # type: ignore[attr-defined]
    ) == whole.commands[name].get_help(  # type: ignore[attr-defined]
        typer.Context(whole.commands[name], info_name=name)  # type: ignore[attr-defined]
    )


def test_a_single_command_area_still_needs_the_command_name(repo: Repo) -> None:
    out = cli("doctor", "--json", cwd=repo.path)
    assert out.returncode in (0, 1) and out.json()["command"] == "doctor"
