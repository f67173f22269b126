"""Small sessions built straight from the model, so each operator is tested on its own."""

from __future__ import annotations

from contextfork.transcript.model import (
    Compaction,
    Session,
    Step,
    TextBlock,
    ToolCall,
    ToolResult,
)


def step(index: int, reply: str, command: str | None = None, output: str | None = None,
         prompt: str | None = None) -> Step:
    blocks: list[TextBlock | ToolCall | ToolResult] = []
    if prompt is not None:
        blocks.append(TextBlock(role="user", text=prompt))
    blocks.append(TextBlock(role="assistant", text=reply))
    if command is not None:
        blocks.append(ToolCall(id=f"c{index}", name="bash", input={"command": command}))
        blocks.append(ToolResult(call_id=f"c{index}", content=output or ""))
    return Step(index=index, blocks=blocks)


def session(steps: list[Step], *, system: str = "You are a coding agent.",
            compactions: list[int] | None = None) -> Session:
    return Session(
        format="openai-chat", session_id="test", system_prompt=system, steps=steps,
        compactions=[Compaction(before_step=c) for c in compactions or []],
    )


def file_view(name: str, start: int, end: int) -> str:
    """A numbered file view with top-level definitions every 10 lines, like `cat -n`."""
    out = []
    for n in range(start, end + 1):
        if n % 10 == 1:
            body = f"def {name}_func_{n}(arg_{n}):"
        else:
            body = f"    value_{n} = compute_{name}(arg, {n})  # line {n} of {name}.py"
        out.append(f"{n:6}\t{body}")
    return "\n".join(out) + "\n"


def long_session(n: int = 30, *, out_lines: int = 60) -> Session:
    """n steps, each viewing a window of the same file (overlapping ranges repeat lines)."""
    steps = [step(1, "Looking around.", "ls", "src/\nREADME.md\n", prompt="Fix the bug in mod.py")]
    for i in range(2, n + 1):
        a = 1 + (i % 5) * 20
        steps.append(step(i, f"Reading mod.py part {i}.", f"cat -n mod.py | sed -n {a},{a + out_lines}p",
                          file_view("mod", a, a + out_lines)))
    return session(steps)
