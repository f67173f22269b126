"""Part 4 (failed approaches) reads right: once per failure, no doubled words, no user refusals.

The anti-loop list is the part a resumed agent acts on, so noise there costs the most: a
barred action rendered "**do not** Do not re-run …", a step printed twice, a tool call the user
declined listed as a failed approach, one flaky command listed four times.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from contextfork.harness.briefs import anti_loop_lines
from contextfork.package import handoff
from contextfork.package.handoff_input import parse_input
from contextfork.package.seeding import seed_from_path
from tests.helpers import Repo, cli
from tests.transcript.builders import CC, text, tool_use, write_jsonl

REJECTED = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. "
            "if it was a file edit, the new_string was NOT written to the file). STOP what you "
            "are doing and wait for the user to tell you how to proceed.")  # fmt: skip
DOUBLED = [
    re.compile(r"do not[^.\n]{0,16}\bdo not\b", re.IGNORECASE),  # "**do not** Do not", "DO NOT RETRY: Do not"
    re.compile(r"\(step (\d+)\)\s*\(step \1\)"),
    re.compile(r"\bstep (\d+)\b[^\n]*\bstep \1\b"),  # one line naming the same step twice
    re.compile(r"\b(\w+) `\1\b"),  # "Read `Read /path`"
]


def _fixture(path: Path, cwd: Path) -> Path:
    """pytest fails three times, make once; the user declines one call and interrupts another."""
    cc = CC(cwd=str(cwd))
    recs: list[dict[str, Any]] = [cc.user("fix the failing test")]
    n = 0

    def call(name: str, result: str, is_error: bool, **inp: Any) -> None:
        nonlocal n
        n += 1
        recs.append(cc.assistant(f"m{n}", [tool_use(f"t{n}", name, **inp)]))
        recs.append(cc.result(f"t{n}", result, is_error=is_error))

    for i in range(3):
        call("Bash", f"Exit code 1\nFAILED tests/test_x.py::test_x - assert {i} == 3", True,
             command="pytest -x tests/test_x.py")
    call("Bash", REJECTED, True, command="rm -rf build")
    call("Bash", "[Request interrupted by user for tool use]", True, command="sleep 600")
    call("Bash", "Exit code 2\nmake: *** No rule to make target 'all'.  Stop.", True,
         command="make all")
    call("Read", "<tool_use_error>File does not exist.</tool_use_error>", True,
         file_path="/home/u/proj/missing.txt")
    recs.append(cc.assistant("m-end", [text("Stopping here.")]))
    return write_jsonl(path, recs)


def _doubled(text_: str) -> list[str]:
    return [m.group(0) for rx in DOUBLED for m in rx.finditer(text_)]


def test_a_user_refusal_is_not_a_failed_approach(tmp_path: Path) -> None:
    seed = seed_from_path(_fixture(tmp_path / "s.jsonl", tmp_path))
    listed = " ".join(f["approach"] + f["barred_action"] for f in seed["failed_approaches"])
    assert "rm -rf build" not in listed and "sleep 600" not in listed
    assert "pytest -x" in listed and "make all" in listed


def test_repeated_failures_of_one_command_are_listed_once_with_a_count(tmp_path: Path) -> None:
    seed = seed_from_path(_fixture(tmp_path / "s.jsonl", tmp_path))
    pytest_entries = [f for f in seed["failed_approaches"] if "pytest -x" in f["approach"]]
    assert len(pytest_entries) == 1
    entry = pytest_entries[0]
    assert "3 times" in entry["approach"]
    steps = [e["ref"] for e in entry["evidence"] if e["kind"] == "step"]
    assert len(steps) == 3 and len(set(steps)) == 3
    assert entry["step"] == int(steps[-1])  # the latest failure, with its error
    assert "assert 2 == 3" in entry["error_excerpt"]
    assert len(seed["failed_approaches"]) == 3


def test_briefs_say_do_not_and_the_step_once(repo: Repo, tmp_path: Path) -> None:
    transcript = _fixture(tmp_path / "proj" / "s.jsonl", repo.path)
    res = cli("export", "--transcript", str(transcript), "--session", "sess-1", "--json",
                  cwd=repo.path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    pkg = Path(res.json()["data"]["path"])
    summary = (pkg / "handoff_summary.md").read_text()
    resumed = cli("resume", res.json()["data"]["package_id"], cwd=repo.path)
    assert resumed.returncode == 0, resumed.stderr
    lines = anti_loop_lines(pkg)
    assert len(lines) == 3
    for name, text_ in (("summary", summary), ("resume", resumed.stdout),
                        ("anti-loop", "\n".join(lines))):  # fmt: skip
        assert _doubled(text_) == [], name
        assert "re-run `pytest -x tests/test_x.py`" in text_, name
        assert "rm -rf build" not in text_, name
        assert "Read `/home/u/proj/missing.txt` failed" in text_, name


def test_agent_written_barred_actions_render_once_with_or_without_do_not(repo: Repo) -> None:
    given = {"failed_approaches": [
        {"approach": "bumping the timeout (step 3)", "barred_action": "Do not raise the timeout again",
         "step": 3},
        {"approach": "pinning urllib3", "barred_action": "pin urllib3 below 2", "step": 5},
        {"approach": "step 7: mocking the clock", "barred_action": "Don't mock time.monotonic",
         "step": 7},
    ]}  # fmt: skip
    h = handoff.build({"branch": "main", "head": repo.head, "worktree_tree_sha": "0" * 40,
                       "summary": "clean"}, parse_input(given, "test"))  # fmt: skip
    md = handoff.render_markdown(h, "pkg-1")
    assert _doubled(md) == []
    assert "**do not** raise the timeout again" in md
    assert "**do not** pin urllib3 below 2" in md
    assert "**do not** mock time.monotonic" in md
    pkg = repo.path / "pkg"
    pkg.mkdir()
    (pkg / "handoff.json").write_text(json.dumps(h))
    lines = anti_loop_lines(pkg)
    assert _doubled("\n".join(lines)) == []
    assert lines[1].endswith("pinning urllib3 (step 5)")


def test_real_transcripts_list_each_failure_once_and_no_refusals(transcripts_dir: Path) -> None:
    session = transcripts_dir / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    if not session.is_file():
        pytest.skip("the recorded 258c7280 session is absent")
    seed = seed_from_path(session)
    approaches = [f["approach"] for f in seed["failed_approaches"]]
    assert not any("TaskOutput" in a for a in approaches)  # the user declined that call
    mix = [a for a in approaches if "mix test" in a]
    assert len(mix) == 1 and "4 times" in mix[0]
    assert len(approaches) == len(set(approaches))
    short = seed_from_path(transcripts_dir / "claude-code" / "short.jsonl")
    assert short["failed_approaches"] == []  # both of its failures are the user saying no


def test_real_transcript_briefs_have_no_doubled_words(
    transcripts_dir: Path, repo: Repo
) -> None:
    session = transcripts_dir / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    if not session.is_file():
        pytest.skip("the recorded 258c7280 session is absent")
    res = cli("export", "--transcript", str(session), "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    pkg = Path(res.json()["data"]["path"])
    resumed = cli("resume", res.json()["data"]["package_id"], cwd=repo.path)
    for text_ in ((pkg / "handoff_summary.md").read_text(), resumed.stdout,
                  "\n".join(anti_loop_lines(pkg))):  # fmt: skip
        assert _doubled(text_) == []
