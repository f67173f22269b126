"""pi's live message array ↔ contextfork steps, and the rendered view back as an edit plan.

pi hands its ``context`` event the messages about to be sent (``user``, ``assistant`` with
text/thinking/toolCall parts, ``toolResult``, and its own kinds: ``bashExecution``, custom
messages, summaries). The renderer works on ``Step`` objects, so the worker turns the array into
steps with the same rules as the pi transcript loader (``contextfork.transcript.pi``): every
assistant message is one model call (one step); the non-assistant messages before it are its
lead; a ``toolResult`` joins the step whose call caused it. Every block remembers the index of
the message it came from.

The answer is not a new array but a *plan* over the original one: an int keeps message i as pi
sent it (tool-call ids, thinking signatures, images and all), ``{"r": i, "content": [...]}``
keeps message i with its text replaced (a dedupe stub), ``{"m": {...}}`` inserts a new user
message (a fold note). A step whose body the view folded loses its assistant message *and* its
tool results together, so tool_use/tool_result pairs stay valid by construction; ``check_plan``
proves it before anything is returned, and a plan that fails is never sent (pass-through).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contextfork.render.messages import Msg
from contextfork.transcript._content import flatten_text
from contextfork.transcript.model import Block, Step, TextBlock, ToolResult
from contextfork.transcript.pi import _assistant_blocks, bash_execution_text, tool_result

PlanItem = int | dict[str, Any]


def fingerprint(msg: Any) -> str:
    """What the extension and the worker compare to know they hold the same history: the role
    and pi's millisecond timestamp of a message (cheap, and unique in practice)."""
    if not isinstance(msg, dict):
        return "?"
    return f"{msg.get('role')}:{msg.get('timestamp')}"


def _lead_text(msg: dict[str, Any]) -> str:
    role = msg.get("role")
    if role == "bashExecution":
        return bash_execution_text(msg)
    if role in ("branchSummary", "compactionSummary"):
        return str(msg.get("summary") or flatten_text(msg.get("content")))
    return flatten_text(msg.get("content"))


@dataclass
class LiveSteps:
    """Steps built incrementally from the message array (only appended to while it grows)."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    fps: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    sources: list[list[int]] = field(default_factory=list)  # per step: block -> message index
    assistant_at: list[int] = field(default_factory=list)  # per step: its assistant message
    pending: list[tuple[Block, int]] = field(default_factory=list)

    def extend(self, new: list[Any]) -> None:
        for raw in new:
            msg = raw if isinstance(raw, dict) else {"role": "unknown", "content": str(raw)}
            i = len(self.messages)
            self.messages.append(msg)
            self.fps.append(fingerprint(msg))
            role = msg.get("role")
            if role == "assistant":
                blocks = [b for b, _ in self.pending]
                srcs = [m for _, m in self.pending]
                for b in _assistant_blocks(msg.get("content")):
                    blocks.append(b)
                    srcs.append(i)
                n = len(self.steps) + 1
                ts = msg.get("timestamp")
                key = f"pi:{fingerprint(self.messages[srcs[0]] if srcs else msg)}"
                self.steps.append(Step(index=n, key=key, blocks=blocks, model=(
                    msg.get("model") if isinstance(msg.get("model"), str) else None),
                    started_at=str(ts) if ts is not None else None))
                self.sources.append(srcs)
                self.assistant_at.append(i)
                self.pending = []
            elif role == "toolResult" and self.steps and not self.pending:
                step = self.steps[-1]
                step.blocks.append(tool_result(msg))
                self.sources[-1].append(i)
            else:
                self.pending.append((TextBlock(role="user", text=_lead_text(msg),
                                               meta=role != "user"), i))

    def open_step(self) -> Step | None:
        """The step being called now: its lead only (None when nothing is pending, i.e. the
        call continues after tool results)."""
        if not self.pending:
            return None
        first = self.messages[self.pending[0][1]]
        return Step(index=len(self.steps) + 1, key=f"pi:{fingerprint(first)}",
                    blocks=[b for b, _ in self.pending])

    def source(self, step: int, block: int) -> int:
        if step == len(self.steps) + 1:
            return self.pending[block][1]
        return self.sources[step - 1][block]


def _note_message(text: str, at: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}],
            "timestamp": at.get("timestamp", 0)}


PEEK_TOOL = "contextfork_context"


def ephemeral_peeks(live: LiveSteps, boundary: int) -> dict[int, tuple[int, str]]:
    """Peek answers the boundary has passed → (step, stub), by message index.

    A ``peek`` is ephemeral unless the agent asked to ``record`` it: the verified bytes are
    shown at the end of the prompt, and once the step falls behind the boundary (where the
    renderer rewrites anyway) its answer shrinks to its first line, the provenance header,
    which says how to get the bytes again. Deterministic from the history and the boundary."""
    out: dict[int, tuple[int, str]] = {}
    for s in range(1, min(boundary, len(live.steps)) + 1):
        step = live.steps[s - 1]
        peeks = {c.id for c in step.tool_calls
                 if c.name == PEEK_TOOL and c.input.get("verb") == "peek"
                 and c.input.get("record") is not True}
        if not peeks:
            continue
        for b, block in enumerate(step.blocks):
            if isinstance(block, ToolResult) and block.call_id in peeks and not block.is_error:
                head = block.content.split("\n", 1)[0][:300]
                out[live.source(s, b)] = (s, f"{head}\n[ephemeral peek: shown once at step "
                                             f"{s}; peek again to see the bytes]")
    return out


def build_plan(live: LiveSteps, view_msgs: list[Msg], folds: dict[str, tuple[int, ...]],
               extra: dict[int, str] | None = None) -> list[PlanItem]:
    """The rendered view as a plan over ``live.messages`` (see the module docstring);
    ``extra``: message index → replacement text (ephemeral peeks)."""
    shown: set[int] = set()
    replaced: dict[int, str] = dict(extra or {})
    notes: dict[int, str] = {}
    for m in view_msgs:
        if m.kind == "note":
            notes[m.step] = m.content
        elif m.kind in ("reply", "call", "output") and m.block >= 0:
            shown.add(m.step)
            if m.kind == "output":
                block = live.steps[m.step - 1].blocks[m.block]
                original = block.content if isinstance(block, ToolResult) else getattr(
                    block, "text", None)
                src = live.source(m.step, m.block)
                if m.content != original and src not in replaced:
                    replaced[src] = m.content
    folded = {s for steps in folds.values() for s in steps if s not in shown}
    body_of: dict[int, int] = {}
    for s, srcs in enumerate(live.sources, start=1):
        for b, mi in enumerate(srcs):
            block = live.steps[s - 1].blocks[b]
            if not isinstance(block, TextBlock) or block.role != "user":
                body_of[mi] = s
    step_of_assistant = {mi: s for s, mi in enumerate(live.assistant_at, start=1)}
    plan: list[PlanItem] = []
    for i, msg in enumerate(live.messages):
        first = step_of_assistant.get(i)
        if first is not None and first in notes:
            plan.append({"m": _note_message(notes[first], msg)})
        owner = body_of.get(i)
        if owner is not None and owner in folded:
            continue
        if i in replaced:
            plan.append({"r": i, "content": [{"type": "text", "text": replaced[i]}]})
        else:
            plan.append(i)
    return plan


def _call_ids(msg: dict[str, Any]) -> list[str]:
    content = msg.get("content")
    return [str(p.get("id") or "") for p in (content if isinstance(content, list) else [])
            if isinstance(p, dict) and p.get("type") == "toolCall"]


def check_plan(messages: list[dict[str, Any]], plan: list[PlanItem]) -> str | None:
    """None when the plan is safe to send; else why not (indices, order, tool pairs).

    Only damage the plan would do counts: a call pi itself left unanswered (an aborted turn)
    is pi's to repair, as it does for the unrendered array."""
    answered = {str(m.get("toolCallId") or "") for m in messages if m.get("role") == "toolResult"}
    called = {c for m in messages if m.get("role") == "assistant" for c in _call_ids(m)}
    last = -1
    open_calls: set[str] = set()
    for item in plan:
        idx = item if isinstance(item, int) else item.get("r")
        if idx is None:
            if open_calls:
                return "a note would split a tool call from its result"
            continue
        if not isinstance(idx, int) or not 0 <= idx < len(messages) or idx <= last:
            return f"plan index {idx!r} out of order or range"
        last = idx
        msg = messages[idx]
        role = msg.get("role")
        if role == "toolResult":
            cid = str(msg.get("toolCallId") or "")
            if cid in called and cid not in open_calls:
                return f"tool result {cid!r} without its call"
            open_calls.discard(cid)
            continue
        if open_calls and role == "assistant":
            return f"tool calls {sorted(open_calls)} without results"
        if role == "assistant":
            open_calls.update(c for c in _call_ids(msg) if c in answered)
    if open_calls:
        return f"tool calls {sorted(open_calls)} without results"
    return None


def apply_plan(messages: list[dict[str, Any]], plan: list[PlanItem]) -> list[dict[str, Any]]:
    """What the extension does with a plan (tests and the benchmark use this twin)."""
    out: list[dict[str, Any]] = []
    for item in plan:
        if isinstance(item, int):
            out.append(messages[item])
        elif "r" in item:
            out.append({**messages[int(item["r"])], "content": item["content"]})
        else:
            out.append(item["m"])
    return out


__all__ = ["LiveSteps", "apply_plan", "build_plan", "check_plan", "ephemeral_peeks",
           "fingerprint"]
