"""The rendered view as an edit of the request's own array (any format a ``PartSteps`` reads).

What the view shows of a step decides what happens to its items: a folded step loses the items
it owns whole (``PartSteps.whole``: Anthropic's assistant message, the Responses API's output
items) and exactly its result parts, a stubbed result gets its text replaced in place, a fold
note is inserted before the first folded step's first item. Everything else is the client's own
text, byte for byte (``Edit``: what goes out, where each item came from, what changed).

The renderer's note says ``restore N``, a command no client offers; the note names instead the
way back this model has (``Memo.hint``), fixed per fold id when first sent so an old note never
changes bytes, and names steps by their cold-store ids where those differ from positions.
"""

from __future__ import annotations

import re
from functools import partial

from contextfork.proxy import jsonspan
from contextfork.proxy.steps import Edit, Memo, PartSteps
from contextfork.render.engine import View
from contextfork.transcript.model import ToolResult

_RESTORE_HEAD = "`restore N` gives any back exactly"
_RESTORE_ONE = re.compile(r" · restore (\d+)\]$")
_STEP_LINE = re.compile(r"(?m)^s(\d+)(:| \(agent brief\))")
_STUB_WAY = re.compile(r"; restore (\d+) for the exact text\]")


def build_edit(live: PartSteps, values: list[object], raws: list[str], view: View,  # noqa: C901 - complexity 16, over the cap when it came (issue 27)
               memo: Memo) -> Edit:
    """The view as an edit of the request's items (``values``/``raws``: as parsed and their
    exact texts; the ones ``live`` holds are the same items, up to breakpoints)."""
    shown: set[int] = set()
    replaced: dict[int, str] = {}
    notes: dict[int, tuple[str, str]] = {}
    fold_of_note = {steps[0]: fid for fid, steps in view.folds.items()}
    for m in view.messages:
        if m.kind == "note":
            notes[m.step] = (fold_of_note.get(m.step, ""), m.content)
        elif m.kind in ("reply", "call", "output") and m.block >= 0:
            shown.add(m.step)
            if m.kind == "output":
                block = live.steps[m.step - 1].blocks[m.block]
                if isinstance(block, ToolResult) and m.content != block.content:
                    replaced[live.source(m.step, m.block)] = stub_text(m.content, memo)
    folded = {s for steps in view.folds.values() for s in steps if s not in shown}
    drop_whole = {i for s in folded for i in live.whole(s)}
    drop_parts: dict[int, set[int]] = {}
    for s in folded:
        for part_id in live.results[s - 1]:
            i, j = live.at[part_id]
            drop_parts.setdefault(i, set()).add(j)
    new_parts: dict[int, dict[int, str]] = {}
    for part_id, text in replaced.items():
        i, j = live.at[part_id]
        if j not in drop_parts.get(i, set()) and live.replaceable(live.parts(live.messages[i])[j]):
            new_parts.setdefault(i, {})[j] = text
    note_at = {live.assistant_at[s - 1]: notes[s] for s in notes if s <= len(live.steps)}
    edit = Edit(folded_steps=len(folded))
    for i, raw in enumerate(raws):
        if i in note_at:
            fid, text = note_at[i]
            item = live.note_item(note_text(text, fid, view.folds.get(fid, ()), memo))
            edit.add(jsonspan.dumps(item), item, None, True)
            edit.notes += 1
        if i in drop_whole:
            continue
        drops, subs = drop_parts.get(i, set()), new_parts.get(i, {})
        if not drops and not subs:
            edit.add(raw, values[i], i, False)
            continue
        if len(live.parts(values[i])) != len(live.parts(live.messages[i])):
            raise jsonspan.SpanError(f"item {i}: not the parts the history holds")
        value = live.edited_value(values[i], drops, subs)
        edit.stubs += len(subs)
        if value is None:
            continue  # every part was a result of a folded call
        key = (raw, frozenset(drops), tuple(sorted(subs.items())))
        edit.add(memo.text(key, partial(live.edited_text, raw, drops, subs)), value, i, True)
    return edit


def note_text(text: str, fid: str, steps: tuple[int, ...], memo: Memo) -> str:
    """The renderer's note with its way back (see the module docstring)."""
    hint, ids = memo.hint, memo.ids
    head = hint.setdefault(fid, hint.get("", _RESTORE_HEAD)) if fid else hint.get("", "")
    if ids and any(s in ids for s in steps):
        text = _STEP_LINE.sub(lambda m: f"s{ids.get(int(m.group(1)), int(m.group(1)))}"
                              f"{m.group(2)}", text)
    if _RESTORE_HEAD in text:
        return text.replace(_RESTORE_HEAD, head, 1)
    return _RESTORE_ONE.sub(f" · {head}]", text)


def stub_text(text: str, memo: Memo) -> str:
    """A dedupe stub's ``restore N`` (mini-swe-agent's command) as this model's way back, the
    step named by its cold-store id; fixed per step when first sent (no byte of an old stub
    changes)."""

    def way(m: re.Match[str]) -> str:
        step = int(m.group(1))
        sid = memo.ids.get(step, step) if memo.ids else step
        head = memo.hint.setdefault(f"stub:{step}", memo.hint.get("", ""))
        if not head:
            return m.group(0)
        how = head.replace("gives any back exactly", "gives it back exactly")
        return "; " + re.sub(r"\bN\b", str(sid), how) + "]"

    return _STUB_WAY.sub(way, text)


__all__ = ["build_edit", "note_text", "stub_text"]
