"""Where every removal can be restored from: removal records plus a verified content source.

A renderer never stores bytes itself: it records (step, block, line range, sha256) for each
removal. A ``StepSource`` hands back the original text of a step, either straight from the
unedited history (``SessionSource``: in-process rendering and replay) or from the cold store
(``contextfork.render.coldsource.ColdSource``: what the CLI and the mini-swe-agent class
answer ``restore``/``peek`` from); restore and peek compare SHA-256 before anything is shown,
so a tampered store is an error, never a silent lie.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from contextfork.errors import IntegrityError, NotFoundError
from contextfork.hashing import sha256_bytes
from contextfork.render.messages import StepMessages, original_step_text, step_messages
from contextfork.transcript.model import Session


@dataclass(frozen=True, slots=True)
class Removal:
    """One span taken out of the prompt. ``block``/lines are None for a whole-step fold."""

    kind: Literal["stub", "fold"]
    step: int
    block: int | None
    line_start: int | None
    line_end: int | None
    sha256: str
    nbytes: int
    fold_id: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "step": self.step,
            "block": self.block,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "sha256": self.sha256,
            "bytes": self.nbytes,
            "fold_id": self.fold_id,
            "restore": f"restore {self.step}",
        }


class StepSource(Protocol):
    """The original text of steps, as it was before any operator ran."""

    def step_text(self, step: int) -> str: ...

    def block_text(self, step: int, block: int) -> str: ...

    def redactions(self, step: int) -> int:
        """Secret spans scrubbed from the stored copy of a step (0: it is byte-exact)."""
        ...


class SessionSource:
    """Originals read from the unedited history in memory (the renderer's own input)."""

    def __init__(self, session: Session) -> None:
        self._steps = {s.index: s for s in session.steps}
        self._cache: dict[int, StepMessages] = {}

    def _sm(self, step: int) -> StepMessages:
        if step not in self._cache:
            if step not in self._steps:
                raise NotFoundError(f"step {step} is not in this session")
            self._cache[step] = step_messages(self._steps[step])
        return self._cache[step]

    def step_text(self, step: int) -> str:
        return original_step_text(self._sm(step))

    def block_text(self, step: int, block: int) -> str:
        for m in self._sm(step).body:
            if m.block == block:
                return m.content
        raise NotFoundError(f"step {step} has no block {block}")

    def redactions(self, step: int) -> int:
        return 0


def removal_bytes(removal: Removal, source: StepSource) -> bytes:
    """The exact removed bytes, SHA-256 verified against the record made at render time."""
    if removal.block is None:
        data = source.step_text(removal.step).encode("utf-8")
    else:
        text = source.block_text(removal.step, removal.block)
        lines = text.splitlines(keepends=True)
        a = (removal.line_start or 1) - 1
        b = removal.line_end or len(lines)
        data = "".join(lines[a:b]).encode("utf-8")
    got = sha256_bytes(data)
    if got != removal.sha256:
        raise IntegrityError(
            f"removal of step {removal.step} does not verify: sha256 {got[:12]}… "
            f"!= recorded {removal.sha256[:12]}…",
            hint="the store or transcript changed since rendering",
        )
    return data
