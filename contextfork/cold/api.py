"""The cold store's Python API: what the CLI, the hooks, the MCP server and the renderer call.

Every function takes where the store is (``repo``/``session`` or an explicit ``store_dir``)
and returns a ``contextfork.envelope.Result`` with plain JSON-able ``data``. ``scan`` and
``hydrate`` import neither pydantic nor the tokenizer (token counts are cached at fold time).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextfork.cold import index as idx
from contextfork.cold import stepkeys
from contextfork.cold.evict import begin_turn, evict_one, load_turn, save_turn
from contextfork.cold.hydrate import body_of, hydrate_one, record, render_block
from contextfork.cold.layout import (
    StoreLayout,
    check_step_id,
    default_session,
    layout_at,
    layout_for,
    policy_sha256,
    store_lock,
)
from contextfork.cold.store import fold_node, load_policy, read_node
from contextfork.envelope import Result
from contextfork.errors import NotFoundError, UsageError
from contextfork.inputfile import require_regular


def open_layout(
    repo: Path | None = None, session: str | None = None, store_dir: Path | None = None
) -> StoreLayout:
    """Resolve the store: an explicit directory, else ``<git root>/.contextfork/cold/<session>``."""
    if store_dir is not None:
        return layout_at(store_dir)
    return layout_for(repo, default_session(session))


def _existing(repo: Path | None, session: str | None, store_dir: Path | None) -> StoreLayout:
    """``open_layout`` for commands that read a store: NotFoundError when there is none yet."""
    layout = open_layout(repo, session, store_dir)
    layout.ensure_contained()
    if not layout.dir.is_dir():
        raise NotFoundError(
            f"no cold store for session {layout.session_id!r} at {layout.dir}",
            hint="fold something first: `contextfork fold add STEP SUMMARY`",
        )
    return layout


def fold_step(
    step_id: int,
    summary: str,
    payload: bytes | str,
    *,
    repo: Path | None = None,
    session: str | None = None,
    store_dir: Path | None = None,
    intents: list[str] | None = None,
    refs: list[int] | None = None,
    source: dict[str, Any] | None = None,
) -> Result:
    layout = open_layout(repo, session, store_dir)
    data = payload.encode("utf-8") if isinstance(payload, str) else payload
    out = fold_node(layout, step_id=step_id, summary=summary, payload=data, intents=intents,
                    refs=refs, source=source)
    info = out.to_json()
    info["session_id"] = layout.session_id
    return Result("fold add", data=info,
                  text=f"step {step_id}: {out.status} ({info['payload_bytes']} bytes, "
                       f"{info['token_count']} tokens, {info['redactions']} redactions) "
                       f"sha256 {info['payload_sha256'][:16]}")


def fold_session(
    transcript: Path,
    *,
    repo: Path | None = None,
    session: str | None = None,
    store_dir: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Result:
    """Fold every step of a real transcript (deterministic briefs, raw lines as payload)."""
    from contextfork.cold.keyed import fold_keyed
    from contextfork.cold.node import build_node
    from contextfork.cold.summary import brief
    from contextfork.transcript import load_session
    from contextfork.transcript.model import Step

    layout = open_layout(repo, session, store_dir)
    layout.ensure_contained()
    sess = load_session(require_regular(Path(transcript), "transcript"))
    phash = policy_sha256(load_policy(layout))
    total = len(sess.steps)
    done = 0

    def build(step: Step, step_id: int, is_open: bool) -> dict[str, Any]:
        nonlocal done
        summary, index_text, intents, commands = brief(step, step_id)
        src: dict[str, Any] = {"kind": "transcript", "format": sess.format,
                               "file": Path(transcript).name, "step_key": step.identity,
                               "position": step.index}
        if is_open:
            src["open"] = True  # the session's last step: it may still grow
        if step.raw:
            src["offsets"] = [step.raw[0].offset, step.raw[-1].offset]
            src["lines"] = len(step.raw)
        if step.started_at:
            src["timestamp"] = step.started_at
        done += 1
        if progress:
            progress(min(done, total), total)
        return build_node(session_id=layout.session_id, step_id=step_id, summary=summary,
                          payload=step.raw_bytes(), policy_sha256=phash, intents=intents,
                          index_text=index_text, extra_commands=commands, source=src)

    folded = fold_keyed(layout, sess.steps, build)
    outcomes = [p.node for p in folded.placed]
    written = folded.written
    redactions = sum(len(n["redactions"]) for n in outcomes)
    stored = sum(int(n["payload_bytes"]) for n in outcomes)
    data = {"session_id": layout.session_id, "transcript": str(transcript), "format": sess.format,
            "steps": total, "written": written, "unchanged": total - written,
            "payload_bytes": stored, "redactions": redactions,
            "tokens": sum(int(n["token_count"]) for n in outcomes), "store": str(layout.dir),
            "step_ids": {str(k): v for k, v in folded.ids.items() if k != v}}
    return Result("fold session", data=data,
                  text=f"folded {total} steps into {layout.dir} ({written} new, {redactions} redactions)")


def scan(
    prompt: str, *, repo: Path | None = None, session: str | None = None, store_dir: Path | None = None
) -> Result:
    """The passive pre-turn scan: starts a new turn (evicting the last) and hydrates by RGSC."""
    from contextfork.cold.scan import select

    layout = open_layout(repo, session, store_dir)
    layout.ensure_contained()
    if not layout.dir.is_dir() or not layout.sqlite.exists():
        return Result("fold scan", data={"session_id": layout.session_id, "terms": [], "selected": [],
                                         "context": "", "tokens": 0, "store": "absent"},
                      text="(no cold store)")
    policy = load_policy(layout)
    with store_lock(layout):
        state = begin_turn(layout)
        budget = min(int(policy["per_call_token_cap"]), int(policy["per_turn_token_cap"]))
        with idx.opened(layout) as conn:
            sel = select(conn, prompt, budget, follow_refs=int(policy.get("follow_refs", 1)))
        blocks = []
        state["calls"] = 1
        for pick in sel.picks:
            node = read_node(layout, pick.step_id)
            blocks.append(render_block(node, body_of(node, pick.mode), pick.mode))
            record(state, pick.step_id, pick.tokens, pick.mode)
        save_turn(layout, state)
    data = {
        "session_id": layout.session_id,
        "turn": state["turn"],
        "terms": sel.terms,
        "selected": [p.to_json() for p in sel.picks],
        "dropped": sel.dropped,
        "skipped_superseded": sel.skipped_superseded,
        "uncovered_terms": sel.uncovered,
        "tokens": sel.tokens,
        "budget": {"per_call": policy["per_call_token_cap"], "per_turn": policy["per_turn_token_cap"]},
        "context": "".join(blocks),
    }
    lines = [f"turn {state['turn']}: hydrated {len(sel.picks)} step(s), {sel.tokens} tokens"]
    lines += [f"  step {p.step_id}: {p.reason} {', '.join(p.terms) or f'step {p.explains}'} ({p.tokens} tok, {p.mode})"
              for p in sel.picks]
    if sel.dropped:
        lines.append("  dropped (over budget): " + ", ".join(str(d["step_id"]) for d in sel.dropped))
    return Result("fold scan", data=data, text="\n".join(lines))


def recall(
    query: str, *, limit: int = 10, repo: Path | None = None, session: str | None = None,
    store_dir: Path | None = None,
) -> Result:
    from contextfork.cold.recall import recall as do_recall

    layout = _existing(repo, session, store_dir)
    with idx.opened(layout) as conn:
        data = do_recall(conn, query, limit)
    lines = [f"{h['tier']:7} {h['label']:10} step {h['step_id']}: {h['summary'][:100]}" for h in data["hits"]]
    return Result("fold recall", data=data, text="\n".join(lines) or "(no match)")


def hydrate(
    step_id: int, *, repo: Path | None = None, session: str | None = None, store_dir: Path | None = None
) -> Result:
    layout = _existing(repo, session, store_dir)
    check_step_id(step_id)
    policy = load_policy(layout)
    with store_lock(layout):
        data = hydrate_one(layout, policy, step_id)
    with idx.opened(layout) as conn:
        row = idx.node_rows(conn, [step_id]).get(step_id)
    data["superseded_by"] = row["superseded_by"] if row else None
    return Result("fold hydrate", data=data, text=data["content"])


def evict(
    step_id: int, *, repo: Path | None = None, session: str | None = None, store_dir: Path | None = None
) -> Result:
    layout = _existing(repo, session, store_dir)
    read_node(layout, step_id)  # NotFoundError / IntegrityError for a bad step
    with store_lock(layout):
        data = evict_one(layout, step_id)
    return Result("fold evict", data=data, text=f"step {step_id}: {data['status']}")


def show(
    step_id: int, *, repo: Path | None = None, session: str | None = None, store_dir: Path | None = None
) -> Result:
    """The developer view: the verified node, zero prompt cost, no turn state touched."""
    layout = _existing(repo, session, store_dir)
    node = read_node(layout, step_id)
    data = {"node": node, "verified": True, "prompt_cost": 0}
    text = (f"step {step_id}  sha256 {node['payload_sha256']}\nsummary: {node['summary']}\n"
            f"intents: {', '.join(node['intents']) or '-'}  refs: {node['refs'] or '-'}  "
            f"tokens: {node['token_count']}  redactions: {len(node['redactions'])}\n---\n{node['content']}")
    return Result("fold show", data=data, text=text)


def status(
    *, repo: Path | None = None, session: str | None = None, store_dir: Path | None = None
) -> Result:
    layout = _existing(repo, session, store_dir)
    with idx.opened(layout) as conn:
        count, tokens, last = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(token_count),0), MAX(step_id) FROM nodes").fetchone()
        superseded = conn.execute("SELECT COUNT(*) FROM nodes WHERE superseded_by IS NOT NULL").fetchone()[0]
        fresh = idx.view_fresh(conn)
    stored = 0
    if layout.nodes_dir.is_dir():
        with os.scandir(layout.nodes_dir) as it:
            stored = sum(e.stat().st_size for e in it if e.is_file(follow_symlinks=False))
    state = load_turn(layout)
    policy = load_policy(layout)
    data = {"session_id": layout.session_id, "store": str(layout.dir), "nodes": count,
            "last_step": last, "tokens": tokens, "superseded": superseded, "bytes_stored": stored,
            "recall_index_fresh": fresh, "turn": state["turn"],
            "hydrated": [int(h["step_id"]) for h in state["hydrated"]],
            "turn_tokens_used": state["tokens_used"],
            "policy": {"per_call_token_cap": policy["per_call_token_cap"],
                       "per_turn_token_cap": policy["per_turn_token_cap"]}}
    text = (f"session {layout.session_id}: {count} nodes (last step {last}), {tokens} tokens folded, "
            f"{stored} bytes, {superseded} superseded; turn {state['turn']} hydrated "
            f"{data['hydrated'] or 'nothing'}; recall_index.json {'fresh' if fresh else 'stale'}")
    return Result("fold status", data=data, text=text)


def validate(
    *, repo: Path | None = None, session: str | None = None, store_dir: Path | None = None
) -> Result:
    from contextfork.cold.validate import exit_code_for, validate_store

    layout = open_layout(repo, session, store_dir)
    with store_lock(layout, exclusive=False) if layout.dir.is_dir() and not layout.containment_problems() \
            else _null():
        problems = validate_store(layout)
    code = exit_code_for(problems)
    errors = sum(p.severity == "error" for p in problems)
    return Result("fold validate", data={"session_id": layout.session_id, "errors": errors,
                                         "problems": len(problems)},
                  problems=problems, exit_code=code,
                  text=f"cold store {layout.session_id!r}: " + ("ok" if not errors else f"{errors} error(s)"))


def rebuild_index(
    *, repo: Path | None = None, session: str | None = None, store_dir: Path | None = None
) -> Result:
    """Recreate index.sqlite3 and recall_index.json from the verified node files."""
    from contextfork.cold.node import verify_node
    from contextfork.cold.store import ensure_policy, node_files

    layout = _existing(repo, session, store_dir)
    skipped: list[str] = []
    with store_lock(layout):
        policy = ensure_policy(layout)
        with idx.opened(layout) as conn:
            stepkeys.ensure(conn)
            with idx.transaction(conn):
                idx.clear(conn)
                for path in node_files(layout):
                    if path.is_symlink() or not path.name.startswith("step_"):
                        skipped.append(path.name)
                        continue
                    try:
                        node = verify_node(path.read_bytes(), where=path.name,
                                           step_id=int(path.stem.split("_")[1]))
                    except Exception:  # noqa: BLE001 - reported, never indexed
                        skipped.append(path.name)
                        continue
                    idx.add_node(conn, node)
                    stepkeys.record(conn, node)  # version chains survive a rebuild
            count = idx.node_count(conn)
            idx.export_ipcf_view(conn, layout, policy_sha256(policy))
    return Result("fold index", data={"nodes": count, "skipped": skipped,
                                      "recall_index": str(layout.recall_index)},
                  text=f"indexed {count} nodes; skipped {len(skipped)}; wrote recall_index.json",
                  exit_code=3 if skipped else 0)


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: object) -> None:
        return None


def parse_step(value: str) -> int:
    try:
        return check_step_id(int(value.removeprefix("step_")))
    except ValueError:
        raise UsageError(f"step {value!r} is not a number", hint="use e.g. 12 or step_000012") from None
