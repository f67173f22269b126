"""The fold index of a session as the cold store knows it: steps, their stable keys, tokens.

Verbs name steps by their cold step id (``step``/``steps``) or their stable key (``key``);
this module turns either into the stable keys decisions are stored under, and refuses a step
the store does not hold (``NotFoundError``) so a decision never points at nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from contextfork.cold import index as idx
from contextfork.cold import stepkeys
from contextfork.cold.layout import StoreLayout, check_session_id
from contextfork.errors import NotFoundError


@dataclass(frozen=True)
class StepEntry:
    step_id: int
    key: str
    tokens: int
    summary: str


@dataclass(frozen=True)
class FoldIndex:
    """The current (newest) version of every keyed step in the store, in step order."""

    layout: StoreLayout
    entries: tuple[StepEntry, ...]

    def by_id(self, step_id: int) -> StepEntry:
        return self._find(lambda e: e.step_id == step_id, f"step {step_id}")

    def by_key(self, key: str) -> StepEntry:
        return self._find(lambda e: e.key == key, f"step key {key!r}")

    def _find(self, match: Callable[[StepEntry], bool], what: str) -> StepEntry:
        found = next((e for e in self.entries if match(e)), None)
        if found is None:
            raise NotFoundError(
                f"{what} is not in the cold store of session {self.layout.session_id!r}",
                hint="list the steps with `contextfork context status`",
            )
        return found

    def span(self, first: int, last: int) -> list[StepEntry]:
        """Every stored step from ``first`` to ``last`` (both must exist)."""
        self.by_id(first)
        self.by_id(last)
        return [e for e in self.entries if first <= e.step_id <= last]


def open_index(root: Path, session: str) -> FoldIndex:
    """Read the store's index (no node file is read: status stays cheap on long sessions).
    ``root`` is the repository's root (``run_verb`` resolves it once)."""
    from contextfork.layout import state_path

    layout = StoreLayout(state_path(Path(root), "cold"), check_session_id(session))
    layout.ensure_contained()
    if not layout.sqlite.exists():
        raise NotFoundError(
            f"no cold store for session {session!r} under {layout.root}",
            hint="fold the session first: `contextfork fold session --transcript P`",
        )
    with idx.opened(layout) as conn:
        stepkeys.ensure(conn)
        keys = {int(r[0]): r[1] for r in conn.execute("SELECT step_id, key FROM step_keys")}
        rows = idx.node_rows(conn, idx.all_steps(conn))
    newest: dict[str, int] = {}
    for sid in sorted(rows):
        newest[str(keys.get(sid) or f"index:{sid}")] = sid
    # An older version of a step that grew is left out: its newest version stands for it.
    # (``superseded_by`` in the index is IPCF's intent ownership, not versions: not used here.)
    entries = [StepEntry(sid, key, int(rows[sid]["token_count"]), str(rows[sid]["summary"]))
               for key, sid in sorted(newest.items(), key=lambda kv: kv[1])]
    return FoldIndex(layout, tuple(entries))
