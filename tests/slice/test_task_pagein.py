"""The task-keyed slice with a folded parent: the working set keeps its room, the task's page-in
from the cold store comes after it (shown when it fits, else named as peek-able steps), and the
working set counts each block's label as it is (a folded step's label is ~100 characters).
bench/slice_bench.py --store all measures what this buys (docs/slice.md, Measured)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contextfork.cold import api as cold_api
from contextfork.slice import roles
from contextfork.slice import workblocks as WB
from contextfork.slice.build import Cutter, cut
from contextfork.slice.live import read_live
from contextfork.slice.sources import Store
from tests.helpers import Repo
from tests.slice.parent import SESSION, Writer

TASK = "Find where QUUXRATE is defined and how the rate tables use QUUXRATE"


def _parent(cwd: Path) -> Path:
    """Early on, a search whose output is all about QUUXRATE; then the parent reads 12 files."""
    w = Writer(cwd)
    w.prompt("Port the readers")
    hits = "".join(f"src/rates/table{i}.py:{i}: QUUXRATE_{i} = QUUXRATE * {i}  # rate table {i}\n" for i in range(60))
    w.call("Bash", {"command": "grep -rn QUUXRATE src"}, hits)
    for i in range(12):
        body = "".join(f"{n}\tline {n} of reader {i} READER-{i}-CONTENT\n" for n in range(1, 40))
        w.call("Read", {"file_path": f"{cwd}/src/reader{i}.py"}, body)
    w.agents({"description": "find", "prompt": TASK, "subagent_type": "general-purpose"})
    return w.write(cwd / "t" / f"{SESSION}.jsonl")


def _cut(repo: Repo, role: str, budget: int) -> dict[str, Any]:
    path = _parent(repo.path)
    cold_api.fold_session(path, repo=repo.path, session=SESSION)
    store = Store(repo.path, SESSION)
    assert store.ok
    spec = roles.resolve(role, {}, budget)
    assert spec is not None
    return cut(read_live(path), store, None, spec, agent_type="general-purpose", session=SESSION, task=TASK)


@pytest.mark.parametrize("role", sorted(roles.BUILTIN_ROLES))
def test_the_tasks_page_in_comes_after_the_working_set(repo: Repo, role: str) -> None:
    out = _cut(repo, role, 9_000)
    order = [b["section"] for b in out["blocks"] + out["left"] if b["section"] in ("task", "working_set")]
    assert "task" in order, "the task's words page a folded step in"
    assert order.index("task") > max(i for i, s in enumerate(order) if s == "working_set"), order


def test_a_page_in_that_does_not_fit_is_named_as_a_peekable_step_and_the_newest_files_stay(repo: Repo) -> None:
    out = _cut(repo, "coder", 2_000)  # (the parent's newest call records no context: the floor)
    # the page-in does not push the working set's files out (before it, only READER-11 stayed)
    assert "READER-11-CONTENT" in out["text"] and "READER-10-CONTENT" in out["text"]
    task = [b for b in out["blocks"] + out["left"] if b["section"] == "task"]
    assert task
    for b in task:
        assert b in out["blocks"] or f"step {b['step']}" in out["text"].rsplit("Not shown", 1)[-1]
    assert len(out["text"]) <= 2_000


def test_the_working_set_counts_a_blocks_label_as_it_is(repo: Repo) -> None:
    path = _parent(repo.path)
    cold_api.fold_session(path, repo=repo.path, session=SESSION)
    cutter = Cutter(read_live(path), Store(repo.path, SESSION), None, "", 4_000)
    blocks = WB.working_set(cutter)
    assert all(b.label.startswith("step ") and len(b.label) > 60 for b in blocks)  # it names the folded step too
    assert all(WB.block_chars(b) == len(b.render()) for b in blocks)
    # the run stops once its room (SET_SHARE of the budget) is used: the item that crossed it is
    # the only overshoot (each item here is one block)
    assert sum(len(b.render()) for b in blocks[:-1]) < WB.SET_SHARE * 4_000
