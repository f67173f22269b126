"""Removals kept in the cold store: each step the renderer may remove is stored once, verified.

Mapping (documented, stable): one cold node per transcript step, in a store session of its own,
``<session>-render`` (``fold --transcript`` stores the raw lines of the same steps under
``<session>``, so the two never collide). Steps are keyed on their stable identity
(``Step.key``, kept in ``source.step_key``; ``contextfork.cold.stepkeys``): ``step_id`` is the
transcript position while that id is free, else one allocated for the key, and ``ColdSource``
maps positions to those ids; a step still growing is stored open and re-versioned. The payload is the step's canonical original (``original_step_text``),
which is exactly the bytes a fold removes; ``source.blocks`` maps each body block to its
character range in the stored content, so a stub's lines are sliced out of that block. The
payload depends on the step alone — never on the policy, k or which lines a render stubbed —
so re-rendering, under any policy, re-uses the nodes, and a complete step whose key now holds
other bytes (a different history under the same session id) is refused as an integrity error.

Reading goes through ``contextfork.cold.store.read_node``, which re-verifies payload, projection
and artifact SHA-256 on every read; restore/peek then check the sha256 recorded at render time.
Secrets are scrubbed before anything is written (SPEC §6): a step holding one is stored
redacted, so its restore says so and can never claim to be byte-exact.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork.cold.layout import STEP_MAX, StoreLayout, policy_sha256
from contextfork.errors import IntegrityError, NotFoundError
from contextfork.hashing import sha256_text
from contextfork.redact import Redaction, redact_text
from contextfork.render.messages import StepMessages, step_messages
from contextfork.transcript.model import Session, Step

SUFFIX = "-render"
SOURCE_KIND = "render-original"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def render_session_id(session: Session, transcript: Path | None = None,
                      override: str | None = None) -> str:
    """The store session for a history's removals: ``<session id>-render``.

    Without a recorded session id, the transcript's file name plus a hash of its resolved path
    (stable while a live transcript grows); failing both, a hash of the first step.
    """
    base = override or session.session_id
    if not base and transcript is not None:
        base = f"{Path(transcript).stem}-{sha256_text(str(Path(transcript).resolve()))[:8]}"
    if not base:
        first = session.steps[0] if session.steps else None
        base = "history-" + sha256_text(first.model_dump_json() if first else "")[:12]
    clean = _UNSAFE.sub("_", base).strip("._-") or "history"
    if clean != base or len(clean) > 100:
        clean = f"{clean[:80]}-{sha256_text(base)[:8]}"
    return clean + SUFFIX


def _map_offset(pos: int, spans: list[Redaction]) -> int:
    """A character offset in the original text, as an offset in the redacted text."""
    delta = 0
    for r in spans:
        o_start = r.start - delta
        if pos <= o_start:
            break
        o_end = o_start + r.original_length
        if pos < o_end:
            return r.start  # inside a secret: its placeholder starts here
        delta += (r.end - r.start) - r.original_length
    return pos + delta


def step_payload(sm: StepMessages) -> tuple[str, dict[str, list[int]]]:
    """The step's canonical original, and each body block's [start, end) character range in
    the content the store will keep (the same text, with any secret already redacted)."""
    parts: list[str] = []
    ranges: dict[int, tuple[int, int]] = {}
    pos = 0
    for m in sm.body:
        head = f"[{m.role}:{m.kind}]\n"
        parts.append(head + m.content + "\n")
        if m.block >= 0:
            ranges[m.block] = (pos + len(head), pos + len(head) + len(m.content))
        pos += len(head) + len(m.content) + 1
    text = "".join(parts)
    _clean, spans = redact_text(text)
    blocks = {str(b): [_map_offset(a, spans), _map_offset(z, spans)]
              for b, (a, z) in sorted(ranges.items())}
    return text, blocks


@dataclass
class PersistReport:
    store: str
    session_id: str
    steps: list[int] = field(default_factory=list)
    written: int = 0
    unchanged: int = 0
    ids: dict[int, int] = field(default_factory=dict)  # position -> cold id, where they differ

    def to_json(self) -> dict[str, object]:
        return {"store": self.store, "session_id": self.session_id, "steps": len(self.steps),
                "written": self.written, "unchanged": self.unchanged}


def persist_steps(
    layout: StoreLayout,
    session: Session,
    steps: Iterable[int],
    *,
    known: set[int] | None = None,
    view: bool = True,
) -> PersistReport:
    """Store the originals of ``steps`` (idempotent; ``known`` skips ids this process wrote;
    ``view=False``: see ``fold_keyed``)."""
    from contextfork.cold.keyed import fold_keyed
    from contextfork.cold.node import build_node
    from contextfork.cold.store import load_policy
    from contextfork.cold.summary import brief

    layout.ensure_contained()
    report = PersistReport(str(layout.dir), layout.session_id)
    by_index = {s.index: s for s in session.steps}
    wanted = sorted({s for s in steps if s in by_index and 1 <= s <= STEP_MAX})
    report.steps = wanted
    todo = [s for s in wanted if known is None or s not in known]
    if not todo:
        report.unchanged = len(wanted)
        return report
    phash = policy_sha256(load_policy(layout))

    def build(step: Step, step_id: int, is_open: bool) -> dict[str, Any]:
        text, blocks = step_payload(step_messages(step))
        summary, index_text, intents, commands = brief(step, step_id)
        source: dict[str, Any] = {"kind": SOURCE_KIND, "format": session.format,
                                  "step_sha256": sha256_text(text), "blocks": blocks,
                                  "step_key": step.identity, "position": step.index}
        if is_open:
            source["open"] = True
        return build_node(session_id=layout.session_id, step_id=step_id, summary=summary,
                          payload=text.encode("utf-8"), policy_sha256=phash,
                          intents=intents, index_text=index_text,
                          extra_commands=commands, source=source)

    last = max(by_index, default=0)
    folded = fold_keyed(layout, [by_index[s] for s in todo], build, open_last=todo[-1] == last,
                        view=view)
    report.written = folded.written
    report.unchanged = len(wanted) - report.written
    report.ids = folded.ids
    if known is not None:
        known.update(todo)
    return report


class ColdSource:
    """A ``StepSource`` that reads originals back from the cold store, verified on read."""

    def __init__(self, layout: StoreLayout, ids: dict[int, int] | None = None) -> None:
        self.layout = layout
        self.ids = ids or {}  # transcript position -> cold id of the step's key
        self._nodes: dict[int, dict[str, Any]] = {}

    def _node(self, step: int) -> dict[str, Any]:
        node = self._nodes.get(step)
        if node is None:
            from contextfork.cold.store import read_node

            if not 1 <= step <= STEP_MAX:
                raise NotFoundError(f"step {step} is not in this session")
            try:
                sid = self.ids.get(step)
                if sid is None:  # named by position: the newest version of the key there
                    from contextfork.cold.keyed import latest_version

                    sid = latest_version(self.layout, step)
                node = read_node(self.layout, sid)  # every identity re-verified here
            except NotFoundError:
                raise NotFoundError(
                    f"step {step} is not in cold store {self.layout.session_id!r}",
                    hint="only steps before the one being rendered are stored",
                ) from None
            src = node.get("source") or {}
            if src.get("kind") != SOURCE_KIND or node.get("content_encoding") != "utf-8":
                raise IntegrityError(
                    f"cold node {step} of {self.layout.session_id!r} is not a render original",
                    hint="the -render store holds only nodes written by the renderer",
                )
            self._nodes[step] = node
        return node

    def step_text(self, step: int) -> str:
        return str(self._node(step)["content"])

    def block_text(self, step: int, block: int) -> str:
        node = self._node(step)
        rng = node["source"].get("blocks", {}).get(str(block))
        if not isinstance(rng, list) or len(rng) != 2:
            raise NotFoundError(f"step {step} has no block {block} in the cold store")
        return str(node["content"])[int(rng[0]) : int(rng[1])]

    def redactions(self, step: int) -> int:
        return len(self._node(step)["redactions"])


__all__ = ["ColdSource", "PersistReport", "persist_steps", "render_session_id", "step_payload"]
