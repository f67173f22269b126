"""Billing totals computed the ccusage way (20.0.24), checked against ccusage itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from contextfork.telemetry.scan import ScanState, billing_totals, scan
from tests.helpers import npm_package
from tests.transcript.builders import CC, text, write_jsonl

BIG = "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
# What `ccusage@20.0.24 session --json --offline` reported for BIG (with its subagents/ folder)
# in a temp CLAUDE_CONFIG_DIR; re-checked live below when ccusage is installed.
CCUSAGE_BIG = {"input_tokens": 198, "output_tokens": 38908,
               "cache_creation_input_tokens": 394137, "cache_read_input_tokens": 14972534}


def _entry(cc: CC, mid: str | None, rid: str | None, inp: int, out: int,
           side: bool = False, ccr: int = 0) -> dict[str, object]:
    rec = cc.assistant(mid or "x", [text("x")], rid=rid, usage=(inp, out, ccr, 0), parent=None)
    if mid is None:
        del rec["message"]["id"]  # type: ignore[index]
    if rid is None:
        del rec["requestId"]
    rec["isSidechain"] = side
    return rec


def rules_fixture(path: Path) -> Path:
    """One case per dedupe rule observed in ccusage 20.0.24 (see scan.py's docstring)."""
    cc = CC()
    recs = [
        _entry(cc, "m1", "r1", 10, 100), _entry(cc, "m1", "r1", 10, 50),        # max total wins: 110
        _entry(cc, "m2", "r2", 10, 100, side=True), _entry(cc, "m2", "r2", 20, 50),  # non-sidechain wins
        _entry(cc, "m3", "r3", 20, 10), _entry(cc, "m3", "r3", 10, 20),          # tie: first wins
        _entry(cc, "m4", None, 1, 1), _entry(cc, "m4", None, 100, 1),            # id without requestId
        _entry(cc, None, "r5", 1000, 1), _entry(cc, None, "r5", 1000, 1),        # no id: no dedupe
        cc.user("a prompt has no usage"),
        "{broken",
    ]
    return write_jsonl(path, recs)


# m1 (10,100) + m2 (20,50) + m3 (20,10) + m4 (100,1) + 2 × (1000,1)
RULES_EXPECTED = {"input_tokens": 10 + 20 + 20 + 100 + 2000, "output_tokens": 100 + 50 + 10 + 1 + 2,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def test_dedupe_rules_match_ccusage(tmp_path: Path) -> None:
    totals = billing_totals(rules_fixture(tmp_path / "s.jsonl"))
    assert {k: totals[k] for k in RULES_EXPECTED} == RULES_EXPECTED
    assert totals["entries"] == 6


def test_resumed_scan_equals_a_full_scan(tmp_path: Path) -> None:
    f = rules_fixture(tmp_path / "s.jsonl")
    data = f.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    f.write_bytes(data[:cut] + data[cut : cut + 7])  # half a line still being written
    first = scan(f)
    assert first.offset == cut
    f.write_bytes(data)
    resumed = scan(f, ScanState.from_json(json.loads(json.dumps(first.to_json()))))
    assert resumed.to_json() == scan(f).to_json()


def test_billing_of_the_real_session_matches_ccusage_figures(transcripts_dir: Path) -> None:
    totals = billing_totals(transcripts_dir / BIG)
    assert {k: totals[k] for k in CCUSAGE_BIG} == CCUSAGE_BIG
    assert totals["files"] == 3


CCUSAGE = "ccusage@20.0.24"


def _ccusage() -> tuple[list[str] | None, str]:
    """ccusage itself (from npm, pinned), so the billing rules are checked against the tool."""
    explicit = os.environ.get("CONTEXTFORK_CCUSAGE")
    if explicit and Path(explicit).exists():
        return [explicit], ""
    if shutil.which("node") is None:
        return None, f"{CCUSAGE} needs node and npm (not found)"
    binary, why = npm_package(CCUSAGE, "node_modules/.bin/ccusage")
    return ([str(binary)] if binary else None), why


def _run_ccusage(cmd: list[str], config: Path) -> dict[str, int]:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config)}
    proc = subprocess.run([*cmd, "session", "--json", "--offline"], env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    t = json.loads(proc.stdout)["totals"]
    return {"input_tokens": t["inputTokens"], "output_tokens": t["outputTokens"],
            "cache_creation_input_tokens": t["cacheCreationTokens"],
            "cache_read_input_tokens": t["cacheReadTokens"]}


@pytest.fixture
def ccusage_cmd() -> list[str]:
    cmd, why = _ccusage()
    if cmd is None:
        pytest.skip(why)
    return cmd


def test_live_ccusage_agrees_on_the_rules_fixture(tmp_path: Path, ccusage_cmd: list[str]) -> None:
    project = tmp_path / "cfg" / "projects" / "-p"
    rules_fixture(project / "s.jsonl")
    assert _run_ccusage(ccusage_cmd, tmp_path / "cfg") == RULES_EXPECTED


def test_live_ccusage_agrees_on_the_real_session(
    tmp_path: Path, transcripts_dir: Path, ccusage_cmd: list[str]
) -> None:
    project = tmp_path / "cfg" / "projects" / "-home-u-proj"
    project.mkdir(parents=True)
    src = transcripts_dir / BIG
    shutil.copyfile(src, project / src.name)
    subdir = project / src.with_suffix("").name / "subagents"
    subdir.mkdir(parents=True)
    for sub in (src.with_suffix("") / "subagents").glob("*.jsonl"):
        shutil.copyfile(sub, subdir / sub.name)  # copyfile: no read-only modes in tmp_path
    ours = billing_totals(project / src.name)
    assert _run_ccusage(ccusage_cmd, tmp_path / "cfg") == {k: ours[k] for k in CCUSAGE_BIG}
