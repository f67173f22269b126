"""The readable form of a step: what the model needs to see again, without transport metadata.

A Claude Code step's raw JSONL carries message ids, usage, cwd and permission fields; paging that
back in spent 2,254 characters to deliver a 57-character tool result. The readable form keeps the
assistant's words, each tool call (name and arguments) and each result's text, in a fixed layout,
so the same step always renders to the same bytes (it is hashed into the node). The raw bytes
stay in the node for byte-exact restore.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contextfork.transcript.model import Step

# A result longer than this is still kept whole: windows (cold/window.py) cut what is injected.
_ARG_INLINE = 200


def _args(tool_input: dict[str, object]) -> str:
    """One `key: value` per line; long or structured values as compact JSON."""
    lines: list[str] = []
    for key in sorted(tool_input):
        value = tool_input[key]
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
        if "\n" in text or len(text) > _ARG_INLINE:
            lines.append(f"  {key}:")
            lines.extend(f"    {line}" for line in text.splitlines())
        else:
            lines.append(f"  {key}: {text}")
    return "\n".join(lines)


def readable_step(step: Step) -> str:
    """Render one step's blocks; tool results are labelled with their call's tool name."""
    from contextfork.transcript.model import TextBlock, ThinkingBlock, ToolCall, ToolResult

    names = {b.id: b.name for b in step.blocks if isinstance(b, ToolCall)}
    parts: list[str] = []
    for block in step.blocks:
        if isinstance(block, TextBlock):
            if block.text.strip():
                parts.append(f"[{block.role}]\n{block.text.strip()}")
        elif isinstance(block, ThinkingBlock):
            continue  # private reasoning: not part of what the agent showed or did
        elif isinstance(block, ToolCall):
            args = _args(block.input)
            parts.append(f"[tool call: {block.name}]" + (f"\n{args}" if args else ""))
        elif isinstance(block, ToolResult):
            status = []
            if block.is_error:
                status.append("error")
            if block.exit_code is not None:
                status.append(f"exit {block.exit_code}")
            label = names.get(block.call_id, "tool")
            head = f"[tool result: {label}" + (f", {', '.join(status)}" if status else "") + "]"
            content = block.content  # read once: it may be read back from the transcript
            parts.append(f"{head}\n{content.rstrip()}" if content.strip() else head)
    return "\n\n".join(parts) + ("\n" if parts else "")
