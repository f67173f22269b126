"""The cold store's Python API: what the CLI, the hooks, the MCP server and the renderer call.

Every function takes where the store is (``repo``/``session`` or an explicit ``store_dir``)
and returns a ``contextfork.envelope.Result`` with plain JSON-able ``data``. ``page_in`` and
``page_in_step`` import neither pydantic nor the tokenizer (token counts are cached at fold time).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextfork.cold import index as idx
from contextfork.cold.evict import begin_turn, evict_one, load_turn, save_turn
from contextfork.cold.layout import (
    StoreLayout,
    check_step_id,
    default_session,
    layout_at,
    layout_for,
    policy_differences,
    policy_sha256,
    store_lock,
)
from contextfork.cold.node import build_node
from contextfork.cold.pagein import body_of, page_in_one, record, render_block, window_body
from contextfork.cold.store import fold_node, load_policy, policy_notice, read_node
from contextfork.envelope import Problem, Result
from contextfork.errors import NotFoundError, UsageError
from contextfork.inputfile import require_regular

if TYPE_CHECKING:
    from contextfork.transcript.model import Session


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
        from contextfork.cold.missing import absent_error, fetch_command

        raise absent_error(layout.root, layout.session_id) or NotFoundError(
            f"no cold store for session {layout.session_id!r} at {layout.dir}",
            hint="fold the session first (`contextfork fold session --transcript PATH`), or fetch "
            f"a pushed one: `{fetch_command(layout.session_id)}`",
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
    loaded: Session | None = None,
    release: bool = False,
) -> Result:
    """Fold every step of a real transcript (deterministic briefs, raw lines as payload).
    ``loaded``: the caller's parse of that transcript (``fork`` has one), not read again;
    ``release``: the caller is done with its steps' blocks, which go as they are folded."""
    from contextfork.cold.keyed import fold_keyed
    from contextfork.cold.readable import readable_step
    from contextfork.cold.summary import brief
    from contextfork.tokens import warm  # every node's token count needs it
    from contextfork.transcript import load_session
    from contextfork.transcript.model import Step

    layout = open_layout(repo, session, store_dir)
    layout.ensure_contained()
    # Only the session's own steps are folded: its subagents' files are not read.
    path = Path(transcript)
    sess = loaded or load_session(require_regular(path, "transcript"), include_subagents=False,
                                  between=warm, shared=False, outputs_in_file=True)  # fmt: skip
    phash = policy_sha256(load_policy(layout))
    total = len(sess.steps)
    done = 0
    # A session of our own (or released): each step's blocks (its texts, calls and results:
    # most of the session's memory) go once its node is built and parked (issue 27). A node
    # built again under the lock (another writer moved its id) reads its step from a fresh parse.
    emptied: set[int] = set()
    fresh: dict[int, Step] = {}

    def build(step: Step, step_id: int, is_open: bool) -> dict[str, Any]:
        if step.index in emptied:
            if not fresh:
                again = load_session(path, include_subagents=False, shared=False,
                                     outputs_in_file=True)  # fmt: skip
                fresh.update((s.index, s) for s in again.steps)
            step = fresh[step.index]
        node = _build(step, step_id, is_open)
        if (loaded is None or release) and step.index not in fresh:
            step.blocks = []
            emptied.add(step.index)
        return node

    def _build(step: Step, step_id: int, is_open: bool) -> dict[str, Any]:
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
                          index_text=index_text, extra_commands=commands, source=src,
                          readable=readable_step(step))

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


class Pulled:
    """A session ``fold pull`` brought here (``contextfork.provenance``): page-in uses only the
    nodes its record lists, unchanged, and labels each block as another machine's."""

    def __init__(self, nodes: dict[int, str], label: str) -> None:
        self.nodes = nodes
        self.label = label


def pulled_session(layout: StoreLayout) -> Pulled | None:
    """None for a store this machine folded (no pull record). With
    ``contextfork.requireSignedPackages`` a pull without a verified signature gives no node."""
    from contextfork import provenance
    from contextfork.layout import COLD, STATE_DIR

    where = layout.dir.parent
    if where.name != COLD or where.parent.name != STATE_DIR:
        return None  # a store outside a repository's state dir is never pulled
    root = where.parent.parent
    rec = provenance.cold_record(root, layout.session_id)
    if rec is None:
        return None
    nodes = provenance.pulled_nodes(rec)
    if provenance.is_foreign(rec):
        from contextfork import signing  # lazy: git runs only for an unsigned pulled session

        if signing.required(root):
            nodes = {}
    return Pulled(nodes, provenance.cold_label(rec))


def _render_picks(
    layout: StoreLayout, picks: list[Any], char_budget: int | None, conn: Any = None,
    pulled: Pulled | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each pick as the block that is injected (content, verified windows or summary), in
    selection order; a pick that does not fit ``char_budget`` is shrunk to windows or left out
    (and then is not recorded as paged in). In a ``pulled`` session a node its record does not
    list as it is now (rewritten and re-hashed after the pull, or added since) is left out."""
    shown: list[dict[str, Any]] = []
    left_out: list[dict[str, Any]] = []
    used = 0
    for pick in picks:
        node = read_node(layout, pick.step_id, conn=conn)  # identities and index record checked
        if pulled is not None and pulled.nodes.get(pick.step_id) != node["artifact_sha256"]:
            left_out.append({"step_id": pick.step_id, "sha256": node["payload_sha256"],
                             "reason": "not_provenanced"})  # fmt: skip
            continue
        mode, tokens, body = pick.mode, pick.tokens, ""
        if mode == "window":
            body, tokens, _ = window_body(node, pick.terms, pick.tokens)
            if not body:  # the terms sit in the summary or the index text only
                mode, body, tokens = "summary", str(node["summary"]), int(node["summary_token_count"])
        else:
            body = body_of(node, mode)
        block = render_block(node, body, mode)
        if pulled is not None:
            block = pulled.label + "\n" + block
        room = None if char_budget is None else char_budget - used
        if room is not None and len(block) > room and pick.terms and room > 400:
            body, tokens, _ = window_body(node, pick.terms, (room - 200) // 4)
            mode = "window"
            block = render_block(node, body, mode) if body else ""
            if block and pulled is not None:
                block = pulled.label + "\n" + block
        if not block or (room is not None and len(block) > room):
            left_out.append({"step_id": pick.step_id, "sha256": node["payload_sha256"],
                             "reason": "over_char_cap"})  # fmt: skip
            continue
        used += len(block)
        shown.append({**pick.to_json(), "mode": mode, "tokens": tokens, "block": block,
                      "sha256": node["payload_sha256"], "summary": node["summary"]})  # fmt: skip
    return shown, left_out


def _pinned(layout: StoreLayout, conn: Any) -> frozenset[int]:
    """Steps the agent pinned (``contextfork context pin``): page-in prefers them on ties."""
    if not os.path.lexists(layout.curation):
        return frozenset()  # no decision yet (most prompts): the curation module stays unloaded
    from contextfork.cold.decisions import load_for_store, step_ids_of

    return step_ids_of(conn, load_for_store(layout.dir).pinned)


def page_in(
    prompt: str, *, repo: Path | None = None, session: str | None = None, store_dir: Path | None = None,
    char_budget: int | None = None, named_store_required: bool = False, live: Any = None,
) -> Result:
    """The passive pre-turn page-in (``fold scan``): starts a new turn (evicting the last) and
    pages in what the prompt needs, chosen by RGSC.

    One budget in tokens (the policy's per-call and per-turn caps) selects; ``char_budget``
    (the prompt hook's output limit) only decides what of the selection is shown, and only what
    is shown is recorded as paged in. ``live`` (a ``cold.origin.LiveView``) names what the
    harness already shows the model; those steps are never paged in.
    """
    from contextfork.cold.origin import Peek
    from contextfork.cold.selection import select

    layout = open_layout(repo, session, store_dir)
    layout.ensure_contained()
    if not layout.dir.is_dir() or not layout.sqlite.exists():
        if named_store_required and not layout.dir.is_dir():  # the CLI; never the prompt hook
            from contextfork.cold.missing import absent_error

            err = absent_error(layout.root, layout.session_id)
            if err is not None:
                raise err
        return Result("fold scan", data={"session_id": layout.session_id, "terms": [], "selected": [],
                                         "context": "", "tokens": 0, "store": "absent"},
                      text="(no cold store)")
    policy = load_policy(layout)
    pulled = pulled_session(layout)
    with store_lock(layout):
        state = begin_turn(layout)
        budget = min(int(policy["per_call_token_cap"]), int(policy["per_turn_token_cap"]))
        with idx.opened(layout) as conn:
            sel = select(conn, prompt, budget, follow_refs=int(policy.get("follow_refs", 1)),
                         preferred=_pinned(layout, conn), peek=Peek(layout), live=live)
            state["calls"] = 1
            shown, left_out = _render_picks(layout, sel.picks, char_budget, conn, pulled)
        for s in shown:
            record(state, int(s["step_id"]), int(s["tokens"]), str(s["mode"]))
        save_turn(layout, state)
    blocks = [str(s.pop("block")) for s in shown]
    tokens = sum(int(s["tokens"]) for s in shown)
    data = {
        "session_id": layout.session_id,
        "turn": state["turn"],
        "terms": sel.terms,
        "selected": shown,
        "over_char_cap": [o for o in left_out if o["reason"] == "over_char_cap"],
        "not_provenanced": [o for o in left_out if o["reason"] == "not_provenanced"],
        "pulled": pulled.label if pulled is not None else None,
        "filler_terms": sel.filler,
        "dropped": sel.dropped,
        "skipped_superseded": sel.skipped_superseded,
        "uncovered_terms": sel.uncovered,
        "tokens": tokens,
        "blocks": blocks,
        "budget": {"per_call": policy["per_call_token_cap"], "per_turn": policy["per_turn_token_cap"]},
        "policy_differs": policy_differences(policy),
        "context": "".join(blocks),
    }
    lines = [f"turn {state['turn']}: hydrated {len(shown)} step(s), {tokens} tokens"]
    lines += [f"  step {p['step_id']}: {p['reason']} {', '.join(p['terms']) or 'step ' + str(p.get('explains'))} "
              f"({p['tokens']} tok, {p['mode']})" for p in shown]
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


def page_in_step(
    step_id: int, *, repo: Path | None = None, session: str | None = None, store_dir: Path | None = None
) -> Result:
    layout = _existing(repo, session, store_dir)
    check_step_id(step_id)
    policy = load_policy(layout)
    with store_lock(layout):
        data = page_in_one(layout, policy, step_id)
    with idx.opened(layout) as conn:
        row = idx.node_rows(conn, [step_id]).get(step_id)
    data["superseded_by"] = row["superseded_by"] if row else None
    notice = policy_notice(policy)
    data["policy_differs"] = policy_differences(policy)
    problems = [Problem("warning", "policy_not_default", notice, "hydration_policy.json")] if notice else []
    return Result("fold hydrate", data=data, text=data["content"], problems=problems)


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
        if not (isinstance(last, int | None) and isinstance(tokens, int)):  # a damaged row
            raise idx.failure(layout, sqlite3.DatabaseError("step ids or token counts are not integers"))
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
                       "per_turn_token_cap": policy["per_turn_token_cap"],
                       "differs_from_default": policy_differences(policy)}}
    text = (f"session {layout.session_id}: {count} nodes (last step {last}), {superseded} superseded\n"
            f"  {tokens} tokens folded, {stored} bytes stored\n"
            f"  turn {state['turn']} hydrated {data['hydrated'] or 'nothing'}; "
            f"recall_index.json {'fresh' if fresh else 'stale'}")
    notice = policy_notice(policy)
    if notice:
        text += f"\n{notice}"
    return Result("fold status", data=data, text=text)


def validate(
    *, repo: Path | None = None, session: str | None = None, store_dir: Path | None = None
) -> Result:
    from contextfork.cold.validate import exit_code_for, validate_store

    layout = open_layout(repo, session, store_dir)
    with store_lock(layout) if layout.dir.is_dir() and not layout.containment_problems() \
            else _null():
        problems = validate_store(layout)
    code = exit_code_for(problems)
    errors = sum(p.severity == "error" for p in problems)
    return Result("fold validate", data={"session_id": layout.session_id, "errors": errors,
                                         "problems": len(problems)},
                  problems=problems, exit_code=code,
                  text=f"cold store {layout.session_id!r}: " + ("ok" if not errors else f"{errors} error(s)"))


def rebuild_index(
    *, repo: Path | None = None, session: str | None = None, store_dir: Path | None = None,
    discard_old: bool = False,
) -> Result:
    """Recreate index.sqlite3 and recall_index.json from the verified node files (see
    ``cold.rebuild``; ``discard_old``: ``fold index --rebuild``)."""
    from contextfork.cold.rebuild import rebuild

    layout = _existing(repo, session, store_dir)
    out = rebuild(layout, discard_old=discard_old)
    lines = []
    if out.discarded:
        lines.append(f"index.sqlite3 was unreadable: moved aside to {Path(out.discarded).name}")
    verb = "rebuilt the index from the verified node files: indexed" if discard_old else "indexed"
    skipped = f"skipped {len(out.skipped)}"
    if out.skipped:  # files that did not verify: the store is damaged (exit 3)
        skipped += " (" + ", ".join(out.skipped[:3]) + (" …" if len(out.skipped) > 3 else "") + ")"
    lines.append(f"{verb} {out.nodes} nodes; {skipped}; wrote recall_index.json")
    return Result("fold index", data={"nodes": out.nodes, "skipped": out.skipped,
                                      "discarded": out.discarded, "rebuilt": discard_old,
                                      "recall_index": str(layout.recall_index)},
                  text="\n".join(lines), exit_code=3 if out.skipped else 0)


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
