"""Token accounting for a loaded ``Session``: active context, breakdown, failures, files.

Recorded usage is the truth the user is billed for, so it comes first. Only without it do we
count with the o200k tokenizer (loaded lazily: ~0.2 s), and only if that fails do we estimate
(chars / 4). A counted figure adds the harness's overhead (system prompt + tool schemas, fitted
on the session's recorded usage) or says it excludes it. Every figure carries its source.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from contextfork.forkstub import STUB_PREFIX

if TYPE_CHECKING:
    from contextfork.transcript.model import Session, Step

CATEGORIES = ("system_prompt", "user_history", "assistant_history", "tool_outputs")
_EDIT_TOOLS = frozenset(
    {"edit", "write", "multiedit", "notebookedit", "apply_patch", "str_replace_based_edit_tool",
     "create", "str_replace", "insert"}
)
PATH_KEYS = ("file_path", "path", "notebook_path", "filename")
_PATCH_FILE_RE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)
_EXCERPT = 400


@dataclass
class Accounting:
    """The context footprint of a session: ``total`` is THE "context tokens" figure.

    Context tokens = what the next model call would be sent. Every command (status, statusline,
    fork, render, MCP get_context_status) reports this one figure with its ``source``:
    ``recorded`` — the prompt the harness recorded for the latest call of this session in the
    live window (input + cache creation + cache read); ``counted`` — no such call (a fresh fork,
    a transcript without usage): the live window's text counted with o200k; ``estimated`` — the
    same by chars/4 when the tokenizer is unavailable. Any other figure must be labelled as what
    it is (e.g. "history tokens (counted)").
    """

    total: int | None
    source: str  # recorded | counted | estimated | none
    breakdown: dict[str, int]
    breakdown_method: str
    scaled_to_recorded: bool
    last_output_tokens: int | None
    active_steps: list[Step] = field(default_factory=list)
    inherited_steps: int = 0  # leading steps a fork copied from the session it continues
    # The harness's system prompt + tool schemas, which no transcript shows. A recorded total
    # holds it; a counted one adds it when the session's recorded usage tells it (None: unknown,
    # and then the counted figure is messages only and says so).
    harness_overhead: int | None = None
    includes_harness_overhead: bool = False


def inherited_steps(session: Session) -> int:
    """How many leading steps were copied from another session by a fork.

    Forks (ours and Claude Code's ``--fork-session``) mark every copied line with
    ``forkedFrom``; the usage on those lines was recorded for the original, not for this session.
    """
    n = 0
    for step in session.steps:
        if not any(_forked_line(r.text) for r in step.raw):
            break
        n += 1
    return n


def folded_copy(session: Session, copied: int) -> bool:
    """Whether the copied steps were folded (``contextfork fork`` stubs), not copied verbatim."""
    return any(
        r.content.startswith(STUB_PREFIX) for s in session.steps[:copied] for r in s.tool_results
    )


def _forked_line(text: str) -> bool:
    if '"forkedFrom"' not in text:
        return False
    try:
        obj = json.loads(text)
    except ValueError:
        return False
    return isinstance(obj, dict) and isinstance(obj.get("forkedFrom"), dict)


def active_steps(session: Session) -> list[Step]:
    """The steps still in the prompt: those after the last real compaction, plus the segment
    the harness kept verbatim across it (Claude Code 2.1 preservedSegment)."""
    return session.live_steps()


def harness_overhead(session: Session, count: Callable[[str], int] | None = None) -> int | None:
    """What the harness adds to every call (system prompt + tool schemas), from recorded usage.

    A one-point fit on the session's first recorded model call (a fork's copied lines carry
    the original's): recorded input minus the messages counted up to that call. The first call
    has the least history, so the tokenizer's disagreement with the harness's own costs least
    there. None when the session recorded no usage (pi, a plain transcript).
    """
    first = next((s for s in session.steps if s.usage is not None and s.usage.context_tokens > 0
                  and s.model != "<synthetic>"), None)  # fmt: skip
    if first is None or first.usage is None:
        return None
    counter = count or _counter()[0]
    seen = sum(measure(session, [s for s in session.steps if s.index <= first.index], counter).values())
    return max(0, first.usage.context_tokens - seen)


def recorded_step(steps: list[Step]) -> Step | None:
    """The last model call with a real (non-zero, non-synthetic) recorded usage."""
    for s in reversed(steps):
        if s.usage is not None and s.usage.context_tokens > 0 and s.model != "<synthetic>":
            return s
    return None


def category_texts(session: Session, steps: list[Step]) -> Iterator[tuple[str, str]]:
    """Each text of ``steps`` with its category, one at a time: a tool output may be read back
    from the transcript (``ToolResult.in_file``), and holding them all was the whole file."""
    # lazy: hot path (``status``'s fast pass uses this module without the pydantic model)
    from contextfork.transcript.model import TextBlock, ThinkingBlock, ToolCall, ToolResult

    if session.system_prompt:
        yield "system_prompt", session.system_prompt
    for step in steps:
        for b in step.blocks:
            if isinstance(b, TextBlock):
                key = {"system": "system_prompt", "user": "user_history"}.get(b.role)
                yield key or "assistant_history", b.text
            elif isinstance(b, ThinkingBlock):
                yield "assistant_history", b.text
            elif isinstance(b, ToolCall):
                yield "assistant_history", b.name + json.dumps(b.input, ensure_ascii=False, default=str)
            elif isinstance(b, ToolResult):
                yield "tool_outputs", b.content


def measure(session: Session, steps: list[Step], size: Callable[[str], int]) -> dict[str, int]:
    """``size`` of every text of ``steps``, summed by category."""
    out = dict.fromkeys(CATEGORIES, 0)
    for category, text in category_texts(session, steps):
        out[category] += size(text)
    return out


def _estimate(text: str) -> int:
    return (len(text) + 3) // 4


def _counter() -> tuple[Callable[[str], int], str]:
    try:
        from contextfork.tokens import count_tokens

        count_tokens("probe")
        return count_tokens, "counted"
    except Exception:  # noqa: BLE001 - tokenizer missing or broken: fall back, labelled
        return _estimate, "estimated"


def account(session: Session) -> Accounting:
    """The one definition of a session's context tokens (see ``Accounting``)."""
    steps = active_steps(session)
    copied = inherited_steps(session)
    # A folded fork changed the window, so the usage it copied no longer describes it; a
    # verbatim copy (Claude Code's --fork-session) holds the same window and keeps it.
    own = [s for s in steps if s.index > copied] if folded_copy(session, copied) else steps
    rec = recorded_step(own)
    if rec is not None and rec.usage is not None:
        total = rec.usage.context_tokens
        est = measure(session, steps, _estimate)
        return Accounting(
            total=total, source="recorded", breakdown=scale_to(est, total),
            breakdown_method="chars-scaled-to-recorded", scaled_to_recorded=True,
            last_output_tokens=rec.usage.output_tokens, active_steps=steps,
            inherited_steps=copied, includes_harness_overhead=True,
        )
    if next(category_texts(session, steps), None) is None:  # no text at all: nothing to count
        return Accounting(
            None, "none", dict.fromkeys(CATEGORIES, 0), "none", False, None, steps, copied
        )
    count, how = _counter()
    counted = measure(session, steps, count)
    overhead = harness_overhead(session, count)
    if overhead is not None:  # the next call pays it too: the figure must include it
        counted["system_prompt"] += overhead
    return Accounting(
        total=sum(counted.values()), source=how, breakdown=counted, breakdown_method=how,
        scaled_to_recorded=False, last_output_tokens=None, active_steps=steps,
        inherited_steps=copied, harness_overhead=overhead,
        includes_harness_overhead=overhead is not None,
    )


def context_tokens(session: Session) -> dict[str, Any]:
    """``{"total", "source", "includes_harness_overhead"}`` of ``account`` — the form fork,
    render and records report. A total without the overhead is labelled so (``False``)."""
    acc = account(session)
    return {"total": acc.total, "source": acc.source,
            "includes_harness_overhead": acc.includes_harness_overhead}


def context_label(ctx: dict[str, Any]) -> str:
    """How a context figure was made, in words: what every command prints beside it."""
    src = ctx.get("source")
    if src == "recorded":
        return "recorded by the harness"
    if ctx.get("includes_harness_overhead"):
        return f"{src}, with the harness's system prompt and tools from its recorded usage"
    return f"{src}, messages only: excludes the harness's system prompt and tools"


def scale_to(estimates: dict[str, int], total: int) -> dict[str, int]:
    """Fit per-category estimates to the recorded total, summing to it exactly.

    The recorded prompt also holds what a transcript never shows (the harness's system prompt,
    tool definitions), so a shortfall is attributed to ``system_prompt``; an excess (history the
    harness no longer sends, estimate error) is scaled down proportionally.
    """
    history = sum(v for k, v in estimates.items() if k != "system_prompt")
    known = history + estimates.get("system_prompt", 0)
    if known <= total:
        out = dict(estimates)
        out["system_prompt"] = estimates.get("system_prompt", 0) + (total - known)
        return out
    raw = {k: v * total / known for k, v in estimates.items()}
    out = {k: int(v) for k, v in raw.items()}
    rest = total - sum(out.values())
    for k in sorted(raw, key=lambda k: raw[k] - out[k], reverse=True)[:rest]:
        out[k] += 1
    return out


# --- what the session did ------------------------------------------------------------------


def excerpt(text: str, limit: int = _EXCERPT) -> str:
    """Head and tail of a long output: the command echo and the final error both matter."""
    text = text.strip()
    if len(text) <= limit:
        return text
    head = limit * 3 // 8
    return text[:head].rstrip() + "\n…\n" + text[-(limit - head) :].lstrip()


def describe(name: str, inp: dict[str, Any]) -> str:
    """A tool call in one line: its command, else its path, pattern, url or query."""
    for key in ("command", "cmd"):
        v = inp.get(key)
        if isinstance(v, str):
            return v
        if isinstance(v, list) and all(isinstance(x, str) for x in v):
            return " ".join(v)
    for key in (*PATH_KEYS, "pattern", "url", "query"):
        v = inp.get(key)
        if isinstance(v, str):
            return f"{name} {v}"
    return f"{name} {json.dumps(inp, ensure_ascii=False, default=str)[:200]}"


def failed_commands(session: Session) -> list[dict[str, Any]]:
    """Tool results that failed (error flag or non-zero exit), with the call that caused them."""
    calls = {c.id: (c, s.index) for s in session.steps for c in s.tool_calls}
    out: list[dict[str, Any]] = []
    for step in session.steps:
        for r in step.tool_results:
            if not (r.is_error or (r.exit_code is not None and r.exit_code != 0)):
                continue
            call, call_step = calls.get(r.call_id, (None, step.index))
            out.append(failure(call_step, (call.name, call.input) if call else None, r.call_id,
                               r.exit_code, r.content))  # fmt: skip
    return out


def failure(
    step: int, call: tuple[str, dict[str, Any]] | None, call_id: str, exit_code: int | None,
    content: str,
) -> dict[str, Any]:
    """One failed tool result (``failed_commands``), with the call (name, input) behind it."""
    from contextfork.redact import redact_text  # scrubbed before cut: no half secret survives

    return {
        "step": step,
        "tool": call[0] if call else "unknown",
        "call_id": call_id,
        "command": redact_text(describe(*call) if call else "(unknown call)")[0],
        "exit_code": exit_code,
        "error_excerpt": excerpt(redact_text(content)[0]) or "(no output)",
    }


def _relative(path: str, cwd: str | None) -> str:
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


def touched_files(session: Session) -> tuple[list[str], list[str]]:
    """(every file a tool read or changed, the subset it changed), in first-touch order."""
    return touched_by(((c.name, c.input) for c in session.tool_calls), session.cwd)


def touched_by(
    calls: Iterable[tuple[str, dict[str, Any]]], cwd: str | None
) -> tuple[list[str], list[str]]:
    """``touched_files`` of tool calls given as (name, input), paths relative to ``cwd``."""
    touched: dict[str, None] = {}
    modified: dict[str, None] = {}
    for name, inp in calls:
        paths: list[str] = []
        for key in PATH_KEYS:
            v = inp.get(key)
            if isinstance(v, str) and v and "\n" not in v:
                paths.append(v)
        patch = inp.get("input") if name == "apply_patch" else None
        if isinstance(patch, str):
            paths.extend(m.strip() for m in _PATCH_FILE_RE.findall(patch))
        for p in paths:
            rel = _relative(p, cwd)
            touched.setdefault(rel, None)
            if name.lower() in _EDIT_TOOLS:
                modified.setdefault(rel, None)
    return list(touched), list(modified)


def user_requests(session: Session) -> list[tuple[int, str]]:
    """(step, text) of every request the user actually typed (harness-injected text excluded)."""
    out = []
    for step in session.steps:
        for b in step.user_texts:
            if not b.meta and b.text.strip():
                out.append((step.index, b.text.strip()))
    return out
