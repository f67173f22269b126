from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contextfork.cold.api import fold_session
from tests.helpers import Repo
from tests.transcript.builders import CC, text, tool_use, write_jsonl

SESSION = "s1"


def synthetic_records(steps: int = 6, lines: int = 40) -> list[dict[str, Any]]:
    """A Claude Code session: one prompt, then ``steps`` tool calls with distinct outputs."""
    cc = CC(session_id=SESSION)
    recs: list[dict[str, Any]] = [cc.user("port the service to the new database")]
    for i in range(1, steps + 1):
        recs.append(cc.assistant(f"m{i}", [text(f"checking part {i}"),
                                           tool_use(f"t{i}", "Bash", command=f"cat part{i}.txt")]))
        body = "\n".join(f"part {i} line {n}: value_{i}_{n} = {i * n}" for n in range(lines))
        recs.append(cc.result(f"t{i}", body))
    recs.append(cc.assistant("mend", [text("done: every part checked")]))
    return recs


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "t" / f"{SESSION}.jsonl", synthetic_records())


@pytest.fixture
def folded(repo: Repo, transcript: Path) -> Path:
    """A repo whose cold store holds every step of the synthetic session under session s1."""
    fold_session(transcript, repo=repo.path, session=SESSION)
    return repo.path
