"""Page-in brings back the source (issue 24 item 1), through the real hook path.

A Claude Code-shaped session is folded by `hooks run pre-compact`; `hooks run
user-prompt-submit` gets the question; assertions are on what was injected.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from contextfork.cold import api
from tests.cold.test_pagein_fidelity import _ask, _fold, _Session, _store
from tests.helpers import Repo


def _steps(ctx: str) -> set[int]:
    return {int(m) for m in re.findall(r'<cold-step step="(\d+)"', ctx)}


def test_a_class_name_brings_back_the_file_that_was_read_not_the_newest_step_naming_it(
    repo: Repo,
) -> None:
    s = _Session(repo.path)
    s.turn("read the ledger", "Read", {"file_path": "/srv/app/ledger.py"},
           "class LedgerReconciler:\n    def run(self, batch):\n        return batch.settle(strict=True)\n")  # fmt: skip
    for i in range(4):
        s.turn(f"other {i}", "Bash", {"command": f"ls dir{i}"}, f"file{i}.txt")
    s.turn("commit", "Bash", {"command": "git commit -am 'LedgerReconciler: tidy'"},
           "[main 1a2b3c4] LedgerReconciler: tidy\n 1 file changed")  # fmt: skip
    s.turn("next", "Bash", {"command": "ls"}, "ok")
    _fold(repo, s.write(repo.path / "t.jsonl"))
    ctx = _ask(repo, "What did we find earlier about LedgerReconciler?")
    assert "return batch.settle(strict=True)" in ctx  # the file that was read, not just the commit


def test_one_identifier_gets_its_origin_and_its_latest_change(repo: Repo) -> None:
    s = _Session(repo.path)
    s.turn("read", "Read", {"file_path": "/srv/app/limits.py"},
           "# rate limits\nKESTREL_LIMIT = 10  # requests per second per tenant\n")  # fmt: skip
    s.turn("grep", "Bash", {"command": "grep -rn limits src"}, "src/api.py:3: from limits import *")
    s.turn("edit", "Edit", {"file_path": "/srv/app/limits.py", "old_string": "KESTREL_LIMIT = 10",
                            "new_string": "KESTREL_LIMIT = 25  # raised after the load test"},
           "The file /srv/app/limits.py has been updated.")  # fmt: skip
    s.turn("next", "Bash", {"command": "ls"}, "ok")
    _fold(repo, s.write(repo.path / "t.jsonl"))
    ctx = _ask(repo, "KESTREL_LIMIT")
    assert "KESTREL_LIMIT = 10  # requests per second per tenant" in ctx  # where it came from
    assert "KESTREL_LIMIT = 25  # raised after the load test" in ctx  # and where it last changed


def test_every_phrasing_of_a_request_pages_in_the_same_steps(repo: Repo) -> None:
    s = _Session(repo.path)
    s.turn("pull", "Bash", {"command": "git pull"}, "Already up to date. Pull complete, come back later")
    s.turn("read", "Bash", {"command": "cat cfg.toml"}, "heron_gateway_timeout = 45\nretries = 3")
    s.turn("fix", "Bash", {"command": "make fix"}, "fix applied to 3 files; we can fix more again")
    s.turn("next", "Bash", {"command": "ls"}, "ok")
    _fold(repo, s.write(repo.path / "t.jsonl"))
    bare = _steps(_ask(repo, "heron_gateway_timeout"))
    assert bare
    for prompt in ("What did we find earlier about heron_gateway_timeout?",
                   "Where did heron_gateway_timeout come from?",
                   "Pull up heron_gateway_timeout again so we can fix it."):  # fmt: skip
        assert _steps(_ask(repo, prompt)) == bare, prompt


def test_a_prompt_with_no_selective_term_pages_in_nothing(repo: Repo) -> None:
    s = _Session(repo.path)
    s.turn("run", "Bash", {"command": "./setup.sh"}, "Press enter to continue, or go ahead and abort")
    s.turn("next", "Bash", {"command": "ls"}, "ok")
    _fold(repo, s.write(repo.path / "t.jsonl"))
    assert _ask(repo, "continue") == ""
    assert _ask(repo, "ok, go ahead") == ""


def test_the_last_exchange_is_never_paged_in_it_is_on_screen(repo: Repo) -> None:
    s = _Session(repo.path)
    s.turn("read", "Bash", {"command": "cat a.txt"}, "alpha")
    s.turn("last", "Bash", {"command": "cat notes.txt"}, "the osprey_rotation_key is 7")
    _fold(repo, s.write(repo.path / "t.jsonl"))
    assert _ask(repo, "What is the osprey_rotation_key?") == ""


def _compact(s: _Session, summary: str, preserved: tuple[str, str] | None = None) -> None:
    meta: dict[str, object] = {"trigger": "manual", "preTokens": 9000}
    if preserved:
        meta["preservedSegment"] = {"headUuid": preserved[0], "tailUuid": preserved[1]}
    s._env("system", subtype="compact_boundary", content="Conversation compacted",
           isMeta=False, level="info", compactMetadata=meta)  # fmt: skip
    s._env("user", isCompactSummary=True, isVisibleInTranscriptOnly=True,
           message={"role": "user", "content": summary})  # fmt: skip


def test_steps_after_a_compaction_and_its_preserved_segment_are_never_paged_in(repo: Repo) -> None:
    s = _Session(repo.path)
    s.turn("read", "Bash", {"command": "cat early.txt"}, "the plover_quota is 12 per hour")
    s.turn("kept", "Bash", {"command": "cat kept.txt"}, "the egret_quota is 40 per hour")
    kept = (s.lines[-3]["uuid"], s.lines[-1]["uuid"])  # the harness kept this exchange verbatim
    _compact(s, "Summary: we read early.txt and kept.txt.", kept)
    s.turn("after", "Bash", {"command": "cat late.txt"}, "the grebe_quota is 90 per hour")
    s.turn("next", "Bash", {"command": "ls"}, "ok")
    _fold(repo, s.write(repo.path / "t.jsonl"))  # a later fold holds the live steps too
    assert "plover_quota is 12" in _ask(repo, "What is the plover_quota?")  # folded away: back
    assert _ask(repo, "What is the egret_quota?") == ""  # preserved: on screen
    assert _ask(repo, "What is the grebe_quota?") == ""  # after the compaction: on screen


def test_a_truncated_path_and_a_basename_find_the_file_in_page_in_and_recall(repo: Repo) -> None:
    s = _Session(repo.path)
    s.turn("read", "Read", {"file_path": "/home/u/app/lib/billing/invoice_totals.ex"},
           "defmodule InvoiceTotals do\n  def grand_total(lines), do: Enum.sum(lines)\nend")  # fmt: skip
    s.turn("other", "Bash", {"command": "ls lib"}, "billing\nweb")
    s.turn("next", "Bash", {"command": "ls"}, "ok")
    _fold(repo, s.write(repo.path / "t.jsonl"))
    for prompt in ("What is in /home/u/app/lib/billing/invoice_to?", "What is in invoice_totals.ex?",
                   "show lib/billing/invoice_tot"):  # fmt: skip
        assert "def grand_total(lines)" in _ask(repo, prompt), prompt
    hits = api.recall("/home/u/app/lib/billing/invoice_to", store_dir=_store(repo)).data["hits"]
    assert [h["step_id"] for h in hits][:1] == [1]
    node = json.loads((Path(_store(repo)) / "cold_nodes" / "step_000001.json").read_bytes())
    assert "invoice_totals.ex" in node["readable"]
