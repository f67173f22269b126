"""The working set as the built-in roles carry it (``working_set``): files and commands in one
ranked run, each kind held to its share of the room, so neither crowds the other out; compact
outputs (first lines and verdict), other parts of a file the parent read, lists cut to fit
(bench/slice_bench.py measures what this buys against what a subagent re-read and re-ran)."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextfork.slice import roles
from contextfork.slice import workset as W
from contextfork.slice.build import cut
from contextfork.slice.live import read_live
from tests.slice.parent import Writer


def _slice(path: Path, role: str, budget: int) -> str:
    spec = roles.resolve(role, {}, budget)
    assert spec is not None
    return str(cut(read_live(path), None, None, spec, agent_type=None, session=None, task="")["text"])


def _file_heavy(cwd: Path) -> Path:
    """A parent that ran one check early, then read and edited many large files."""
    w = Writer(cwd)
    w.prompt("Port the readers")
    w.call("Bash", {"command": "make check"}, "checking…\nall 40 checks ran\nCHECK-VERDICT: 2 failed")
    for i in range(25):
        body = "".join(f"{n}\tline {n} of reader {i} READER-{i}-CONTENT\n" for n in range(1, 60))
        w.call("Read", {"file_path": f"{cwd}/src/reader{i}.py"}, body)
    return w.write(cwd / "p.jsonl")


@pytest.mark.parametrize("role", ["coder", "tester", "reviewer", "explorer", "planner", "default"])
def test_a_command_keeps_its_share_when_file_contents_would_fill_the_slice(tmp_path: Path, role: str) -> None:
    text = _slice(_file_heavy(tmp_path), role, 6_000)
    assert "CHECK-VERDICT: 2 failed" in text  # its output, not only its name
    assert "READER-24-CONTENT" in text  # and the newest file's content still
    assert len(text) <= 6_000


def test_a_parent_that_only_runs_commands_gets_all_the_room_for_their_outputs(tmp_path: Path) -> None:
    w = Writer(tmp_path)  # as a mini-swe-agent run: every step is a shell command
    w.prompt("Fix the parser")
    for i in range(14):
        w.call("Bash", {"command": f"sed -n '{i * 10},{i * 10 + 5}p' src/parser.py"},
               f"<returncode>0</returncode>\n<output>\n    value_{i} = parse_item(OUTPUT-{i}-LINE)\n</output>")  # fmt: skip
    text = _slice(w.write(tmp_path / "p.jsonl"), "coder", 9_000)
    assert all(f"OUTPUT-{i}-LINE" in text for i in range(14))  # more than a fixed six


def test_an_output_keeps_its_first_lines_and_its_verdict() -> None:
    out = "\n".join(["Traceback (most recent call last):", '  File "repro.py", line 3, in <module>',
                     *[f"  frame {i}" for i in range(40)], "ValueError: THE-VERDICT"])  # fmt: skip
    shown = W.head_tail(out, 3, 6, 400)
    assert shown.startswith("Traceback (most recent call last):\n  File \"repro.py\", line 3")
    assert shown.endswith("ValueError: THE-VERDICT")
    assert "…(34 lines)…" in shown and len(shown) <= 400


def test_another_part_of_a_file_the_parent_read_comes_with_the_newest(tmp_path: Path) -> None:
    w = Writer(tmp_path)
    w.prompt("Fix the theme")
    f = f"{tmp_path}/src/theme.ts"
    w.call("Read", {"file_path": f, "offset": 120, "limit": 20}, "120\tconst PALETTE_REGION = 1;\n121\t// x\n")
    w.call("Read", {"file_path": f, "offset": 1, "limit": 20}, "1\timport HEADER_REGION from 'x';\n2\t// y\n")
    text = _slice(w.write(tmp_path / "p.jsonl"), "coder", 9_000)
    assert "HEADER_REGION" in text and "PALETTE_REGION" in text
    assert "Read (the same file) lines 120-140" in text


def test_a_list_of_names_that_does_not_fit_is_cut_not_dropped(tmp_path: Path) -> None:
    w = Writer(tmp_path)
    w.prompt("Tidy up")
    for i in range(40):
        w.call("Bash", {"command": f"echo job-{i:02d} && true"}, f"job-{i:02d} done")
    slices = {"roles": {"lists": {"sections": ["commands", "working_set"]}}}
    spec = roles.resolve("lists", slices, 1_000)
    assert spec is not None
    text = str(cut(read_live(w.write(tmp_path / "p.jsonl")), None, None, spec, agent_type=None, session=None,
                   task="")["text"])  # fmt: skip
    assert "$ echo job-39 && true → ok: job-39 done" in text  # the newest, listed
    assert "more)" in text  # the rest counted, not silently lost
    assert len(text) <= 1_000


def test_a_command_shown_with_its_output_is_not_listed_again(tmp_path: Path) -> None:
    w = Writer(tmp_path)
    w.prompt("Tidy up")
    for i in range(60):
        w.call("Bash", {"command": f"run-step {i:02d}"}, f"step {i:02d} ok\n" + "y" * 200)
    text = _slice(w.write(tmp_path / "p.jsonl"), "coder", 9_000)
    assert text.count("$ run-step 59") == 1  # once, with its output
    at = text.index("## commands")
    listed = [ln.split(" → ")[0] for ln in text[at:].splitlines() if ln.startswith("$ ")]
    assert listed and all(text.count(cmd + "\n") == 0 and text.count(cmd) == 1 for cmd in listed)


def test_a_check_the_parent_ran_outranks_newer_one_off_commands(tmp_path: Path) -> None:
    w = Writer(tmp_path)
    w.prompt("Fix the rounding")
    w.call("Bash", {"command": "pytest tests/test_round.py -q"}, "F.\nFAILED test_half - 2.5 != 2\n1 failed, 1 passed")
    for i in range(5):
        w.call("Bash", {"command": f"git show HEAD~{i} --stat"}, f"commit {i}\n src/round.py | 2 +-")
    text = _slice(w.write(tmp_path / "p.jsonl"), "coder", 9_000)
    at = text.index("## working_set")
    first = next(ln for ln in text[at:].splitlines() if ln.startswith("$ "))
    assert first == "$ pytest tests/test_round.py -q"


def test_a_file_is_shown_without_its_line_number_prefixes(tmp_path: Path) -> None:
    w = Writer(tmp_path)
    w.prompt("Port the reader")
    body = "".join(f"{n:>6}→    value_{n} = compute_reader_value({n})\n" for n in range(1, 40))
    w.call("Read", {"file_path": f"{tmp_path}/src/reader.py"}, body)
    text = _slice(w.write(tmp_path / "p.jsonl"), "coder", 4_000)
    assert "\n    value_1 = compute_reader_value(1)\n    value_2 = compute_reader_value(2)" in text
    assert "→" not in text  # the ~7 characters a line went to content: more lines fit


def test_a_pointer_to_an_output_shown_already_never_costs_more_than_the_output(tmp_path: Path) -> None:
    w = Writer(tmp_path)
    w.prompt("Write the fixtures")
    quiet = "<returncode>0</returncode>\n<output>\n</output>"  # what a command with no output gives
    for i in range(4):
        w.call("Bash", {"command": f"cat <<'EOF' > fixture_{i}.py\nimport pytest\nEOF"}, quiet)
    text = _slice(w.write(tmp_path / "p.jsonl"), "coder", 4_000)
    assert "the same output as" not in text
    assert text.count("</output>") == 4
    long_output = "\n".join(f"collected item {n} of the suite, all fine" for n in range(8))
    w.call("Bash", {"command": "pytest -q tests/one"}, long_output)
    w.call("Bash", {"command": "pytest -q tests/two"}, long_output)
    text = _slice(w.write(tmp_path / "p.jsonl"), "coder", 4_000)
    assert text.count("(the same output as `$ pytest -q tests/two`)") == 1  # a long one is still named


def test_a_file_edited_after_its_read_says_so_in_one_line_and_an_only_edited_file_shows_its_edit(
    tmp_path: Path,
) -> None:
    w = Writer(tmp_path)
    w.prompt("Fix the reader")
    w.call("Read", {"file_path": f"{tmp_path}/src/reader.py"}, "1\tdef read_all_the_rows():\n2\t    return ROWS\n")
    for i in range(2):
        w.call("Edit", {"file_path": f"{tmp_path}/src/reader.py", "old_string": "ROWS", "new_string": f"ROWS_{i}_NEW"},
               "The file has been updated.")
    w.call("Edit", {"file_path": f"{tmp_path}/src/writer.py", "old_string": "a", "new_string": "WRITER_EDIT_TEXT"},
           "The file has been updated.")
    text = _slice(w.write(tmp_path / "p.jsonl"), "coder", 4_000)
    assert f"Read {tmp_path}/src/reader.py (edited 2× since: re-read it)\ndef read_all_the_rows():" in text
    at = text.index("## working_set")
    in_set = text[at : text.index("\n## ", at + 1) if "\n## " in text[at + 1 :] else len(text)]
    assert "ROWS_1_NEW" not in in_set  # no edit block after a file shown: its room buys more files
    assert "WRITER_EDIT_TEXT" in in_set  # a file never read: its edit is all there is to show


def test_a_long_output_keeps_three_first_and_five_last_lines_of_a_usual_width(tmp_path: Path) -> None:
    w = Writer(tmp_path)
    w.prompt("Fix the suite")
    out = "\n".join(f"tests/test_reader.py::test_case_{n:03d} PASSED  [{n:3d}%]" for n in range(40))
    w.call("Bash", {"command": "pytest -v tests/test_reader.py"}, out)
    text = _slice(w.write(tmp_path / "p.jsonl"), "coder", 4_000)
    rows = out.splitlines()
    assert all(r in text for r in rows[:3] + rows[-5:])  # ~55 characters a line: 8 of them fit
