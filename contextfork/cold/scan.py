"""Residual Greedy Set Cover (RGSC) over the prompt's terms, with budgets and intent ownership.

Repeatedly take the node that covers the most still-uncovered prompt terms (ties to the newest
step); stop when no node covers a remaining term. Nodes whose intent is owned by a newer node
are never taken (their terms are left to the owner). If the chosen node does not fit the
budget, its terms are *dropped* rather than handed to an older node: a tight budget yields
missing context, never stale context. Then one hop of explicit references ("re-applied after
the rollback in step 4") is followed for nodes that are not themselves superseded.

Picks stay in selection order — the node covering most uncovered terms first, then the nodes
that explain them — which is the order the reference reports ("hydrate Steps 342, 137, 447")
and the order the prompt hook injects them in.

Steps are grouped by the exact set of prompt terms they cover (a bitmask), so each greedy round
costs O(distinct masks), not O(candidate nodes).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from contextfork.cold import index as idx
from contextfork.cold.identifiers import path_suffixes, prompt_terms, words


@dataclass
class Pick:
    step_id: int
    reason: str  # "covers" | "explains"
    terms: list[str]
    tokens: int
    mode: str  # "content" | "summary"
    explains: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step_id": self.step_id,
            "reason": self.reason,
            "terms": self.terms,
            "tokens": self.tokens,
            "mode": self.mode,
        }
        if self.explains is not None:
            out["explains"] = self.explains
        return out


@dataclass
class Selection:
    terms: list[str]
    picks: list[Pick] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    skipped_superseded: list[dict[str, int]] = field(default_factory=list)
    uncovered: list[str] = field(default_factory=list)
    budget: int = 0
    filler: list[str] = field(default_factory=list)  # prompt words that select nothing

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.picks)


WINDOW_MIN = 120  # tokens: below this a window cannot hold a line and its context
WINDOW_MAX = 1200  # tokens one window pick may take, so one big node leaves room for others
# Words that ask rather than name: they never select a step ("What did we find earlier…").
QUERY_FILLER = frozenset(
    [
        "find",
        "found",
        "finding",
        "earlier",
        "previously",
        "remember",
        "recall",
        "recalled",
        "know",
        "knew",
        "tell",
        "show",
        "shown",
        "look",
        "looked",
        "looking",
        "check",
        "checked",
        "mention",
        "mentioned",
        "said",
        "say",
        "saw",
        "seen",
        "see",
        "learn",
        "learned",
        "discover",
        "discovered",
        "happened",
        "happen",
        "again",
        "thing",
        "things",
        "stuff",
        "something",
        "anything",
        "detail",
        "details",
        "info",
        "information",
        "result",
        "results",
        "output",
        "issue",
        "problem",
        "question",
        "answer",
        "want",
        "need",
        "get",
        "got",
        "make",
        "made",
        "work",
        "works",
        "worked",
        "like",
        "just",
        "still",
        "well",
        "back",
        "going",
        "now",
        "next",
        "first",
        "last",
        "let",
        "lets",
        "okay",
        "sure",
        "right",
        "think",
        "thought",
    ]
)
COMMON_SHARE = 0.2  # a plain word in more than this share of the nodes names nothing


def _cost(row: dict[str, Any], left: int) -> tuple[int, str] | None:
    """Content when it fits; else a window around the matched terms (verified slices of the
    node); else the node's own summary; else nothing. A window beats a summary: the summary of
    a 7k-token tool output rarely holds the line the prompt asks about."""
    if row["token_count"] <= left:
        return int(row["token_count"]), "content"
    if left >= WINDOW_MIN:
        return min(left, WINDOW_MAX), "window"
    if 0 < row["summary_token_count"] <= left:
        return int(row["summary_token_count"]), "summary"
    return None


def _plain_word(term: str) -> bool:
    return term.isalpha()


def asking_terms(conn: sqlite3.Connection, terms: list[str]) -> set[str]:
    """Filler words, and plain words so common in this store that they select nothing."""
    out = {t for t in terms if t in QUERY_FILLER}
    total = idx.node_count(conn)
    if total >= 20:
        limit = max(5, int(total * COMMON_SHARE))
        for t in terms:
            if _plain_word(t) and t not in out:
                row = conn.execute("SELECT df FROM terms WHERE term=?", (t,)).fetchone()
                if row is not None and int(row[0]) > limit:
                    out.add(t)
    return out


def _term_postings(
    conn: sqlite3.Connection, asked: list[str]
) -> tuple[dict[str, set[int]], list[str]]:
    """Steps per prompt term. A path matches exactly first; only when no step holds it as
    written do its shorter forms count (`lib/x.ex` for `/home/u/app/lib/x.ex`); a path nobody
    holds in any form falls back to its words (a truncated or mistyped name still finds its
    step)."""
    out: dict[str, set[int]] = {}
    order: list[str] = []
    for t in asked:
        found = idx.postings_for(conn, idx.expand_term(conn, t))
        if not found and "/" in t:
            found = idx.postings_for(conn, path_suffixes(t))
        if not found and "/" in t:
            for w in words(t):
                if w not in out:
                    out[w] = idx.postings_for(conn, idx.expand_term(conn, w))
                    order.append(w)
            continue
        if t not in out:
            out[t] = found
            order.append(t)
    return out, order


def select(
    conn: sqlite3.Connection, prompt: str, budget: int, *, follow_refs: int = 1,
    preferred: frozenset[int] = frozenset(),
) -> Selection:
    """RGSC. ``preferred`` (steps the agent pinned) wins a tie on covered terms before the
    newest-step rule; it never overrides coverage, budgets or intent ownership."""
    postings, asked = _term_postings(conn, prompt_terms(prompt))
    filler = asking_terms(conn, asked)
    terms = [t for t in asked if t not in filler]
    sel = Selection(terms=terms, budget=budget)
    sel.filler = sorted(filler)
    bit_of = {t: 1 << i for i, t in enumerate(terms)}
    masks: dict[int, int] = {}
    for t in terms:
        for sid in postings[t]:
            masks[sid] = masks.get(sid, 0) | bit_of[t]
    # A newer step owns a superseded one's intent, but only for the terms it also holds: a
    # term found only in the older step (a read the newer one lacks) still selects it.
    for sid, row in idx.node_rows(conn, list(masks)).items():
        if row["superseded_by"] is not None:
            owner = int(row["superseded_by"])
            masks[sid] &= ~masks.get(owner, 0)
            if not masks[sid]:
                del masks[sid]
                sel.skipped_superseded.append({"step_id": sid, "superseded_by": owner})
    groups: dict[int, list[int]] = {}
    for sid, m in masks.items():
        groups.setdefault(m, []).append(sid)
    for steps in groups.values():
        steps.sort(key=lambda s: (s in preferred, s))  # pop() yields pinned, then newest
    uncovered = (1 << len(terms)) - 1
    left = budget
    taken: set[int] = set()

    def names(mask: int) -> list[str]:
        return [t for t in terms if mask & bit_of[t]]

    while uncovered:
        best: tuple[int, bool, int, int] | None = None  # (count, pinned, step, mask)
        for m, steps in groups.items():
            if not steps:
                continue
            c = (m & uncovered).bit_count()
            top = steps[-1]
            if c and (best is None or (c, top in preferred, top) > best[:3]):
                best = (c, top in preferred, top, m)
        if best is None:
            break
        _, _, sid, m = best
        groups[m].pop()
        row = idx.node_rows(conn, [sid])[sid]
        covered = m & uncovered
        cost = _cost(row, left)
        if cost is None:
            sel.dropped.append(
                {
                    "step_id": sid,
                    "terms": names(covered),
                    "tokens": row["token_count"],
                    "reason": "over_budget",
                }
            )
            uncovered &= ~covered
            continue
        sel.picks.append(Pick(sid, "covers", names(covered), cost[0], cost[1]))
        taken.add(sid)
        left -= cost[0]
        uncovered &= ~covered
    sel.uncovered = names(uncovered)
    if follow_refs:
        for pick in list(sel.picks):
            refs = idx.node_rows(conn, [pick.step_id])[pick.step_id]["refs"]
            rows = idx.node_rows(conn, refs)
            for ref in sorted(rows, reverse=True):
                row = rows[ref]
                if ref in taken or row["superseded_by"] is not None:
                    continue
                cost = _cost(row, left)
                if cost is None:
                    sel.dropped.append(
                        {
                            "step_id": ref,
                            "terms": [],
                            "tokens": row["token_count"],
                            "reason": "over_budget",
                            "explains": pick.step_id,
                        }
                    )
                    continue
                sel.picks.append(Pick(ref, "explains", [], cost[0], cost[1], explains=pick.step_id))
                taken.add(ref)
                left -= cost[0]
    return sel  # in selection order (RGSC's), as IPCF reports and injects them
