"""The working set as slice blocks: files with their freshest content, commands with their output.

``working_set`` (the built-in roles' section) puts both kinds in one ranked run and gives each
kind a guaranteed share of the room: the share of shell calls among the parent's recent file
and shell calls (``workset.command_share``), never under ``MIN_SHARE`` for a kind the parent
used at all. The next item is always of the kind furthest below its share, so a session of
commands (mini-swe-agent, a build loop) gets mostly outputs and one of reads and edits mostly
file content, and neither kind can crowd the other out. Each command comes with the tail of its
newest output (the last ``OUTPUT_LINES`` lines: a test runner's or compiler's verdict), an
output already shown for another command is named instead of repeated.

``working_files`` and ``command_outputs`` are the two kinds alone (a policy may still list
them). Stdlib only: SubagentStart runs this.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from contextfork.slice import workset as W
from contextfork.slice.live import Call

# the standalone sections: a file per WORK_FILE_BUDGET chars of the budget (10 at the default
# 9,000), a command per WORK_COMMAND_BUDGET (6); each file's content and output cut to these sizes
WORK_FILE_BUDGET, WORK_FILE_CHARS, WORK_EDITS, WORK_EDIT_CHARS = 900, 300, 1, 200
SET_FILE_CHARS, SET_EDIT_CHARS = 200, 80  # the same in working_set (smaller: more files fit)
WORK_COMMAND_BUDGET, WORK_OUTPUT_CHARS = 1_500, 300
# working_set: the room it may fill (a share of the budget: the short lists after it keep some),
# each kind's floor, the per-item sizes, and how many candidates of each kind are looked at
SET_SHARE = 0.9
WORK_RANGES, WORK_RANGE_CHARS = 2, 160  # other parts of a file the parent read (another offset)
MIN_SHARE = 0.25
OUTPUT_HEAD, OUTPUT_LINES, OUTPUT_CHARS, COMMAND_CHARS = 3, 5, 520, 300


class _Cutter(Protocol):
    live: Any
    task: str
    budget: int
    shown_commands: set[str]

    def files_of(self, call: Call) -> list[str]: ...
    def command_of(self, call: Call) -> str | None: ...
    def describe(self, call: Call, result_chars: int = ...) -> str: ...
    def _call_block(self, section: str, call: Call, text: str) -> Any: ...


def _file_blocks(c: _Cutter, section: str, path: str) -> tuple[list[Any], list[Any]]:
    """(the file's freshest content and the edit after it, its other read ranges)."""
    calls = c.live.calls
    size, edit_size = (SET_FILE_CHARS, SET_EDIT_CHARS) if section == "working_set" else (WORK_FILE_CHARS, WORK_EDIT_CHARS)
    shown, edits = W.content_call(calls, path, c.files_of)
    out, more = [], []
    # in working_set a file shown is followed by no edit block: the head says it was edited since
    # (a subagent re-reads the file as it is now; the room buys more files: measured, see docs)
    later = edits[-WORK_EDITS:] if section != "working_set" or shown is None else []
    if shown is not None:
        head = c.describe(shown, 0).split("\n", 1)[0]
        if edits and not later:
            head += f" (edited {len(edits)}× since: re-read it)"
        out.append(c._call_block(section, shown, f"{head}\n{W.shown_content(shown, size)}"))
    # in working_set a file's blocks follow each other: the path is named once, in the first
    name = "the same file" if section == "working_set" and shown is not None else path
    for e in later:
        out.append(c._call_block(section, e, f"Edit {name} (after that):\n{W.edit_text(e, edit_size)}"))
    if shown is not None and section == "working_set":
        for r in W.other_ranges(calls, path, c.files_of, shown, WORK_RANGES):
            head = c.describe(r, 0).split("\n", 1)[0].replace(f" {path}", " (the same file)", 1)
            more.append(c._call_block(section, r, f"{head}\n{W.shown_content(r, WORK_RANGE_CHARS)}"))
    return out, more


def _command_text(cmd: str, call: Call, runs: int, body: str) -> str:
    status = " (failed)" if call.is_error else ""  # as describe() marks it
    times = f", ran {runs} times" if runs > 1 else ""
    shown = cmd if len(cmd) <= COMMAND_CHARS else cmd[: COMMAND_CHARS - 20] + f"…(+{len(cmd) - COMMAND_CHARS + 20} chars)"
    return f"$ {shown}{status}{times}\n{body}".rstrip("\n")


def working_files(c: _Cutter) -> list[Any]:
    out: list[Any] = []
    for path, _score in W.rank_files(c.live.calls, c.files_of, c.task)[: max(1, c.budget // WORK_FILE_BUDGET)]:
        out += _file_blocks(c, "working_files", path)[0]
    return out


def command_outputs(c: _Cutter) -> list[Any]:
    out: list[Any] = []
    for cmd, call, runs in W.rank_commands(c.live.calls, c.command_of, c.task)[: max(1, c.budget // WORK_COMMAND_BUDGET)]:
        body = W.excerpt_tail(call.result, WORK_OUTPUT_CHARS)
        out.append(c._call_block("command_outputs", call, _command_text(cmd, call, runs, body)))
    return out


def _commands(c: _Cutter) -> Iterator[list[Any]]:
    seen: dict[str, str] = {}
    for cmd, call, runs in W.rank_commands(c.live.calls, c.command_of, c.task):
        body = W.head_tail(call.result, OUTPUT_HEAD, OUTPUT_LINES, OUTPUT_CHARS)
        same = f"(the same output as `$ {seen.get(body, '')[:80]}`)"
        if body and body in seen and len(same) < len(body):  # a pointer never costs more than the output
            body = same
        else:
            seen.setdefault(body, cmd)
        c.shown_commands.add(cmd)
        yield [c._call_block("working_set", call, _command_text(cmd, call, runs, body))]


def _files(c: _Cutter) -> Iterator[list[Any]]:
    for path, _score in W.rank_files(c.live.calls, c.files_of, c.task):
        blocks, more = _file_blocks(c, "working_set", path)
        if blocks:
            yield blocks + more


def block_chars(b: Any) -> int:
    """What a block costs in the slice: ``[label]``, a newline, its text, a newline (its label is
    counted as it is: with a cold store a label names the folded step too, ~100 characters)."""
    return len(b.label) + len(b.text.rstrip()) + 4


def working_set(c: _Cutter) -> list[Any]:
    """Files and commands in one run, each kind held to its share of the room (module doc)."""
    room = int(c.budget * SET_SHARE)
    # a kind with nothing to show runs out at once and leaves its share to the other
    share = min(1 - MIN_SHARE, max(MIN_SHARE, W.command_share(c.live.calls, c.files_of, c.command_of)))
    items = {"cmd": _commands(c), "file": _files(c)}
    shares = {"cmd": share, "file": 1 - share}
    spent = {"cmd": 0, "file": 0}
    out: list[Any] = []
    used = 0
    while used < room:
        live = [k for k, v in shares.items() if v > 0]
        if not live:
            break
        # the kind furthest below its share goes next
        k = min(live, key=lambda name: spent[name] / shares[name])
        item = next(items[k], None)
        if item is None:
            shares[k] = 0
            continue
        cost = sum(block_chars(b) for b in item)
        spent[k] += cost
        used += cost
        out += item
    return out
