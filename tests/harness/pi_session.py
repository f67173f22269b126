"""A scripted pi message array (pi's own message shapes) for the worker's tests and the bench.

Each turn: the agent runs a tool (``bash``) whose output is a distinct listing, sometimes a
re-read of an earlier one (dedupe material); every few turns the user speaks. Deterministic.
"""

from __future__ import annotations

from typing import Any


def listing(n: int, lines: int = 40) -> str:
    return "".join(f"src/module_{n}/file_{i}.py: def handler_{n}_{i}(request): return {i * n}\n"
                   for i in range(lines))


def pi_messages(turns: int, *, lines: int = 40, start_ms: int = 1_700_000_000_000
                ) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    ts = start_ms

    def tick() -> int:
        nonlocal ts
        ts += 1000
        return ts

    out.append({"role": "user", "content": [{"type": "text", "text": "Refactor the handlers."}],
                "timestamp": tick()})
    for n in range(1, turns + 1):
        cid = f"toolu_{n:04d}"
        shown = n - 3 if n % 4 == 0 and n > 3 else n  # every 4th turn re-reads an old listing
        out.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Step {n}: listing module {shown}."},
            {"type": "toolCall", "id": cid, "name": "bash",
             "arguments": {"command": f"grep -rn handler src/module_{shown}"}}],
            "api": "anthropic-messages", "provider": "mock", "model": "mock-sonnet",
            "usage": {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0},
            "stopReason": "toolUse", "timestamp": tick()})
        out.append({"role": "toolResult", "toolCallId": cid, "toolName": "bash",
                    "content": [{"type": "text", "text": listing(shown, lines)}],
                    "isError": False, "timestamp": tick()})
        if n % 7 == 0:
            out.append({"role": "user", "content": f"Keep going after step {n}.",
                        "timestamp": tick()})
    return out


def calls(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """What pi's context event carries at each model call: the array before each assistant
    message, and the whole array for the next call."""
    out = [messages[:i] for i, m in enumerate(messages) if m["role"] == "assistant"]
    out.append(list(messages))
    return out
