"""Recall: which folded steps talk about a query, in coverage tiers with chronological labels.

Tiers: ``full`` (the step matches every query term) before ``partial``. Labels: ``superseded``
(a newer step owns its intent), ``related`` (matched only through a prefix partner),
``historical`` (a newer step matches the same terms or more), otherwise ``latest``. Recall
costs no prompt tokens and hydrates nothing.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from contextfork.cold import index as idx
from contextfork.cold.identifiers import prompt_terms
from contextfork.cold.layout import step_key


def recall(conn: sqlite3.Connection, query: str, limit: int = 10) -> dict[str, Any]:
    terms = prompt_terms(query)
    exact: dict[int, int] = {}
    loose: dict[int, int] = {}
    for i, t in enumerate(terms):
        bit = 1 << i
        expanded = idx.expand_term(conn, t)
        for sid in idx.postings_for(conn, [t]):
            exact[sid] = exact.get(sid, 0) | bit
        for sid in idx.postings_for(conn, expanded[1:]):
            loose[sid] = loose.get(sid, 0) | bit
    masks = {s: exact.get(s, 0) | loose.get(s, 0) for s in set(exact) | set(loose)}
    newest_by_mask: dict[int, int] = {}
    for s, m in masks.items():
        newest_by_mask[m] = max(newest_by_mask.get(m, 0), s)
    full = (1 << len(terms)) - 1
    ranked = sorted(masks, key=lambda s: (masks[s] != full, -masks[s].bit_count(), -s))
    top = ranked[:limit]
    rows = idx.node_rows(conn, top)
    hits = []
    for s in top:
        m = masks[s]
        row = rows[s]
        if row["superseded_by"] is not None:
            label = "superseded"
        elif s not in exact:
            label = "related"
        elif any(nm & m == m and ns > s for nm, ns in newest_by_mask.items()):
            label = "historical"
        else:
            label = "latest"
        hits.append({
            "step_id": s,
            "step_key": step_key(s),
            "tier": "full" if m == full else "partial",
            "coverage": round(m.bit_count() / len(terms), 4) if terms else 0.0,
            "label": label,
            "terms": [t for i, t in enumerate(terms) if m >> i & 1],
            "superseded_by": row["superseded_by"],
            "summary": row["summary"],
            "token_count": row["token_count"],
        })
    return {"query": query, "terms": terms, "matches": len(masks), "hits": hits}
