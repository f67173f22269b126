"""A deterministic, model-free brief of one transcript step, plus its index text and intents.

The brief says what the step did (first line of the assistant's text), which tools it called
(name + the argument that matters), the head and tail of each result, and its errors. Intents
are derived from what a step touches so newer steps supersede older ones on the same subject:
``file:<path>`` for file tools and ``cmd:<command>`` for shell commands.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextfork.transcript.model import Step

HEAD = 160
TAIL = 120
_PATH_KEYS = ("file_path", "path", "notebook_path", "filename")
_CMD_KEYS = ("command", "cmd")


def _one_line(text: str, limit: int) -> str:
    """Flattened and cut to ``limit``; secrets are scrubbed first, so a cut never leaves part of
    one behind (a key cut mid-way no longer matches its rule)."""
    from contextfork.redact import redact_text

    flat = " ".join(redact_text(text)[0].split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _tool_arg(inp: dict[str, Any]) -> tuple[str, str | None, str | None]:
    for k in _PATH_KEYS:
        if isinstance(inp.get(k), str):
            return str(inp[k]), str(inp[k]), None
    for k in _CMD_KEYS:
        v = inp.get(k)
        if isinstance(v, list):
            v = " ".join(str(x) for x in v)
        if isinstance(v, str):
            return v, None, v
    for k in ("pattern", "query", "url", "description", "prompt"):
        if isinstance(inp.get(k), str):
            return str(inp[k]), None, None
    return json.dumps(inp, sort_keys=True, ensure_ascii=False), None, None


def brief(step: Step, label: int | None = None) -> tuple[str, str, list[str], tuple[str, ...]]:
    """(summary, index_text, intents, commands) for one step; ``label`` is the number the
    summary names it by (its cold store id; the transcript position by default)."""
    parts: list[str] = []
    index: list[str] = []
    intents: set[str] = set()
    commands: list[str] = []
    texts = [b.text for b in step.blocks if b.type == "text" and b.text.strip()]
    said = next((t for t in texts if t.strip()), "")
    if said:
        parts.append(_one_line(said, HEAD))
    for block in step.blocks:
        if block.type in ("text", "thinking"):
            index.append(block.text)
        elif block.type == "tool_call":
            arg, path, cmd = _tool_arg(block.input)
            parts.append(f"tool {block.name}({_one_line(arg, 100)})")
            index.append(f"{block.name} {json.dumps(block.input, sort_keys=True, ensure_ascii=False)}")
            if path:
                intents.add(f"file:{path}")
            if cmd:
                intents.add(f"cmd:{' '.join(cmd.split())[:200]}")
                commands.append(cmd)
        elif block.type == "tool_result":
            content = block.content
            index.append(content)
            flag = "error" if block.is_error else "result"
            lines = [ln for ln in content.splitlines() if ln.strip()]
            if lines:
                head = _one_line(lines[0], TAIL)
                tail = _one_line(lines[-1], TAIL) if len(lines) > 1 else ""
                parts.append(f"{flag} ({len(lines)} lines): {head}" + (f" … {tail}" if tail else ""))
            else:
                parts.append(f"{flag}: (empty)")
    if not parts:
        parts.append("(no content)")
    summary = f"Step {step.index if label is None else label}: " + "; ".join(parts)
    return summary, "\n".join(index), sorted(intents), tuple(commands)
