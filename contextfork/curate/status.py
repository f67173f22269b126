"""``status``: the fold index of a session with every decision on it.

From the cold store alone it lists every stored step (id, stable key, tokens page-in would
inject, summary) with its pin, expand and brief. Given the session's ``transcript`` it also
renders the history (the same renderer as ``render``/``replay``, honouring the decisions) and
reports the folds that view holds — note id, step range, keys, tokens folded away, the brief
shown — and how many epochs were committed. Deterministic: same history + decisions, same data.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contextfork.cold.decisions import Decisions
from contextfork.curate.index import FoldIndex
from contextfork.errors import UsageError

POLICIES = ("epoch", "refold")


def store_steps(index: FoldIndex, d: Decisions) -> list[dict[str, Any]]:
    out = []
    for e in index.entries:
        brief = d.brief_covering(e.key)
        out.append({
            "step": e.step_id, "key": e.key, "tokens": e.tokens, "summary": e.summary,
            "pinned": e.key in d.pinned, "expanded": e.key in d.expanded,
            "brief": brief.key if brief else None,
        })
    return out


def live_folds(index: FoldIndex, d: Decisions, args: Mapping[str, object]) -> dict[str, Any]:
    """Render the transcript at its next step and describe the folds of that view."""
    from contextfork.inputfile import require_regular
    from contextfork.render.api import render
    from contextfork.render.messages import original_step_text, step_messages
    from contextfork.render.policies import policy
    from contextfork.tokens import estimate_tokens
    from contextfork.transcript import load_session

    path = args["transcript"]
    if not isinstance(path, str) or not path:
        raise UsageError("status: transcript must be a path")
    name = args.get("policy", "epoch")
    if name not in POLICIES:
        raise UsageError(f"status: policy must be one of {', '.join(POLICIES)}, got {name!r}")
    k = args.get("k", 3)
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise UsageError(f"status: k must be a positive integer, got {k!r}")
    session = load_session(require_regular(Path(path), "transcript"))
    if not session.steps:
        raise UsageError(f"status: {path} has no steps")
    t = max(s.index for s in session.steps) + 1
    view = render(session, t, policy(str(name), k=k), d)
    by_pos = {s.index: s for s in session.steps}
    ids = {e.key: e.step_id for e in index.entries}
    folds = []
    for fid, steps in view.folds.items():
        keys = [by_pos[s].identity for s in steps]
        brief = next((d.brief_covering(k_) for k_ in keys if d.brief_covering(k_)), None)
        folded = sum(estimate_tokens(original_step_text(step_messages(by_pos[s]))) for s in steps)
        folds.append({"id": fid, "positions": [steps[0], steps[-1]], "keys": keys,
                      "steps": [ids.get(k_) for k_ in keys], "estimated_tokens": folded,
                      "brief": brief.key if brief else None})
    return {"policy": name, "k": k, "at_step": t, "boundary": view.boundary,
            "epochs": view.epochs, "folds": folds,
            "estimated_tokens": sum(estimate_tokens(m.content) for m in view.messages),
            "stubs": sum(r.kind == "stub" for r in view.removals)}
