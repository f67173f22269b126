"""Recall: which folded steps talk about a query, in coverage tiers with chronological labels.

Tiers: ``full`` (the step matches every query term) before ``partial``, then ``ranked`` (no
exact term, but SQLite FTS5 finds the query's words in the step's readable text). The full tier
is chronological, latest first (IPCF CONF-04: the current state of an entity that evolved leads);
within the others, steps holding more terms come first, then the better bm25 score, then the
newer step.
Stop words and words common in the store never count (cold/selective.py); a path cut short
matches the files it begins, a path's tail the files it ends. Labels: ``superseded``
(a newer step owns its intent), ``related`` (matched only through a prefix partner),
``historical`` (a newer step matches the same terms or more), otherwise ``latest``. Recall
costs no prompt tokens and pages in nothing.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from contextfork.cold import index as idx
from contextfork.cold.identifiers import prompt_terms
from contextfork.cold.layout import step_key


def recall(conn: sqlite3.Connection, query: str, limit: int = 10) -> dict[str, Any]:  # noqa: C901 - complexity 17, over the cap when it came (issue 27)
    from contextfork.cold.identifiers import path_suffixes, words
    from contextfork.cold.selection import asking_terms
    from contextfork.cold.selective import path_prefixes, prefix_terms

    asked = prompt_terms(query)
    # A path cut short (or named by its tail) means the files it begins or ends.
    prefixed: dict[str, list[str]] = {}
    for p in path_prefixes(query):
        if idx.postings_for(conn, [p]) or idx.postings_for(conn, path_suffixes(p)):
            continue
        found = prefix_terms(conn, p)
        if found:
            prefixed[p] = found
            parts = set(words(p))
            asked = [p] + [w for w in asked if w not in parts and not p.startswith(w)]
    filler = asking_terms(conn, asked, query) - set(prefixed)
    terms = [t for t in asked if t not in filler]
    exact: dict[int, int] = {}
    loose: dict[int, int] = {}
    for i, t in enumerate(terms):
        bit = 1 << i
        expanded = idx.expand_term(conn, t)
        held = idx.postings_for(conn, prefixed.get(t) or [t])
        if not held and "/" in t:
            held = idx.postings_for(conn, path_suffixes(t))
        for sid in held:
            exact[sid] = exact.get(sid, 0) | bit
        for sid in idx.postings_for(conn, expanded[1:]):
            loose[sid] = loose.get(sid, 0) | bit
    masks = {s: exact.get(s, 0) | loose.get(s, 0) for s in set(exact) | set(loose)}
    newest_by_mask: dict[int, int] = {}
    for s, m in masks.items():
        newest_by_mask[m] = max(newest_by_mask.get(m, 0), s)
    full = (1 << len(terms)) - 1
    scores = idx.bm25_ranked(conn, terms)
    for s in scores:
        masks.setdefault(s, 0)  # found by words only: the "ranked" tier
    worst = max(scores.values(), default=0.0) + 1.0

    def tier(s: int) -> int:
        return 0 if masks[s] == full and terms else (1 if masks[s] else 2)

    def order(s: int) -> tuple[int, int, float, int]:
        t = tier(s)
        if t == 0:  # CONF-04: the full tier is chronological, latest first
            return (t, 0, 0.0, -s)
        return (t, -masks[s].bit_count(), scores.get(s, worst), -s)

    ranked = sorted(masks, key=order)
    top = ranked[:limit]
    rows = idx.node_rows(conn, top)
    hits = []
    for s in top:
        m = masks[s]
        row = rows[s]
        if row["superseded_by"] is not None:
            label = "superseded"
        elif s not in exact:  # prefix partners or words only
            label = "related"
        elif any(nm & m == m and ns > s for nm, ns in newest_by_mask.items()):
            label = "historical"
        else:
            label = "latest"
        hits.append({
            "step_id": s,
            "step_key": step_key(s),
            "tier": ("full", "partial", "ranked")[tier(s)],
            "bm25": round(scores[s], 6) if s in scores else None,
            "coverage": round(m.bit_count() / len(terms), 4) if terms else 0.0,
            "label": label,
            "terms": [t for i, t in enumerate(terms) if m >> i & 1],
            "superseded_by": row["superseded_by"],
            "summary": row["summary"],
            "token_count": row["token_count"],
        })
    return {"query": query, "terms": terms, "filler_terms": sorted(filler), "matches": len(masks),
            "hits": hits}
