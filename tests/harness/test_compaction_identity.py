"""PreCompact and fork across Claude Code 2.1 compactions: no step conflicts, nothing dropped."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from contextfork.transcript import load_session
from tests.helpers import Repo, cli, run_cli
from tests.transcript import cc21

SID = cc21.SESSION
STUB = re.compile(r"step (\d+), [\d,]+ chars, sha256 ([0-9a-f]{64})")


def _padded(lines: list[dict[str, Any]], size: int = 3000) -> list[dict[str, Any]]:
    for o in lines:
        content = (o.get("message") or {}).get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    block["content"] = str(block["content"]) + "\n" + "log line\n" * (size // 9)
    return lines


def _pre_compact(repo: Repo, t: Path) -> Any:
    payload = {"session_id": SID, "transcript_path": str(t), "cwd": str(repo.path),
               "permission_mode": "default", "hook_event_name": "PreCompact", "trigger": "auto",
               "custom_instructions": ""}
    return run_cli("hook", "pre-compact", cwd=repo.path, input=json.dumps(payload))


def _log(repo: Repo) -> list[dict[str, Any]]:
    path = repo.path / ".contextfork" / "logs" / "hooks.log"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _packages(repo: Repo) -> list[Path]:
    return [p for p in (repo.path / ".contextfork" / "packages").iterdir() if p.is_dir()]


def test_pre_compact_twice_in_one_session_folds_and_exports_both_times(
    repo: Repo, tmp_path: Path
) -> None:
    t = cc21.write_lines(tmp_path / "proj" / f"{SID}.jsonl", cc21.upto("s3"))  # auto-compaction mid-turn
    assert _pre_compact(repo, t).returncode == 0
    cc21.write_lines(t, cc21.upto("s6"))  # compacted, went on, and compacts again mid-turn
    assert _pre_compact(repo, t).returncode == 0
    folds = [e for e in _log(repo) if e.get("event") == "pre-compact"]
    assert len(folds) == 2 and all(e.get("action") == "fold+export" for e in folds), folds
    assert [e.get("folded_steps") for e in folds] == [3, 6]
    assert len(_packages(repo)) == 2


def test_fork_after_a_compaction_exits_0_and_keeps_the_preserved_segment(
    repo: Repo, tmp_path: Path
) -> None:
    # results big enough that stubbing them makes the fork file smaller; --force because the
    # stubs in the live view save less than the resume brief adds (that refusal is tested in
    # test_fork.py) — this test is about how the fork keeps the preserved segment
    t = cc21.write_lines(tmp_path / "proj" / f"{SID}.jsonl", _padded(cc21.upto("s5")))
    assert _pre_compact(repo, t).returncode == 0  # step 5 folded while still growing
    # compacted once (2-4 kept verbatim), step 5 completed: the fork starts at that boundary
    cc21.write_lines(t, _padded(cc21.lines(second_compaction=False)))
    res = cli("fork", "--transcript", str(t), "--json", "--min-chars", "10", "--force",
              cwd=repo.path)
    assert res.returncode == 0, res.stderr + res.stdout
    fork = Path(res.json()["data"]["fork"])
    lines = [json.loads(x) for x in fork.read_text().splitlines()]
    by_uuid = {o["uuid"]: o for o in lines if "uuid" in o}
    boundaries = [o for o in lines if o.get("subtype") == "compact_boundary"]
    assert len(boundaries) == 1  # the fork starts at the last one: what the harness sends
    for b in boundaries:  # Claude Code's resume walk: tail back to head, hung after the anchor
        seg = b["compactMetadata"]["preservedSegment"]
        assert by_uuid[seg["anchorUuid"]].get("isCompactSummary")
        cur, seen = seg["tailUuid"], []
        while cur != seg["headUuid"]:
            seen.append(cur)
            cur = by_uuid[cur]["parentUuid"]
        assert cur in by_uuid
    original, forked = load_session(t), load_session(fork)
    assert forked.live_steps() == forked.steps  # nothing before what the harness sends
    assert [[c.id for c in s.tool_calls] for s in forked.steps] == [
        [c.id for c in s.tool_calls] for s in original.live_steps()]
    stubs = [(int(m.group(1)), m.group(2)) for m in STUB.finditer(fork.read_text())]
    assert stubs, "small results stubbed with --min-chars 10"
    for step, _sha in stubs:  # each stub names the cold id that really holds its result
        shown = cli("fold", "show", str(step), "--session", SID, "--json", cwd=repo.path)
        assert shown.returncode == 0
    assert any(step == 6 for step, _ in stubs)  # step 5's complete version, not its partial one
