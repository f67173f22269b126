"""The stub ``contextfork fork`` puts where it folded a tool result out of a forked session.

One definition for the writer (``harness.fork``) and its readers (the status line's scan and the
accounting, which must not count copied usage as the fork's, and the inspector). Stdlib only:
the status line imports it on every refresh.
"""

from __future__ import annotations

STUB_PREFIX = "[contextfork: tool result folded out of this fork"
STUB_PREFIX_BYTES = STUB_PREFIX.encode("utf-8")


def stub_text(step: int, text: str, sha: str, session: str) -> str:
    """The whole stub: where the exact bytes are and how to read them back."""
    return (
        f"{STUB_PREFIX} — step {step}, {len(text):,} chars, sha256 {sha}. "
        f"The exact bytes are in the cold store of session {session}: read them back with "
        f"`contextfork fold show {step} --session {session}` (SHA-256 verified; the MCP tool "
        "peek_fold pages it in slices); prompts that name its details page it in automatically.]"
    )
