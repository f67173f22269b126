"""The working set a coder slice carries: the files and commands the parent's recent steps and
the delegated task point at, with their content (bench/slice_bench.py measures how much of what
a subagent re-read is already there)."""

from __future__ import annotations

from pathlib import Path

from contextfork.slice import roles
from contextfork.slice.build import cut
from contextfork.slice.live import read_live
from tests.slice.parent import Writer

BUDGET = 2_500


def _parent(cwd: Path, task: str | None) -> Writer:
    w = Writer(cwd)
    w.prompt("Port the reader")
    w.call("Read", {"file_path": f"{cwd}/src/old_reader.py"}, "1\tdef OLD_READER_BODY():\n2\t    return 'ZORBLAX-OLD'\n")
    for i in range(12):  # much newer work on other files crowds it out of a small slice
        w.call("Read", {"file_path": f"{cwd}/src/mod{i}.py"}, f"1\tdef fn_{i}():\n2\t    return 'MOD-{i}-CONTENT-LINE'\n" + "x" * 200)
        w.call("Bash", {"command": f"echo step {i}"}, f"step {i}")
    for _ in range(3):
        w.call("Bash", {"command": "pytest tests/test_reader.py -q"}, "Exit code 1\ncollected 4\n....\nFAILED test_reader - KeyError\n1 failed, 3 passed",
               error=True)
    if task is not None:
        w.agents({"description": "port", "prompt": task, "subagent_type": "general-purpose"})
    return w


def _coder(path: Path, task: str, budget: int = BUDGET) -> str:
    spec = roles.resolve("coder", {}, budget)
    assert spec is not None
    return str(cut(read_live(path), None, None, spec, agent_type=None, session=None, task=task)["text"])


def test_the_coder_slice_carries_the_newest_content_of_the_files_worked_on(tmp_path: Path) -> None:
    path = _parent(tmp_path, None).write(tmp_path / "p.jsonl")
    text = _coder(path, "")
    assert "MOD-11-CONTENT-LINE" in text  # the newest file's content, not only its name
    assert "ZORBLAX-OLD" not in text  # an old one-off read does not fit this budget
    assert len(text) <= BUDGET


def test_a_file_the_task_names_is_carried_with_its_content_however_old(tmp_path: Path) -> None:
    task = "Finish porting old_reader.py to the new API"
    path = _parent(tmp_path, task).write(tmp_path / "p.jsonl")
    text = _coder(path, task)
    assert "ZORBLAX-OLD" in text
    assert text.index("ZORBLAX-OLD") < text.index("MOD-11-CONTENT-LINE")


def test_a_command_the_parent_keeps_rerunning_comes_with_the_tail_of_its_output(tmp_path: Path) -> None:
    path = _parent(tmp_path, None).write(tmp_path / "p.jsonl")
    text = _coder(path, "", 9_000)
    at = text.index("$ pytest tests/test_reader.py -q (failed), ran 3 times")
    assert "1 failed, 3 passed" in text[at:]


def _with_context(w: Writer, tokens: int) -> Writer:
    for o in w.out:  # every model call recorded this input (Claude Code's usage fields)
        usage = (o.get("message") or {}).get("usage")
        if isinstance(usage, dict):
            usage.update(input_tokens=tokens, cache_creation_input_tokens=0, cache_read_input_tokens=0)
    return w


def test_a_slice_stays_within_a_tenth_of_the_parents_recorded_context(tmp_path: Path) -> None:
    sizes = {}
    for tokens in (3_000, 20_000, 200_000):
        path = _with_context(_parent(tmp_path, None), tokens).write(tmp_path / f"p{tokens}.jsonl")
        sizes[tokens] = len(_coder(path, "", 9_000))
    assert sizes[3_000] <= roles.CONTEXT_FLOOR  # a tiny parent: the floor, not an empty slice
    assert roles.CONTEXT_FLOOR < sizes[20_000] <= 20_000 * roles.CONTEXT_SHARE
    assert sizes[200_000] > 20_000 * roles.CONTEXT_SHARE  # the budget binds, not the parent
