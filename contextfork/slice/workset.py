"""The parent's working set: the files and commands its recent steps (and the task) point at.

A subagent handed part of the parent's work re-reads the files the parent was working on and
re-runs its check commands. What was worked on is read off the calls alone: each call on a file
or each run of a command counts, weighted by how recent it is (a call ``age`` calls before the
newest weighs ``DECAY ** age``), and a file or command the delegated task names comes first.
For each file the freshest content the parent saw is carried (its newest Read result or the
content it wrote, then the edits made after that); for each command, the tail of its newest
output (where test runners and compilers put their verdict). Stdlib only: SubagentStart runs it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePosixPath

from contextfork.slice.live import AGENT_TOOLS, Call

DECAY = 0.98  # per call, for files
DECAY_COMMANDS = 0.99  # a check the parent keeps re-running stays in the set longer
TASK_BOOST = 100.0  # a file or command the task text names outranks any amount of past work
READ_TOOLS = ("Read", "NotebookRead")
CHECK_BOOST = 2.0  # a check (test run, build, linter, a script run) is what a subagent runs again
CHECK_CMD = re.compile(
    r"\b(pytest|py\.test|unittest|tox|nox|jest|vitest|mocha|go test|cargo test|mix test|"
    r"npm (run )?(test|check|build|lint)|pnpm (run )?test|yarn test|make( check| test)?|rspec|phpunit|ctest|"
    r"mix (compile|credo)|cargo (build|check|clippy)|tsc|ruff|mypy|eslint|python \S+\.py)\b"
)
_WORD = re.compile(r"[A-Za-z0-9_./-]{3,}")

FilesOf = Callable[[Call], list[str]]
CommandOf = Callable[[Call], "str | None"]


def _norm(cmd: str) -> str:
    return " ".join(cmd.split())


def _named_in(task: str, path: str) -> bool:
    """Whether the task text names this file: its path, or its file name as a word."""
    if not task:
        return False
    if path in task:
        return True
    name = PurePosixPath(path).name
    return len(name) >= 4 and name in set(_WORD.findall(task))


def rank_files(calls: list[Call], files_of: FilesOf, task: str) -> list[tuple[str, float]]:
    """Files by recency-weighted attention, the ones the task names first."""
    score: dict[str, float] = {}
    newest = len(calls) - 1
    for call in calls:
        if call.name in AGENT_TOOLS:
            continue
        for f in files_of(call):
            score[f] = score.get(f, 0.0) + DECAY ** (newest - call.order)
    for f in score:
        if _named_in(task, f):
            score[f] += TASK_BOOST
    return sorted(score.items(), key=lambda kv: -kv[1])


def rank_commands(calls: list[Call], command_of: CommandOf, task: str) -> list[tuple[str, Call, int]]:
    """Distinct shell commands by recency-weighted runs: (command, its newest run, runs)."""
    score: dict[str, float] = {}
    newest_run: dict[str, Call] = {}
    runs: dict[str, int] = {}
    newest = len(calls) - 1
    for call in calls:
        cmd = command_of(call)
        if cmd is None:
            continue
        key = _norm(cmd)
        score[key] = score.get(key, 0.0) + DECAY_COMMANDS ** (newest - call.order)
        newest_run[key] = call
        runs[key] = runs.get(key, 0) + 1
    for key in score:
        if CHECK_CMD.search(key):
            score[key] *= CHECK_BOOST
        if task and key in _norm(task):
            score[key] += TASK_BOOST
    order = sorted(score, key=lambda k: -score[k])
    return [(k, newest_run[k], runs[k]) for k in order]


SHARE_WINDOW = 40  # the parent's newest file and shell calls that set the commands' share


def command_share(calls: list[Call], files_of: FilesOf, command_of: CommandOf) -> float:
    """The share of shell calls among the parent's newest file and shell calls (0.5: none)."""
    cmds = files = 0
    for call in reversed(calls):
        if command_of(call) is not None:
            cmds += 1
        elif call.name not in AGENT_TOOLS and files_of(call):
            files += 1
        else:
            continue
        if cmds + files >= SHARE_WINDOW:
            break
    return cmds / (cmds + files) if cmds + files else 0.5


def content_call(calls: list[Call], path: str, files_of: FilesOf) -> tuple[Call | None, list[Call]]:
    """The newest call that shows the file's content (a Read that succeeded, or a Write), and
    the edits made to it after that call, oldest first."""
    edits: list[Call] = []
    for call in reversed(calls):
        if path not in files_of(call) or call.is_error:
            continue
        if call.name in READ_TOOLS and call.result.strip():
            return call, edits[::-1]
        if call.name == "Write" and isinstance(call.input.get("content"), str):
            return call, edits[::-1]
        if call.name in ("Edit", "MultiEdit"):
            edits.append(call)
    return None, edits[::-1]


def other_ranges(calls: list[Call], path: str, files_of: FilesOf, shown: Call, most: int) -> list[Call]:
    """Newest first, the parent's successful reads of other parts of the file (another offset)
    than ``shown``: a subagent often goes back to the region the parent looked at."""
    def where(call: Call) -> tuple[object, object]:
        return call.input.get("offset"), call.input.get("limit")

    seen = {where(shown)}
    out: list[Call] = []
    for call in reversed(calls):
        if len(out) >= most:
            break
        ok = call.name in READ_TOOLS and not call.is_error and call.result.strip()
        if ok and path in files_of(call) and where(call) not in seen:
            seen.add(where(call))
            out.append(call)
    return out


_LINE_NO = re.compile(r"^ *\d+(→|\t)", re.M)


def shown_content(call: Call, limit: int) -> str:
    """What the call shows of the file: the Read result without its line-number prefixes (the
    head names the range; ~7 characters a line kept for content), or the content written."""
    text = _LINE_NO.sub("", call.result) if call.name in READ_TOOLS else str(call.input.get("content", ""))
    return excerpt_head(text, limit)


def edit_text(call: Call, limit: int) -> str:
    """The new text an Edit/MultiEdit put in (what a re-read of the file now shows)."""
    parts = [str(call.input.get("new_string", ""))]
    for e in call.input.get("edits") or [] if isinstance(call.input.get("edits"), list) else []:
        if isinstance(e, dict):
            parts.append(str(e.get("new_string", "")))
    return excerpt_head("\n".join(p for p in parts if p), limit)


def excerpt_head(text: str, limit: int) -> str:
    text = text.strip("\n")
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit - 30)
    cut = cut if cut > limit // 2 else limit - 30
    return text[:cut] + f"\n…(+{len(text) - cut} chars)"


def head_tail(text: str, head: int, tail: int, limit: int) -> str:
    """An output's first non-blank lines (its status and what it started on: a traceback's
    first frame) and its last ones (the verdict), at most ``limit`` characters, the lines
    between them counted."""
    rows = [ln[:200] for ln in text.strip("\n").splitlines() if ln.strip()]
    if len(rows) <= head + tail and sum(len(r) + 1 for r in rows) <= limit:
        return "\n".join(rows)
    top, end = rows[:head], rows[head:][-tail:]
    while end and sum(len(r) + 1 for r in top + end) > limit:
        end = end[1:]  # the verdict's last lines are kept longest
        if not end and len(top) > 1:
            top, end = top[:1], rows[-1:]
    skipped = len(rows) - len(top) - len(end)
    return "\n".join([*top, f"…({skipped} lines)…", *end] if skipped else [*top, *end])


def excerpt_tail(text: str, limit: int) -> str:
    """The end of an output (a test run's or compiler's verdict), with its first line."""
    text = text.strip("\n")
    if len(text) <= limit:
        return text
    first = text.split("\n", 1)[0][:120]
    room = max(0, limit - len(first) - 30)
    tail = text[len(text) - room :]
    nl = tail.find("\n")
    tail = tail[nl + 1 :] if 0 <= nl < len(tail) // 2 else tail
    return f"{first}\n…({len(text) - len(first) - len(tail)} chars)…\n{tail}"
