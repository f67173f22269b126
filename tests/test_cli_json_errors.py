"""Errors follow the parsed --json option, not sys.argv."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from contextfork.cli.app import app
from tests.helpers import run_cli


def test_error_envelope_when_json_is_parsed_in_process(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["validate", str(tmp_path / "nope"), "--json"])
    assert result.exit_code != 0
    env = json.loads(result.stdout)
    assert env["ok"] is False and env["exit_code"] == result.exit_code


def test_json_as_an_option_value_does_not_switch_errors_to_json(tmp_path: Path) -> None:
    result = run_cli("resume", "--session", "--json", str(tmp_path / "nope"), cwd=tmp_path)
    assert result.returncode != 0
    assert not result.stdout.lstrip().startswith("{")
    assert result.stderr.strip()
