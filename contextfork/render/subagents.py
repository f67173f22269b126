"""``render``: a subagent's result shown as one folded, restorable unit.

Where the parent's agent call got a large result back from a subagent that SubagentStop folded
(``slice.units``: its whole transcript and its result, each re-verified), the rendered prompt
carries a stub naming those folds instead of the result; ``restore STEP`` still gives the step
back exactly from the render's own store, and ``fold show`` the subagent's bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextfork.forkstub import subagent_text
from contextfork.hashing import sha256_text
from contextfork.render.messages import Msg
from contextfork.transcript.model import Session, ToolResult

MIN_CHARS = 2_000  # as fork: a smaller result stays in place


def fold_subagents(messages: list[Msg], session: Session, root: Path | None) -> tuple[list[Msg], list[dict[str, Any]]]:
    """The messages with each large subagent result replaced by its unit stub, and what was
    replaced (step, call, chars, sha256, the unit)."""
    from contextfork.slice.units import stub_unit, units_by_call

    units = units_by_call(session, root)
    if not units:
        return messages, []
    steps = {s.index: s for s in session.steps}
    out: list[Msg] = []
    folded: list[dict[str, Any]] = []
    for m in messages:
        step = steps.get(m.step)
        block = step.blocks[m.block] if step is not None and m.kind == "output" and 0 <= m.block < len(step.blocks) else None
        unit = units.get(block.call_id) if isinstance(block, ToolResult) else None
        if unit is None or len(m.content) < MIN_CHARS:
            out.append(m)
            continue
        unit = stub_unit(unit, m.content)
        assert unit is not None and isinstance(block, ToolResult)
        sha = sha256_text(m.content)
        stub = (f"[contextfork: subagent result folded out of this prompt — step {m.step}, "
                f"{len(m.content):,} chars, sha256 {sha}.{subagent_text(unit)} `restore {m.step}` "
                "gives this step back exactly.]")  # fmt: skip
        out.append(Msg(m.role, stub, m.step, m.block, m.kind))
        folded.append({"step": m.step, "call_id": block.call_id, "chars": len(m.content), "sha256": sha,
                       "subagent": unit})  # fmt: skip
    return out, folded
