"""What the inspector shows, as plain data: steps, their hot/cold layer, page-ins, forks.

The page must never claim more than the store can prove, so every cold node is re-read through
the store's own verification (all three SHA-256 identities) while the site is built; a node
that fails is shown as failing, with its stored bytes and the hash it claims, so the browser's
own re-check fails too.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork.errors import UnsafeStateDir, UsageError
from contextfork.forkstub import STUB_PREFIX
from contextfork.inputfile import read_quietly
from contextfork.layout import cold_root, hooks_log
from contextfork.transcript.model import (
    Session,
    Step,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
)

#: A node file larger than this is not shown (its step's outputs would not fit a page either).
_NODE_BYTES = 1 << 30

#: What the search index keeps of each step (its first characters): a step view holds no more.
SEARCH_CHARS = 4_000


@dataclass
class ColdNode:
    step_id: int
    step_key: str | None
    summary: str
    payload_sha256: str
    verified: bool
    error: str | None
    path: Path  # the node file: its stored payload is read again when the page is written
    tokens: int
    src: str | None = None  # the per-node script holding ``content_b64`` when it left the page

    @property
    def content_b64(self) -> str:
        """The stored payload bytes, as stored (tampered ones too), read when the page needs
        them: held for every node at once they made ``view`` of a folded 55 MB session hold
        2.65 bytes per transcript byte (issue 27). The browser re-checks them against
        ``payload_sha256``, so a file changed since it was verified shows as a mismatch."""
        raw = _as_written(self.path)
        from contextfork.cold.node import payload_bytes_of

        try:
            data = payload_bytes_of(raw) if isinstance(raw, dict) else b""
        except (KeyError, ValueError, UnicodeError):  # damaged: nothing to show, it fails the check
            data = b""
        return base64.b64encode(data).decode("ascii")


@dataclass
class StepView:
    index: int
    started_at: str | None
    tokens: int  # this step's own blocks (estimated)
    window: int | None  # recorded context window at this call (input + cache), when recorded
    blocks: list[dict[str, Any]]
    failed: bool
    compaction_before: bool = False
    cold: ColdNode | None = None
    stubs: list[int] = field(default_factory=list)  # original steps a fork stubbed here
    pageins: list[dict[str, Any]] = field(default_factory=list)
    search_text: str = ""
    subagents: list[dict[str, Any]] = field(default_factory=list)  # spawned here (slice/viewdata)
    state: str = "raw"  # what the model sees of it: raw, folded, summarised or paged in
    state_note: str = "the model sees this step as recorded"

    @property
    def tokens_note(self) -> str:
        """The meaning of the one token figure a step shows (its hover text)."""
        note = (f"About {self.tokens:,} tokens: this step's own text (tool calls, results and "
                "words), estimated.")  # fmt: skip
        if self.window:
            note += (f" The whole context the model was sent at this call was {self.window:,} "
                     "tokens (recorded by the API).")  # fmt: skip
        return note


def _estimate(text: str) -> int:
    from contextfork.tokens import estimate_tokens

    return estimate_tokens(text)


def _block(b: Any, names: dict[str, str]) -> dict[str, Any] | None:
    if isinstance(b, TextBlock):
        if not b.text.strip():
            return None
        kind = "meta" if b.meta else b.role
        return {"kind": kind, "text": b.text, "lines": b.text.count("\n") + 1}
    if isinstance(b, ThinkingBlock):
        return {"kind": "thinking", "text": b.text, "lines": b.text.count("\n") + 1}
    if isinstance(b, ToolCall):
        args = json.dumps(b.input, indent=2, ensure_ascii=False, sort_keys=True)
        return {"kind": "tool_call", "name": b.name, "text": args, "lines": args.count("\n") + 1}
    if isinstance(b, ToolResult):
        content = b.content  # read once: it may be read back from the transcript
        return {
            "kind": "tool_result",
            "name": names.get(b.call_id, "tool"),
            "text": content,
            "lines": content.count("\n") + 1,
            "error": b.is_error or (b.exit_code not in (None, 0)),
            "exit_code": b.exit_code,
            "stub": content.startswith(STUB_PREFIX),
        }
    return None


def _stub_steps(step: Step) -> list[int]:
    import re

    out = []
    for r in step.tool_results:
        content = r.content
        if content.startswith(STUB_PREFIX):
            m = re.search(r"step (\d+)", content)
            if m:
                out.append(int(m.group(1)))
    return out


def step_view(step: Step) -> StepView:
    names = {c.id: c.name for c in step.tool_calls}
    blocks = [v for b in step.blocks if (v := _block(b, names)) is not None]
    text = "\n".join(b["text"] for b in blocks)
    window = step.usage.context_tokens if step.usage and step.usage.context_tokens else None
    return StepView(
        index=step.index,
        started_at=step.started_at,
        tokens=_estimate(text),
        window=window,
        blocks=blocks,
        failed=any(b.get("error") for b in blocks),
        stubs=_stub_steps(step),
        search_text=text[:SEARCH_CHARS],
    )


def cold_nodes(root: Path | None, session_id: str | None) -> dict[int, ColdNode]:
    """Every node of the session's cold store, each re-verified (failures kept, marked)."""
    if root is None or not session_id:
        return {}
    from contextfork.cold.layout import StoreLayout, check_session_id
    from contextfork.cold.store import read_nodes

    try:
        layout = StoreLayout(cold_root(root), check_session_id(session_id))
    except (UsageError, UnsafeStateDir):
        return {}
    if not layout.nodes_dir.is_dir() or layout.nodes_dir.is_symlink():
        return {}
    out: dict[int, ColdNode] = {}
    paths: dict[int, Path] = {}
    for path in sorted(layout.nodes_dir.glob("step_*.json")):
        try:
            paths[int(path.stem.split("_", 1)[1])] = path
        except ValueError:
            continue
    for step_id, node, error in read_nodes(layout, paths):
        path = paths[step_id]
        raw = node if node is not None else _as_written(path)  # failing: shown, marked
        if not isinstance(raw, dict):
            continue
        source = raw.get("source") if isinstance(raw.get("source"), dict) else {}
        out[step_id] = ColdNode(
            step_id=step_id,
            step_key=str(source["step_key"]) if source and source.get("step_key") else None,
            summary=str(raw.get("summary", "")),
            payload_sha256=str(raw.get("payload_sha256", "")),
            verified=error is None,
            error=error,
            path=path,
            tokens=count if type(count := raw.get("token_count")) is int else 0,
        )
    return out


def _as_written(path: Path) -> Any:
    """A node file parsed as it is, unverified (None when it is not JSON; no fields when it
    is not a regular file: a link or a FIFO is neither followed nor waited on)."""
    found = read_quietly(path, _NODE_BYTES, follow=False)
    if found is None:
        return {}
    try:
        return json.loads(found[0])
    except ValueError:
        return None


def pageins(root: Path | None, session_id: str | None) -> list[dict[str, Any]]:
    """What the prompt hook injected for this session, from the hook log."""
    if root is None or not session_id:
        return []
    out = []
    try:
        lines = hooks_log(root).read_text(encoding="utf-8", errors="replace").splitlines()
    except (OSError, UnsafeStateDir):
        return []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if (isinstance(rec, dict) and rec.get("session_id") == session_id
                and rec.get("action") == "hydrate"):  # fmt: skip
            out.append({"at": rec.get("at"), "hydrated": rec.get("hydrated", []),
                        "terms": rec.get("terms", []), "tokens": rec.get("tokens")})  # fmt: skip
    return out


def fork_of(root: Path | None, session_id: str | None) -> str | None:
    if root is None or not session_id:
        return None
    from contextfork.harness.hooks.runner import parent_session

    return parent_session(root, session_id)


@dataclass
class SessionView:
    session: Session
    steps: list[StepView]
    cold: dict[int, ColdNode]
    pageins: list[dict[str, Any]]
    forked_from: str | None

    @property
    def failed(self) -> int:
        return sum(1 for s in self.steps if s.failed)


def build(
    session: Session, root: Path | None, *, each: Callable[[StepView], None] | None = None
) -> SessionView:
    """``each``: called on each step's view as it is made (the site moves its large blocks
    out then, so that no two steps' outputs need be held at once)."""
    steps: list[StepView] = []
    for s in session.steps:
        steps.append(step_view(s))
        if each is not None:
            each(steps[-1])
    compacted = {c.before_step for c in session.compactions}
    cold = cold_nodes(root, session.session_id)
    # Cold ids follow the step's stable key (a grown step gets a newer version): match by key,
    # newest version first; nodes folded without a key (fold add) match by position.
    by_key: dict[str, ColdNode] = {}
    for node in sorted(cold.values(), key=lambda n: n.step_id):
        if node.step_key:
            by_key[node.step_key] = node
    keyed = {n.step_id for n in by_key.values()}
    for st, sv in zip(session.steps, steps, strict=True):
        sv.compaction_before = sv.index in compacted
        sv.cold = by_key.get(st.identity) or (
            cold.get(sv.index) if sv.index in cold and sv.index not in keyed else None
        )
    from contextfork.slice.viewdata import subagents_by_call

    spawned = subagents_by_call(session, root)
    for st, sv in zip(session.steps, steps, strict=True):
        sv.subagents = [a for c in st.tool_calls for a in spawned.get(c.id, [])]
    ins = pageins(root, session.session_id)
    _attach_pageins(steps, ins)
    _label(session, steps)
    return SessionView(session, steps, cold, ins, fork_of(root, session.session_id))


def _label(session: Session, steps: list[StepView]) -> None:
    """What the model sees of each step now: raw, folded (a stub stands in), summarised (behind
    a compaction) or paged in (a page-in brought its stored original back)."""
    live = {s.index for s in session.live_steps()}
    last = session.compactions[-1].before_step if session.compactions else None
    paged: dict[int, int] = {}  # cold step id -> the step the page-in came before
    for sv in steps:
        for rec in sv.pageins:
            for ref in rec.get("hydrated") or []:
                who, _, sid = str(ref).rpartition(":")
                if sid.isdigit() and who in ("", session.session_id):
                    paged.setdefault(int(sid), sv.index)
    for sv in steps:
        if sv.cold is not None and sv.cold.step_id in paged:
            sv.state = "paged in"
            sv.state_note = (f"a page-in brought the stored original of this step back into the "
                             f"model's context before step {paged[sv.cold.step_id]}")  # fmt: skip
        elif any(b.get("stub") for b in sv.blocks):
            sv.state = "folded"
            sv.state_note = ("a fork replaced this step's large output with a stub: the model "
                             "sees the stub, the original is in the cold store")  # fmt: skip
        elif sv.index not in live:
            sv.state = "summarised"
            sv.state_note = (f"behind the compaction before step {last}: the model no longer "
                             "sees this step, only the harness's summary")  # fmt: skip


def _attach_pageins(steps: list[StepView], ins: list[dict[str, Any]]) -> None:
    """Each page-in goes to the first step that started after it was logged."""
    for rec in ins:
        at = str(rec.get("at") or "")
        target = next((s for s in steps if s.started_at and s.started_at >= at), None)
        if target is None and steps:
            target = steps[-1]
        if target is not None:
            target.pageins.append(rec)
