from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from contextfork.resources import load_schema
from contextfork.telemetry.models import Policy, Telemetry
from contextfork.telemetry.policy import DEFAULT_POLICY, badge, evaluate, format_tokens
from tests.helpers import Repo, cli
from tests.transcript.builders import CC, text, tool_use, write_jsonl

BIG = "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"


def small_session(path: Path, context: int = 34_200) -> Path:
    cc = CC(cwd="/home/u/proj")
    recs = [
        cc.user("add a login page"),
        cc.assistant("m1", [tool_use("c1", "Bash", command="npm test")], usage=(1, 5, 0, 1000)),
        cc.result("c1", "Exit code 1\nnpm ERR! missing script: test", is_error=True),
        cc.assistant("m2", [tool_use("c2", "Write", file_path="/home/u/proj/src/login.tsx")],
                     usage=(1, 5, 0, 2000)),
        cc.result("c2", "File created"),
        cc.user("now style it"),
        cc.assistant("m3", [text("done")], usage=(2, 50, 200, context - 202)),
    ]
    return write_jsonl(path, recs)


@pytest.mark.parametrize(
    ("tokens", "steps", "level", "color", "rec"),
    [
        (34_200, 28, "optimal", "green", "continue"),
        (50_000, 28, "caution", "amber", "wrap_milestone"),
        (10, 75, "caution", "amber", "wrap_milestone"),
        (80_000, 1, "critical", "red", "fork_recommended"),
        (10, 120, "critical", "red", "fork_recommended"),
        (None, 0, "optimal", "green", "continue"),
    ],
)
def test_policy_levels_follow_the_ipsf_defaults(
    tokens: int | None, steps: int, level: str, color: str, rec: str
) -> None:
    r = evaluate(tokens, steps, DEFAULT_POLICY)
    assert (r["level"], r["color"], r["recommendation"]) == (level, color, rec)


def test_hard_limit_is_critical_even_below_fork() -> None:
    pol = {"tokens": {"warning": 10, "fork": 100, "hard_limit": 100}, "steps": {"warning": 5, "fork": 9}}
    assert evaluate(100, 0, pol)["reasons"][0].startswith("tokens 100 >= hard_limit")


def test_badge_matches_the_ipsf_shape() -> None:
    r = evaluate(34_200, 28, DEFAULT_POLICY)
    assert badge(34_200, 28, r) == "[ 🟢 34.2k tokens | Step 28 | Normal ]"
    assert (format_tokens(999), format_tokens(200_000), format_tokens(1_250_000)) == ("999", "200k", "1.25M")


def test_status_json_of_a_real_session_validates_and_reports_recorded_tokens(
    transcripts_dir: Path, tmp_path: Path
) -> None:
    res = cli("status", "--json", "--transcript", str(transcripts_dir / BIG), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    env = res.json()
    jsonschema.validate(env, load_schema("envelope.schema.json"))
    data = env["data"]
    jsonschema.validate(data, load_schema("context-telemetry.schema.json"))
    Telemetry.model_validate(data)
    tok = data["tokens"]
    assert (tok["total"], tok["source"]) == (77334, "recorded")
    assert sum(tok["breakdown"].values()) == 77334 and tok["scaled_to_recorded"]
    assert data["steps"] == {"total": 152, "since_compaction": 50, "tool_calls": 186, "tool_errors": 7,
                             "since_fork": None}
    assert data["compactions"][0]["pre_tokens"] == 167094
    assert data["billing"]["method"] == "ccusage" and data["billing"]["output_tokens"] == 38908
    assert data["risk"]["level"] == "critical" and data["git"] is None
    assert len(data["failed_commands"]) == 7 and data["touched_files"]


def test_status_without_transcript_reports_git_only(repo: Repo, tmp_path: Path) -> None:
    repo.write("src/app.py", "changed\n")
    repo.write("new.txt", "x")
    res = cli("status", "--json", cwd=repo.path, env={"CLAUDE_CONFIG_DIR": str(tmp_path / "none")})
    assert res.returncode == 0, res.stderr
    data = res.json()["data"]
    jsonschema.validate(data, load_schema("context-telemetry.schema.json"))
    assert data["session"] is None and data["tokens"] is None
    g = data["git"]
    assert (g["branch"], g["modified"], g["untracked"], g["dirty"]) == ("main", 1, 1, True)
    assert g["head"] == repo.head and g["latest_package"] is None
    assert any("no transcript" in n for n in data["notes"])


def test_status_finds_the_current_claude_code_session_of_the_repo(repo: Repo, tmp_path: Path) -> None:
    from contextfork.transcript.locate import project_slug

    cfg = tmp_path / "claude"
    small_session(cfg / "projects" / project_slug(repo.path) / "abc.jsonl")
    res = cli("status", cwd=repo.path, env={"CLAUDE_CONFIG_DIR": str(cfg)})
    assert res.returncode == 0, res.stderr
    assert "[ 🟢 34.2k tokens | Step 3 | Normal ]" in res.stdout
    assert "CONTEXT METRICS" in res.stdout and "GIT" in res.stdout
    assert "npm test" in res.stdout  # the failed command


def test_status_detached_head_and_latest_package(repo: Repo, tmp_path: Path) -> None:
    repo.git("checkout", "-q", "--detach")
    res = cli("status", "--json", "--repo", str(repo.path), cwd=tmp_path,
                  env={"CLAUDE_CONFIG_DIR": str(tmp_path / "none")})
    g = res.json()["data"]["git"]
    assert g["detached"] and g["branch"] is None and not g["dirty"]
    exported = cli("export", "--json", cwd=repo.path)
    assert exported.returncode == 0, exported.stderr
    g = cli("status", "--json", cwd=repo.path,
                env={"CLAUDE_CONFIG_DIR": str(tmp_path / "none")}).json()["data"]["git"]
    assert g["latest_package"] is not None and g["latest_package"]["valid"]


def test_status_outside_a_repo_reports_the_transcript_only(tmp_path: Path) -> None:
    f = small_session(tmp_path / "s.jsonl")
    res = cli("status", "--json", "--transcript", str(f), cwd=tmp_path)
    data = res.json()["data"]
    assert data["git"] is None and data["steps"]["total"] == 3
    assert data["touched_files"] == ["src/login.tsx"]
    assert data["failed_commands"][0]["command"] == "npm test"
    assert data["failed_commands"][0]["exit_code"] == 1


def test_explicit_repo_that_is_not_a_repo_is_not_found(tmp_path: Path) -> None:
    res = cli("status", "--repo", str(tmp_path), cwd=tmp_path)
    assert res.returncode == 4 and "not a git repository" in res.stderr


def test_counted_source_when_nothing_is_recorded(tmp_path: Path) -> None:
    msgs = [{"role": "user", "content": "hello world " * 20}, {"role": "assistant", "content": "hi"}]
    f = tmp_path / "chat.json"
    f.write_text(json.dumps(msgs))
    data = cli("status", "--json", "--transcript", str(f), cwd=tmp_path).json()["data"]
    assert data["tokens"]["source"] == "counted" and data["tokens"]["breakdown_method"] == "counted"
    assert data["tokens"]["total"] == sum(data["tokens"]["breakdown"].values()) > 20
    assert data["billing"]["method"] == "step-usage"


def test_a_counted_figure_without_recorded_usage_says_it_excludes_the_harness_overhead(
    tmp_path: Path,
) -> None:
    msgs = [{"role": "user", "content": "hello world " * 20}, {"role": "assistant", "content": "hi"}]
    f = tmp_path / "chat.json"
    f.write_text(json.dumps(msgs))
    data = cli("status", "--json", "--transcript", str(f), cwd=tmp_path).json()["data"]
    assert data["tokens"]["includes_harness_overhead"] is False
    assert data["tokens"]["harness_overhead"] is None
    assert "(counted, messages only)" in data["risk"]["badge"]
    text = cli("render", "--transcript", str(f), cwd=tmp_path).stdout
    assert "messages only: excludes the harness's system prompt and tools" in text


def test_policy_init_show_and_a_bad_policy_names_the_field(repo: Repo, tmp_path: Path) -> None:
    res = cli("policy", "init", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    path = repo.path / ".contextfork" / "policy.json"
    raw = json.loads(path.read_text())
    jsonschema.validate(raw, load_schema("context-policy.schema.json"))
    assert Policy.model_validate(raw) == Policy()
    assert raw["tokens"] == {"warning": 50000, "fork": 80000, "hard_limit": None}
    assert cli("policy", "init", cwd=repo.path).returncode == 2  # exists, no --force
    raw["tokens"]["fork"] = "lots"
    path.write_text(json.dumps(raw))
    res = cli("policy", "show", cwd=repo.path)
    assert res.returncode == 2 and "tokens.fork" in res.stderr and "Traceback" not in res.stderr
    res = cli("status", "--json", "--transcript", str(small_session(tmp_path / "s.jsonl")), cwd=repo.path)
    assert res.returncode == 2 and "tokens.fork" in res.json()["problems"][0]["message"]
    raw["tokens"] = {"warning": 10, "fork": 100, "hard_limit": None}
    raw["steps"] = {"warning": 1, "fork": 2}
    path.write_text(json.dumps(raw))
    shown = cli("policy", "show", "--json", cwd=repo.path).json()["data"]
    assert shown["source"].endswith("policy.json") and shown["policy"]["steps"]["fork"] == 2
    data = cli("status", "--json", "--transcript", str(small_session(tmp_path / "s.jsonl")),
                   cwd=repo.path).json()["data"]
    assert data["risk"]["level"] == "critical"
