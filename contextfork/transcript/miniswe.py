"""mini-swe-agent ``.traj.json`` (``messages`` list + ``info.model_stats``) → ``Session``.

mini-swe-agent has no tool-call objects: the model writes exactly one fenced ``bash`` block and
the environment answers with ``<returncode>``/``<output>``. We turn that pair into a
``ToolCall``/``ToolResult`` so every format looks the same downstream; a reply with zero or
several blocks is a format error and the environment's complaint is the next step's prompt.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from contextfork.errors import UsageError
from contextfork.transcript._content import flatten_text
from contextfork.transcript._jsonspan import document
from contextfork.transcript._steps import StepBuilder, int_field
from contextfork.transcript.model import (
    Block,
    RawLine,
    Session,
    TextBlock,
    ToolCall,
    ToolResult,
    Usage,
)

ACTION_RE = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
_RC_RE = re.compile(r"^\s*<returncode>(-?\d+)</returncode>")


def _actions(text: str) -> list[str]:
    """``ACTION_RE.findall(text)``, searched only up to the last closing fence: a block opened
    after it cannot close, and each such opening rescanned the rest of the text (quadratic
    on many unclosed blocks)."""
    last = text.rfind("\n```")
    return ACTION_RE.findall(text, 0, last + 4) if last >= 0 else []


def content_text(content: Any) -> str:
    return flatten_text(content, kinds=None, markers={}, coerce=True)


def _usage(extra: Any) -> tuple[Usage | None, str | None]:
    if not isinstance(extra, dict):
        return None, None
    resp = extra.get("response")
    if not isinstance(resp, dict):
        return None, None
    model = resp.get("model") if isinstance(resp.get("model"), str) else None
    u = resp.get("usage")
    if not isinstance(u, dict):
        return None, model
    details = u.get("prompt_tokens_details")
    cached = int_field(details, "cached_tokens") if isinstance(details, dict) else 0
    prompt = int_field(u, "prompt_tokens", "input_tokens")
    return (
        Usage(
            input_tokens=max(prompt - cached, 0),
            cache_read_input_tokens=cached,
            output_tokens=int_field(u, "completion_tokens", "output_tokens"),
        ),
        model,
    )


def load(path: Path) -> Session:
    whole, elements = document(path, "messages")
    if not isinstance(whole, dict) or not isinstance(whole.get("messages"), list):
        raise UsageError(f"{path}: no 'messages' list: not a mini-swe-agent trajectory")
    b = StepBuilder()
    system: str | None = None
    open_call: str | None = None
    malformed = 0
    for n, el in enumerate(elements):
        msg = el.value
        raw = RawLine(offset=el.offset, text=el.text)
        b.note_id(raw, f"msg:{n}")  # the file is rewritten whole: its message index is stable
        if not isinstance(msg, dict):
            malformed += 1
            b.other(raw, None)
            continue
        role = msg.get("role")
        text = content_text(msg.get("content"))
        if role == "system" and system is None and not b.steps:
            system = text
            b.prompt(raw, None, [])
        elif role == "assistant":
            actions = _actions(text)
            blocks: list[Block] = [TextBlock(role="assistant", text=text)]
            open_call = None
            if len(actions) == 1:
                open_call = f"step-{len(b.steps) + 1}"
                blocks.append(ToolCall(id=open_call, name="bash", input={"command": actions[0]}))
            usage, model = _usage(msg.get("extra"))
            b.output(raw, None, blocks, new_call=True, usage=usage, model=model)
        elif role in ("user", "tool") and open_call is not None:
            m = _RC_RE.match(text)
            code = int(m.group(1)) if m else None
            timed_out = "timed out" in text[:300] and code is None
            b.result(
                raw, None,
                ToolResult(
                    call_id=open_call, content=text, exit_code=code,
                    is_error=timed_out or (code is not None and code != 0),
                ),
            )
            open_call = None
        else:
            meta = role not in ("user",) or len(b.steps) > 0
            b.prompt(raw, None, [TextBlock(role="user", text=text, meta=meta)] if text else [])
    steps = b.finish()
    model = next((s.model for s in reversed(steps) if s.model), None)
    info = whole.get("info")
    if model is None and isinstance(info, dict):
        cfg = info.get("config")
        if isinstance(cfg, dict) and isinstance(cfg.get("model"), dict):
            name = cfg["model"].get("model_name")
            model = name if isinstance(name, str) else None
    instance = whole.get("instance_id")
    return Session(
        format="mini-swe-agent", session_id=instance if isinstance(instance, str) else path.stem,
        path=str(path), system_prompt=system, steps=steps, compactions=b.compactions,
        malformed_lines=malformed, model=model,
    )
