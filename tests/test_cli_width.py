"""Tables and reports are readable at 80 columns and when piped: nothing cut to `…`, no line
wider than the terminal. The CLI runs as a real subprocess, so stdout is a pipe (as in
`contextfork replay ... | less`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from contextfork.cold.scenario import build_reference_scenario
from tests.helpers import Repo, clean_env, cli, run_cli

BIG = "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"  # 152 steps, 14,040,054 tokens


def assert_fits(text: str, width: int, repo: Path | None = None) -> None:
    """``repo``: its path is the user's, of any length; it counts as a short ``<repo>``."""
    if repo is not None:
        text = text.replace(str(repo), "<repo>")
    assert text.strip()
    assert "…" not in text
    too_wide = [ln for ln in text.splitlines() if len(ln.rstrip()) > width]
    assert too_wide == []


def test_replay_table_is_whole_at_80_columns(transcripts_dir: Path, repo: Repo) -> None:
    res = run_cli("replay", "--transcript", str(transcripts_dir / BIG), cwd=repo.path,
                  env={"COLUMNS": "80"})  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert_fits(res.stdout, 80)
    bill = cli("replay", "--transcript", str(transcripts_dir / BIG), "--json", cwd=repo.path)
    for p in bill.json()["data"]["policies"]:  # every prompt total in full (was `14,040…`)
        assert f"{p['prompt_tokens']:,}" in res.stdout
    for header in ("policy", "prompt", "×base", "cached", "peak", "rewr/app", "epochs",
                   "cost $", "ms/step", "carriage"):  # fmt: skip
        assert header in res.stdout


def test_replay_piped_without_columns_uses_100(transcripts_dir: Path, repo: Repo) -> None:
    env = {k: v for k, v in clean_env().items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run(
        [sys.executable, "-m", "contextfork", "replay", "--transcript",
         str(transcripts_dir / BIG)],
        cwd=repo.path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert_fits(proc.stdout, 100)
    assert max(len(ln.rstrip()) for ln in proc.stdout.splitlines()) > 80  # uses the room


@pytest.mark.parametrize(
    "argv",
    [("packages", "list"), ("fold", "status", "--session", "s1"), ("log",), ("status",),
     ("doctor",)],
)
def test_reports_fit_80_columns(repo: Repo, tmp_path: Path, argv: tuple[str, ...]) -> None:
    env = {"COLUMNS": "80", "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    build_reference_scenario(repo.path / ".contextfork" / "cold" / "s1")
    for goal in ("first", "second"):  # setup in-process; the report itself through a pipe
        assert cli("export", "--goal", goal, cwd=repo.path, env=env).returncode == 0
    cli("resume", "--session", "5f0c3a8e-2b7d-4e61-9a55-1d2c3b4a5e6f", cwd=repo.path, env=env)
    res = run_cli(*argv, cwd=repo.path, env=env)
    assert res.returncode in (0, 1), res.stderr  # doctor may warn; nothing else fails
    assert_fits(res.stdout, 80, repo.path)


def test_the_piped_console_width_follows_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    from contextfork.cli.common import PIPED_WIDTH, console

    monkeypatch.delenv("COLUMNS", raising=False)
    if not os.isatty(1):
        assert console().width == PIPED_WIDTH
    monkeypatch.setenv("COLUMNS", "80")
    assert console().width == 80
