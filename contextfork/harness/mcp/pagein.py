"""The page-in tools over MCP: scan_context, hydrate_step, peek_fold and get_slice.

Each reads exact earlier details back from the cold store (the session's fold store, or
``<session>-render`` for the originals the renderer removed), SHA-256 verified; ``get_slice``
hands a subagent its role's slice of the parent session. No ``mcp`` import here: ``server``
registers these functions, ``common`` holds the workspace checks and the envelope they share.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from contextfork.envelope import Result
from contextfork.errors import ContextforkError, IntegrityError, NotFoundError, UsageError
from contextfork.harness.mcp.common import call_tool, session_arg, transcript_arg, workspace_root


def scan_context(prompt: str, session_id: str, workspace: str | None = None) -> dict[str, Any]:
    """Hydrate the folded steps a prompt needs (RGSC, budgets, newest owner wins), verified."""

    def run() -> Result:
        from contextfork.cold import api

        root = workspace_root(workspace)
        return api.page_in(prompt, repo=root, session=session_arg(session_id))

    return call_tool(run)


def _render_session(session_id: str) -> str:
    """The renderer's store for a session: ``<session>-render`` (its own naming rule)."""
    from contextfork.render.coldsource import SUFFIX, render_session_id
    from contextfork.transcript.model import Session

    if session_id.endswith(SUFFIX):
        return session_id
    return render_session_id(Session(format="claude-code", session_id=session_id))


def _in_render_store(root: Path, step: int, session_id: str) -> bool:
    from contextfork.cold import api

    try:
        api.show(step, repo=root, session=_render_session(session_id))
    except ContextforkError:
        return False
    return True


def hydrate_step(step: int, session_id: str, workspace: str | None = None) -> dict[str, Any]:
    """The exact bytes of one folded step into this turn (SHA-256 verified, within the budget).

    Reads the fold store, whose turn budget scan_context opens; a step the renderer removed
    (kept in ``<session>-render``) is read with peek_fold(store="render")."""

    def run() -> Result:
        from contextfork.cold import api

        root = workspace_root(workspace)
        sid = session_arg(session_id)
        try:
            return api.page_in_step(step, repo=root, session=sid)
        except NotFoundError as err:
            if not _in_render_store(root, step, sid):
                raise
            raise NotFoundError(
                f"{err.message}; step {step} is in the render store {_render_session(sid)!r}",
                hint='read it with peek_fold(step, session_id, store="render")',
            ) from err

    return call_tool(run)


StoreName = Literal["auto", "fold", "render"]


def _peek_node(
    root: Path, step: int, sid: str, store: StoreName
) -> tuple[dict[str, Any], str, str]:
    """The verified node, which store answered ("fold" | "render") and that store's session."""
    from contextfork.cold import api
    from contextfork.render.coldsource import SOURCE_KIND

    rsid = _render_session(sid)
    order = {"fold": [("fold", sid)], "render": [("render", rsid)],
             "auto": [("fold", sid), ("render", rsid)]}[store]  # fmt: skip
    missing: list[str] = []
    for kind, store_sid in order:
        try:
            sid_step = step
            if kind == "render":  # the renderer names steps by position: newest version there
                from contextfork.cold.keyed import latest_version

                sid_step = latest_version(api.open_layout(root, store_sid), step)
            node: dict[str, Any] = api.show(sid_step, repo=root, session=store_sid).data["node"]
        except NotFoundError as err:  # tamper (IntegrityError) is never skipped over
            missing.append(err.message)
            continue
        source = node.get("source") or {}
        if kind == "render" and source.get("kind") != SOURCE_KIND:
            raise IntegrityError(
                f"cold node {step} of {store_sid!r} is not a render original",
                hint="the -render store holds only nodes written by the renderer",
            )
        return node, kind, store_sid
    raise NotFoundError(
        "; ".join(missing),
        hint="store='fold' reads <session> (fold/pre-compact), store='render' reads "
        "<session>-render (the renderer's removed originals); 'auto' tries both",
    )


def peek_fold(
    step: int,
    session_id: str,
    workspace: str | None = None,
    offset: int = 0,
    length: int = 4000,
    store: StoreName = "auto",
    block: int | None = None,
) -> dict[str, Any]:
    """A verified slice of a folded step (developer view: no prompt budget, no turn state).

    store: "fold" (the session's fold store), "render" (``<session>-render``: originals the
    renderer removed from the prompt), or "auto" (fold first, then render). block: with a
    render original, only that message block of the step."""

    def run() -> Result:
        root = workspace_root(workspace)
        if offset < 0 or length <= 0:
            raise UsageError("offset must be >= 0 and length > 0")
        node, kind, store_sid = _peek_node(root, step, session_arg(session_id), store)
        content = str(node["content"])
        if block is not None:
            rng = ((node.get("source") or {}).get("blocks") or {}).get(str(block))
            if kind != "render" or not isinstance(rng, list) or len(rng) != 2:
                raise NotFoundError(f"step {step} has no block {block} in {store_sid!r}",
                                    hint="blocks exist only in render originals")  # fmt: skip
            content = content[int(rng[0]) : int(rng[1])]
        piece = content[offset : offset + length]
        data = {
            "step_id": step,
            "store": kind,
            "store_session": store_sid,
            "block": block,
            "payload_sha256": node["payload_sha256"],
            "verified": True,
            "summary": node["summary"],
            "redactions": len(node.get("redactions") or []),
            "offset": offset,
            "length": len(piece),
            "total": len(content),
            "more": offset + len(piece) < len(content),
            "content": piece,
        }
        return Result("fold peek", data=data, text=piece)

    return call_tool(run)


def get_slice(
    role: str | None = None,
    agent_type: str | None = None,
    session_id: str | None = None,
    transcript_path: str | None = None,
    task: str | None = None,
    budget: int | None = None,
    workspace: str | None = None,
) -> dict[str, Any]:
    """A role's slice of the parent session for a subagent (docs/slice.md): verified blocks
    (package parts, folded steps, live transcript bytes) labelled with their SHA-256, within
    ``budget`` characters; what did not fit is named for peek_fold."""

    def run() -> Result:
        from contextfork.slice.api import slice_result

        root = workspace_root(workspace)
        sid = session_arg(session_id) if session_id else None
        return slice_result(role, session=sid, transcript=transcript_arg(transcript_path),
                            agent_type=agent_type, budget=budget, task=task, repo=root, cwd=root)  # fmt: skip

    return call_tool(run)
