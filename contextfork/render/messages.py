"""The message array a renderer hands to a model, and the base (unedited) form of each step.

A step's messages are split into its *lead* (the user prompt blocks that come before the model
call, which belong to the prompt of that very step) and its *body* (the model's reply, its tool
calls and the tool results they caused). Operators only ever touch bodies: the user's own words
are never stubbed or folded. Thinking blocks are not re-sent (harnesses strip earlier thinking),
so they are not part of any prompt here; they stay in the unedited history and the cold store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from contextfork.transcript.model import (
    Session,
    Step,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
)

Role = Literal["system", "user", "assistant", "tool", "note"]
Kind = Literal["system", "prompt", "reply", "call", "output", "note", "reminder", "restored"]


@dataclass(frozen=True, slots=True)
class Msg:
    """One message of a rendered prompt; ``block`` is the index in ``Step.blocks`` (-1: none)."""

    role: Role
    content: str
    step: int
    block: int
    kind: Kind

    def to_chat(self) -> dict[str, str]:
        """OpenAI-style chat dict: notes and tool outputs travel as user text."""
        role = {"note": "user", "tool": "user"}.get(self.role, self.role)
        return {"role": role, "content": self.content}

    def to_json(self) -> dict[str, object]:
        return {
            "role": self.role,
            "kind": self.kind,
            "step": self.step,
            "block": self.block,
            "content": self.content,
        }


def call_text(call: ToolCall) -> str:
    """A tool call as one deterministic line of text (sorted keys, UTF-8 kept)."""
    args = json.dumps(call.input, ensure_ascii=False, sort_keys=True)
    return f"{call.name}({args})"


def _is_observation(step: Step, i: int) -> bool:
    """User text after the model has spoken in a step is an observation (mini-swe-agent style)."""
    return any(not isinstance(b, TextBlock) or b.role != "user" for b in step.blocks[:i])


def _said_in_reply(step: Step, i: int, call: ToolCall) -> bool:
    """Text-based harnesses (mini-swe-agent) parse the command out of the reply: send it once."""
    cmd = call.input.get("command")
    if not isinstance(cmd, str) or not cmd.strip():
        return False
    return any(
        isinstance(b, TextBlock) and b.role == "assistant" and cmd.strip() in b.text
        for b in step.blocks[:i]
    )


@dataclass(frozen=True, slots=True)
class StepMessages:
    """The base rendering of one step: ``lead`` joins the prompt of this step, ``body`` follows."""

    lead: tuple[Msg, ...]
    body: tuple[Msg, ...]


def step_messages(step: Step) -> StepMessages:
    lead: list[Msg] = []
    body: list[Msg] = []
    started = False
    for i, block in enumerate(step.blocks):
        s = step.index
        if isinstance(block, ThinkingBlock):
            continue
        if isinstance(block, TextBlock):
            if block.role == "user" and not started:
                lead.append(Msg("user", block.text, s, i, "prompt"))
                continue
            started = True
            if block.role == "assistant":
                body.append(Msg("assistant", block.text, s, i, "reply"))
            elif block.role == "system":
                body.append(Msg("system", block.text, s, i, "prompt"))
            elif _is_observation(step, i):
                body.append(Msg("tool", block.text, s, i, "output"))
            else:  # pragma: no cover - unreachable: user text before any reply is lead
                body.append(Msg("user", block.text, s, i, "prompt"))
        elif isinstance(block, ToolCall):
            started = True
            if not _said_in_reply(step, i, block):
                body.append(Msg("assistant", call_text(block), s, i, "call"))
        elif isinstance(block, ToolResult):
            started = True
            body.append(Msg("tool", block.content, s, i, "output"))
    return StepMessages(tuple(lead), tuple(body))


def system_messages(session: Session) -> tuple[Msg, ...]:
    if session.system_prompt:
        return (Msg("system", session.system_prompt, 0, -1, "system"),)
    return ()


def original_step_text(sm: StepMessages) -> str:
    """The canonical original of a step's body: what ``restore STEP`` gives back, byte for byte."""
    return "".join(f"[{m.role}:{m.kind}]\n{m.content}\n" for m in sm.body)


def reply_text(step: Step) -> str:
    """What the agent itself wrote at a step: its text and its tool calls' arguments."""
    parts: list[str] = []
    for b in step.blocks:
        if isinstance(b, TextBlock) and b.role == "assistant":
            parts.append(b.text)
        elif isinstance(b, ToolCall):
            parts.append(call_text(b))
    return "\n".join(parts)


def observation_text(sm: StepMessages) -> str:
    return "\n".join(m.content for m in sm.body if m.kind == "output")
