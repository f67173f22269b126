"""Which lines of a Claude Code transcript are the live conversation: one walk for both readers.

The file is an append-only tree, not a list: every line names its ``parentUuid``. Rewinds leave
abandoned branches behind, compaction starts a new root (linked back by ``logicalParentUuid``),
parallel tool calls hang their results off different siblings, and one API response is written
as several lines sharing ``message.id``. So we walk back from the newest leaf, then pull in the
siblings that belong to the same responses.

The full reader (``transcript.claude_tree``, over each line's skeleton) and ``status``'s lean
pass (``telemetry.ccsteps``, over ``ccline.Line``) read lines differently; both hand them here
as ``Node``s plus what an assistant or user line links to, so the two cannot drift apart
(tests/telemetry/test_status_fast.py pins their reports equal).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

__all__ = ["Node", "Nodes", "live", "preserved"]

LEAF = frozenset({"user", "assistant", "system"})


class Node(Protocol):
    """A line's structure, each a string or None: ``kind`` (its ``type``), ``uuid``,
    ``parent_uuid`` (``parentUuid``) and ``parent`` (``parentUuid``, else ``logicalParentUuid``).
    A value of another type never reaches the walk: it would be looked up in a set."""

    @property
    def kind(self) -> str | None: ...
    @property
    def uuid(self) -> str | None: ...
    @property
    def parent(self) -> str | None: ...
    @property
    def parent_uuid(self) -> str | None: ...


class Nodes(Protocol):
    """The lines, by index: a list of ``Node``s, or a view that makes each when asked."""

    def __len__(self) -> int: ...
    def __getitem__(self, i: int, /) -> Node: ...


def live(
    nodes: Nodes, *, boundary: Callable[[int], bool], message_id: Callable[[int], Any],
    calls: Callable[[int], Iterable[str]], results: Callable[[int], list[str]],
) -> list[int]:
    """Indexes of the live conversation's lines in file order. Called back for a line ``i``:
    ``boundary`` (a system line: is it a compaction boundary?), ``message_id`` (an assistant
    line's ``message.id``), ``calls`` (its tool call ids), ``results`` (a user line's tool
    result ids)."""
    by_uuid, assistants, users, attachments = _index(nodes)
    leaf = next((i for i in range(len(nodes) - 1, -1, -1)
                 if nodes[i].kind in LEAF and isinstance(nodes[i].uuid, str)), None)  # fmt: skip
    if leaf is None:
        return []
    chain: set[int] = set()
    cur: int | None = leaf
    while cur is not None and cur not in chain:
        chain.add(cur)
        cur = _parent_index(nodes, cur, by_uuid, chain, boundary)
    msg_ids = {message_id(i) for i in chain if nodes[i].kind == "assistant"}
    msg_ids.discard(None)
    included = set(chain)
    for i in assistants:
        if i not in included and message_id(i) in msg_ids:
            included.add(i)
    call_ids: set[str] = set()
    for i in included:
        if nodes[i].kind == "assistant":
            call_ids.update(calls(i))
    for i in users:
        if i in included:
            continue
        got = results(i)
        if got and all(r in call_ids for r in got):
            included.add(i)
    # Claude Code 2.1 hangs ``attachment`` lines (environment, date, deferred tools …) off the
    # conversation like messages; one that ends a branch is still part of the conversation.
    kept = {nodes[i].uuid for i in included}
    for i in attachments:
        n = nodes[i]
        if i not in included and n.parent_uuid in kept:
            included.add(i)
            kept.add(n.uuid)
    return sorted(included)


def _index(nodes: Nodes) -> tuple[dict[str, int], list[int], list[int], list[int]]:
    """(the index of each uuid, the assistant, user and attachment lines), in one pass."""
    by_uuid: dict[str, int] = {}
    assistants: list[int] = []
    users: list[int] = []
    attachments: list[int] = []
    for i in range(len(nodes)):
        n = nodes[i]
        u = n.uuid
        if isinstance(u, str):
            by_uuid[u] = i
        kind = n.kind
        if kind == "assistant":
            assistants.append(i)
        elif kind == "user":
            users.append(i)
        elif kind == "attachment":
            attachments.append(i)
    return by_uuid, assistants, users, attachments


def _parent_index(
    nodes: Nodes, cur: int, by_uuid: dict[str, int], chain: set[int],
    boundary: Callable[[int], bool],
) -> int | None:
    """The line before ``nodes[cur]`` in the logical history: ``parentUuid``, else (a compaction
    boundary) ``logicalParentUuid``. Claude Code does not promise the line either names is in
    the file (``logicalParentUuid`` often is not), so when the link is missing the history
    continues in file order: the nearest earlier message."""
    n = nodes[cur]
    parent = n.parent
    if parent is not None and parent in by_uuid:
        return by_uuid[parent]
    if parent is None and not (n.kind == "system" and boundary(cur)):
        return None  # a real root: the session's first line
    for i in range(cur - 1, -1, -1):
        if i not in chain and nodes[i].kind in LEAF and isinstance(nodes[i].uuid, str):
            return i
    return None


def preserved(parents: dict[str, Any], tail: Any, head: Any, listed: Any) -> set[str]:
    """The uuids Claude Code keeps verbatim across a compaction (2.1 ``preservedSegment``):
    ``parentUuid`` (``parents``) walked from ``tail`` back to ``head``, as Claude Code does on
    resume; the uuids a boundary lists (``listed``, some versions write it) when the walk
    breaks, else none."""
    seen: list[str] = []
    cur = tail
    while isinstance(cur, str) and cur in parents and cur not in seen:
        seen.append(cur)
        if cur == head:
            return set(seen)
        cur = parents[cur]
    return {u for u in listed if isinstance(u, str)} if isinstance(listed, list) else set()
