"""Page-in: verified bytes back into the prompt, within the per-call and per-turn caps.

Every paged-in node is re-read and re-verified (all three SHA-256 identities) at the moment it
is paged in; token costs come from the counts cached in the index at fold time, so a page-in
by prompt never loads the tokenizer. Only an explicit page-in of one step (``fold hydrate``, the
IPCF name) of a node larger than the remaining budget
needs the tokenizer, to cut the content on a token boundary (``truncated: true``).
"""

from __future__ import annotations

from typing import Any

from contextfork.cold.evict import load_turn, save_turn
from contextfork.cold.layout import StoreLayout
from contextfork.cold.store import read_node
from contextfork.errors import CheckFailed


class BudgetExhausted(CheckFailed):
    """The turn's page-in budget is spent; evicting does not refund what was injected."""


def render_block(node: dict[str, Any], body: str, mode: str, *, truncated: bool = False) -> str:
    attrs = (
        f'step="{node["step_id"]}" payload_sha256="{node["payload_sha256"]}" mode="{mode}"'
        + (' truncated="true"' if truncated else "")
    )
    return f"<cold-step {attrs}>\n{body}\n</cold-step>\n"


def readable_of(node: dict[str, Any]) -> str:
    """What page-in shows of a node: its readable form (tool, arguments, result text, the
    assistant's words) where the fold recorded one, else the stored content."""
    readable = node.get("readable")
    return str(readable) if isinstance(readable, str) and readable else str(node["content"])


def body_of(node: dict[str, Any], mode: str) -> str:
    if mode == "summary":
        return str(node["summary"])
    return readable_of(node)


BYTES_PER_TOKEN = 3  # conservative for code and logs (o200k averages ~4 on prose)


def window_body(node: dict[str, Any], terms: list[str], tokens: int) -> tuple[str, int, int]:
    """Verified windows of the node's readable text around ``terms``, within ``tokens``.

    Returns (body, estimated tokens, windows). Each window names its byte offset, length and
    SHA-256 within the readable text, so it can be checked against the verified node.
    """
    from contextfork.cold.window import find_windows

    text = readable_of(node)
    budget = max(1, tokens) * BYTES_PER_TOKEN
    parts: list[str] = []
    used = 0
    # Room for the window's header line too, so one clipped window always fits the budget.
    head_room = 160 + sum(len(t.encode()) + 2 for t in terms)
    for w in find_windows(text, terms, context=3, max_bytes=max(200, min(budget - head_room, 4000))):
        head = (f"[window: bytes {w.offset}+{w.length} of the readable form, sha256 {w.sha256}, "
                f"terms {', '.join(w.terms)}]\n")  # fmt: skip
        cost = len(head.encode()) + w.length
        if used + cost > budget:
            continue
        parts.append(head + w.text.rstrip("\n"))
        used += cost
    if not parts:
        return "", 0, 0
    return "\n…\n".join(parts), (used + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN, len(parts)


def record(state: dict[str, Any], step_id: int, tokens: int, mode: str) -> None:
    state["hydrated"].append({"step_id": step_id, "tokens": tokens, "mode": mode, "call": state["calls"]})
    state["tokens_used"] = int(state["tokens_used"]) + tokens


def page_in_one(layout: StoreLayout, policy: dict[str, Any], step_id: int) -> dict[str, Any]:
    """Page one step into the current turn (caller holds the store lock)."""
    node = read_node(layout, step_id)
    state = load_turn(layout)
    # Already whole in this turn's prompt: paging it in again costs nothing more (a summary or
    # a window of it earlier in the turn does not make the whole step free).
    again = any(int(h["step_id"]) == step_id and h.get("mode") == "content"
                for h in state["hydrated"])  # fmt: skip
    per_call = int(policy["per_call_token_cap"])
    left_turn = int(policy["per_turn_token_cap"]) - int(state["tokens_used"])
    allowed = min(per_call, left_turn)
    if allowed <= 0 and not again:
        raise BudgetExhausted(
            f"turn {state['turn']} has used its {policy['per_turn_token_cap']}-token page-in budget",
            hint="the next prompt's page-in (`fold scan`) starts a new turn; use `fold show` for a zero-cost developer view",
        )
    content = readable_of(node)
    tokens = int(node.get("readable_token_count", node["token_count"]))
    truncated = False
    if tokens > allowed and not again:
        from contextfork.tokens import count_tokens, truncate_to_tokens

        content = truncate_to_tokens(content, allowed)
        tokens = count_tokens(content)
        truncated = True
    state["calls"] = int(state["calls"]) + 1
    if not again:
        record(state, step_id, tokens, "content")
    save_turn(layout, state)
    return {
        "step_id": step_id,
        "turn": state["turn"],
        "payload_sha256": node["payload_sha256"],
        "verified": True,
        "content_encoding": node["content_encoding"],
        "tokens": tokens,
        "total_tokens": node["token_count"],
        "truncated": truncated,
        "turn_tokens_used": state["tokens_used"],
        "turn_tokens_left": int(policy["per_turn_token_cap"]) - int(state["tokens_used"]),
        "superseded_by": None,
        "content": content,
        "block": render_block(node, content, "content", truncated=truncated),
    }
