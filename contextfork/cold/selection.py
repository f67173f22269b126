"""Residual Greedy Set Cover (RGSC) over the prompt's terms, with budgets and intent ownership.

Repeatedly take the node that covers the most still-uncovered prompt terms (ties to the newest
step); stop when no node covers a remaining term. Nodes whose intent is owned by a newer node
are never taken (their terms are left to the owner). If the chosen node does not fit the
budget, its terms are *dropped* rather than handed to an older node: a tight budget yields
missing context, never stale context. Then one hop of explicit references ("re-applied after
the rollback in step 4") is followed for nodes that are not themselves superseded.

Picks stay in selection order — the node covering most uncovered terms first, then the nodes
that explain them — which is the order the reference reports ("hydrate Steps 342, 137, 447";
"hydrate" is IPCF's word for page-in) and the order the prompt hook injects them in.

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
    mode: str  # "content" | "window" | "summary"
    explains: int | None = None
    role: str = ""  # origin | change | mention (identifier picks)

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
        if self.role:
            out["role"] = self.role
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
# What one identifier's picks may take, by role: the origin, then the latest change, then the
# newest other mention (only what is left of the turn's budget, and only while it adds a step).
ROLE_ALLOWANCE = {"origin": 900, "read": 700, "change": 500, "mention": 350}
SMALL_STEP = 450  # a step this small comes back whole rather than as windows


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


def asking_terms(conn: sqlite3.Connection, terms: list[str], prompt: str = "") -> set[str]:
    """Stop words and plain words so common in this store that they select nothing (see
    cold/selective.py; ``prompt`` tells identifiers from plain words by how they were typed)."""
    from contextfork.cold.selective import common_words, identifier_forms

    return common_words(conn, terms, identifier_forms(prompt))


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


def _prefixed_paths(
    conn: sqlite3.Connection, prompt: str, postings: dict[str, set[int]], asked: list[str]
) -> dict[str, list[str]]:
    """Paths typed in the prompt that no step holds as written but that begin index terms (a
    path cut short, `lib/spotter_web/rou`): each becomes one term meaning those files. Their
    word parts stop being terms of their own."""
    from contextfork.cold.selective import path_prefixes, prefix_terms

    out: dict[str, list[str]] = {}
    for p in path_prefixes(prompt):
        if postings.get(p):
            continue
        found = prefix_terms(conn, p)
        if not found:
            continue
        postings[p] = idx.postings_for(conn, found)
        out[p] = found
        parts = set(words(p))
        for w in [w for w in asked if w in parts or (w in postings and not postings[w]
                                                      and "/" in w and p.startswith(w))]:
            asked.remove(w)
        asked.insert(0, p)
    return out


def select(  # noqa: C901 - complexity 24, over the cap when it came (issue 27)
    conn: sqlite3.Connection, prompt: str, budget: int, *, follow_refs: int = 1,
    preferred: frozenset[int] = frozenset(), peek: Any = None, live: Any = None,
) -> Selection:
    """Identifiers first (``_select_sources``: origin, latest change, mentions per term); a
    prompt of plain words only goes through RGSC. ``preferred`` (steps the agent pinned) wins a
    tie before the newest-step rule; it never overrides coverage, budgets or intent ownership.
    ``peek`` (an ``origin.Peek``) reads candidates for ranking; ``live`` (an ``origin.LiveView``)
    names what the harness already shows, which is never paged in."""
    from contextfork.cold.selective import identifier_forms, is_identifier

    asked = prompt_terms(prompt)
    postings, asked = _term_postings(conn, asked)
    prefixed = _prefixed_paths(conn, prompt, postings, asked)
    forms = identifier_forms(prompt) | set(prefixed)
    filler = asking_terms(conn, asked, prompt) - set(prefixed)
    terms = [t for t in asked if t not in filler]
    sel = Selection(terms=terms, budget=budget)
    sel.filler = sorted(filler)
    shown: set[int] = set()
    if peek is not None and live is not None:
        for t in terms:
            shown |= {sid for sid in postings[t] if live.shows(peek.node(sid))}
        for t in terms:
            postings[t] = postings[t] - shown
    idents = [t for t in terms if is_identifier(t, forms) and postings[t]]
    if idents and peek is not None:
        return _select_sources(conn, sel, idents, postings, prefixed, peek, preferred)
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


def _window_terms(node: dict[str, Any], forms: list[str]) -> list[str]:
    from contextfork.cold.identifiers import normalize

    text = normalize(str(node.get("readable") or node.get("content") or ""))
    return [f for f in forms if f in text] or forms


def _select_sources(  # noqa: C901 - complexity 16, over the cap when it came (issue 27)
    conn: sqlite3.Connection, sel: Selection, idents: list[str], postings: dict[str, set[int]],
    prefixed: dict[str, list[str]], peek: Any, preferred: frozenset[int],
) -> Selection:
    """For each identifier: its origin, then its latest change, then (when neither differs
    from the other, or there is room) its newest other mention — round by round across the
    prompt's identifiers, so every term gets its source before any term gets a second step."""
    from contextfork.cold.origin import rank
    from contextfork.cold.pagein import window_body

    plans: list[tuple[str, list[tuple[str, int]]]] = []
    for t in idents:
        order = rank(peek, sorted(postings[t]), prefixed.get(t) or [t])
        if not order:
            continue
        roles = [(r, sid) for r, sid in order if r != "mention"]
        mentions = [sid for r, sid in order if r == "mention"]
        pinned = [sid for sid in mentions if sid in preferred]
        if mentions and len(roles) < 2:  # the newest other mention (a pinned one first)
            roles.append(("mention", (pinned or mentions)[0]))
        plans.append((t, roles))
    left = sel.budget
    taken: dict[int, Pick] = {}
    for rnd in range(max((len(r) for _, r in plans), default=0)):
        for t, roles in plans:
            if rnd >= len(roles):
                continue
            role, sid = roles[rnd]
            if sid in taken:
                if t not in taken[sid].terms:
                    taken[sid].terms.append(t)
                continue
            node = peek.node(sid)
            row = idx.node_rows(conn, [sid]).get(sid)
            if node is None or row is None:
                continue
            allow = min(left, ROLE_ALLOWANCE[role] if rnd else max(ROLE_ALLOWANCE[role], left // max(1, len(plans))))
            allow = min(allow, WINDOW_MAX)
            if row["token_count"] <= min(left, max(allow, SMALL_STEP)):
                cost, mode = int(row["token_count"]), "content"
            elif allow >= WINDOW_MIN:
                wterms = _window_terms(node, prefixed.get(t) or [t])
                _, cost, n = window_body(node, wterms, allow)
                mode = "window"
                if not n:  # the term sits in the summary or the index text only
                    if not 0 < row["summary_token_count"] <= left:
                        continue
                    cost, mode = int(row["summary_token_count"]), "summary"
            else:
                sel.dropped.append({"step_id": sid, "terms": [t], "tokens": row["token_count"],
                                    "reason": "over_budget"})  # fmt: skip
                continue
            # a window's pick carries its allowance: rendering cuts the same window from it
            pick = Pick(sid, "covers", [t], allow if mode == "window" else cost, mode, role=role)
            taken[sid] = pick
            sel.picks.append(pick)
            left -= cost
    covered = {t for p in sel.picks for t in p.terms}
    sel.uncovered = [t for t in sel.terms if t not in covered]
    for p in sel.picks:  # a window covers every term it holds, in the words the index uses
        if p.mode == "window":
            node = peek.node(p.step_id)
            p.terms = sorted({f for t in p.terms for f in _window_terms(node, prefixed.get(t) or [t])})
    return sel

