"""Fidelity probes for a replay: terms the agent used after a native compaction that the
harness's summary dropped (``../shared/data/probes/``). A probe is recovered at the step that
used it when the term is visible as content in the prompt a policy rendered for that step.

Probes locate the use by the 0-based line of the session file; a step is found through the
byte offsets of its raw lines, so this works whatever the loader keeps of the history.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from pathlib import Path

from contextfork.transcript.model import Session


def line_starts(data: bytes) -> list[int]:
    starts = [0]
    pos = data.find(b"\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = data.find(b"\n", pos + 1)
    return starts


def probes_by_step(session: Session, transcript: Path, probes_file: Path) -> dict[int, list[str]]:
    """{step: [terms]} for the probes of this transcript (matched by file name)."""
    if not probes_file.is_file():
        return {}
    entries = json.loads(probes_file.read_text("utf-8"))
    mine = [e for e in entries if isinstance(e, dict) and e.get("session") == transcript.name]
    if not mine:
        return {}
    starts = line_starts(transcript.read_bytes())
    line_step: dict[int, int] = {}
    for st in session.steps:
        for raw in st.raw:
            line_step[bisect_right(starts, raw.offset) - 1] = st.index
    out: dict[int, list[str]] = {}
    for e in mine:
        step = line_step.get(int(e["used_at_line"]))
        if step is not None:
            out.setdefault(step, []).append(str(e["term"]))
    return out
