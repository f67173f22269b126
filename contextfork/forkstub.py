"""The stub ``contextfork fork`` puts where it folded a tool result out of a forked session.

One definition for the writer (``harness.fork``) and its readers (the status line's scan and the
accounting, which must not count copied usage as the fork's, and the inspector). Stdlib only:
the status line imports it on every refresh.
"""

from __future__ import annotations

from typing import Any

STUB_PREFIX = "[contextfork: tool result folded out of this fork"
STUB_PREFIX_BYTES = STUB_PREFIX.encode("utf-8")


def subagent_text(unit: dict[str, Any]) -> str:
    """The sentence of a stub whose result came from a subagent folded as one unit."""
    who = f"subagent {unit['agent_id']}" + (f" ({unit['agent_type']})" if unit.get("agent_type") else "")
    result = unit.get("result")
    said = (f" its result: `contextfork fold show {result['step']} --session {result['session']}`;"
            if result else "")  # fmt: skip
    return (f" It is what {who} gave back, folded as one unit:{said} its whole run: "
            f"`contextfork fold show {unit['unit_step']} --session {unit['unit_session']}`.")


def stub_text(step: int, text: str, sha: str, session: str, brief: str | None = None,
              subagent: dict[str, Any] | None = None) -> str:  # fmt: skip
    """The whole stub: where the exact bytes are and how to read them back, and the agent's own
    brief of the step when it wrote one (``contextfork context brief``): what it chose to keep
    of a result is what the fork should see first. A subagent's result names the subagent's
    own folds too (``slice.units``)."""
    said = f" The agent's brief of this step: {brief.strip()}" if brief and brief.strip() else ""
    said += subagent_text(subagent) if subagent else ""
    return (
        f"{STUB_PREFIX} — step {step}, {len(text):,} chars, sha256 {sha}.{said} "
        f"The exact bytes are in the cold store of session {session}: read them back with "
        f"`contextfork fold show {step} --session {session}` (SHA-256 verified; the MCP tool "
        "peek_fold pages it in slices); prompts that name its details page it in automatically.]"
    )
