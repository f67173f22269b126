"""The session half of ``status`` for a Claude Code file in one pass, without the ``Session``.

``status`` of a 55 MB transcript read it twice (the adapter, then the billing scan) and built
the whole pydantic model to report a few figures (issue 27: 2.5 s against ccusage's 0.6 s).
Here each line is parsed once (``ccread``), the live steps are cut as the adapter cuts them
(``ccsteps``) and the report's ``Facts`` are computed from them. ``fast_facts`` returns None
whenever it cannot promise the full path's answer (another format, a line it does not
reproduce, a session with no recorded usage, which the tokenizer must count): the caller then
loads the ``Session``. tests/telemetry/test_status_fast.py compares the two reports.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

from contextfork.errors import ContextforkError
from contextfork.inputfile import BOM, open_regular
from contextfork.telemetry import accounting, cccache, ccread, ccsteps
from contextfork.telemetry.ccline import call_estimate
from contextfork.telemetry.scan import ScanState, merge_billing, subagent_files
from contextfork.telemetry.status import Facts, billing_data


def fast_facts(path: Path) -> Facts | None:
    """The report's figures of a Claude Code session file, or None: use the full path."""
    was_enabled = gc.isenabled()
    gc.disable()  # no cycles in parsed JSON: the collector's passes were a third of the time
    try:
        if not _is_claude_code(path):
            return None
        return _facts(path)
    except (ccread.Unsupported, ContextforkError):  # the full path says it again, its way
        return None
    finally:
        if was_enabled:
            gc.enable()


_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_CC_BOOKKEEPING = frozenset({"file-history-snapshot", "queue-operation", "summary"})
_SNIFF_BYTES = 1 << 20


def _is_claude_code(path: Path) -> bool:
    """``detect_format(path) == "claude-code"``, from the first line when it says so plainly
    (``detect``'s rule for that line: not Codex, ``claude_code.looks_like``), sparing the import
    of every adapter; any other file is left to ``detect_format`` itself."""
    with open_regular(path, "transcript") as fh:
        first = fh.readline(_SNIFF_BYTES)
    obj: Any = None
    if first.endswith(b"\n") and not first.startswith(BOM):
        try:
            obj = json.loads(first)
        except (ValueError, RecursionError):
            obj = None
    if isinstance(obj, dict) and type(obj.get("type", "")) is str:
        kind = obj.get("type")
        codex = kind in _CODEX_TYPES and "payload" in obj
        claude = ("parentUuid" in obj and "uuid" in obj) or (kind in _CC_BOOKKEEPING and (
            "messageId" in obj or "leafUuid" in obj or "operation" in obj))  # fmt: skip
        if claude and not codex:
            return True
    from contextfork.transcript.detect import detect_format

    return detect_format(path) == "claude-code"


def _subagents(path: Path) -> tuple[list[ScanState], int, int]:
    """(billing scans, subagents loaded, broken files) of ``path``'s ``subagents/``."""
    states: list[ScanState] = []
    loaded = broken = 0
    for sub in subagent_files(path):
        got = ccread.finish(ccread.read(sub, subagent=True))  # a ContextforkError: the full path decides
        states.append(got.billing)
        if got.records:
            loaded += 1
        else:  # the adapter refuses a file with no usable line and counts it as malformed
            broken += 1
    return states, loaded, broken


def _facts(path: Path) -> Facts | None:
    main = cccache.load_figures(path)  # the file unchanged since they were kept: no pass at all
    if main is None:
        got = cccache.read(path)
        if not got.lines:
            return None
        main = _figures(got)
        if main is None:
            return None
        cccache.keep_figures(path, got, main)
    subs, loaded, broken = _subagents(path)
    totals = merge_billing([main["billing"], *subs])
    totals["files"] = 1 + len(subs)
    acc = _recorded(main["total"], main["breakdown"], main["last_output_tokens"],
                    main["inherited_steps"])  # fmt: skip
    return Facts(
        info={
            "format": "claude-code", "session_id": main["session_id"], "path": str(path),
            "model": main["model"], "cwd": main["cwd"], "git_branch": main["git_branch"],
            "started_at": main["started_at"], "ended_at": main["ended_at"],
            "malformed_lines": main["malformed"] + broken, "subagents": loaded,
        },
        acc=acc, since_compaction=main["since_compaction"], n_steps=main["n_steps"],
        tool_calls=main["tool_calls"], tool_errors=main["tool_errors"],
        compactions=main["compactions"], touched=main["touched"], failed=main["failed"],
        billing=billing_data("ccusage", totals),
    )


def _figures(got: ccread.Read) -> dict[str, Any] | None:
    """What the report takes from the main file alone (``cccache.FIGURES`` names them; the
    subagents' files and the path are added each time), or None: the full path's work."""
    lines = got.lines
    live_ix = ccsteps.live(lines)
    cut = ccsteps.Cut(lines)
    for i in live_ix:
        cut.add(i)
    steps = cut.finish()
    ccsteps.mark_preserved(lines, live_ix, cut)
    acc = _account(lines, steps, cut)
    if acc is None:
        return None
    calls: list[tuple[Any, ...]] = []
    results: list[tuple[ccsteps.LStep, tuple[Any, ...]]] = []
    owner: dict[str, tuple[tuple[Any, ...], int]] = {}  # the last call of each id
    for s in steps:  # one pass over the blocks, not three
        for b in s.blocks:
            if b[0] == "call":
                calls.append(b)
                owner[b[1]] = (b, s.index)
            elif b[0] == "result":
                results.append((s, b))
    failed = []
    for s, r in results:
        if r[5] is None:
            continue
        call, step = owner.get(r[1], (None, s.index))
        failed.append(accounting.failure(step, (call[2], call[3]) if call else None, r[1], r[4], r[5]))
    cwd = next((lines[i].cwd for i in reversed(live_ix) if isinstance(lines[i].cwd, str)), None)
    branch = next((lines[i].branch for i in reversed(live_ix)
                   if isinstance(lines[i].branch, str)), None)  # fmt: skip
    sid = got.session_id
    model = next((s.model for s in reversed(steps) if s.model and s.model != "<synthetic>"), None)
    return {
        "session_id": sid if isinstance(sid, str) else None, "model": model, "cwd": cwd,
        "git_branch": branch, "started_at": got.first_ts, "ended_at": got.last_ts,
        "malformed": got.malformed, "total": acc.total, "breakdown": acc.breakdown,
        "last_output_tokens": acc.last_output_tokens, "inherited_steps": acc.inherited_steps,
        "since_compaction": len(_active(steps, cut)), "n_steps": len(steps),
        "tool_calls": len(calls), "tool_errors": sum(1 for _s, r in results if r[3]),
        "compactions": cut.compactions,
        "touched": accounting.touched_by(((c[2], c[3]) for c in calls), cwd)[0],
        "failed": failed, "billing": got.billing,
    }


def _active(steps: list[ccsteps.LStep], cut: ccsteps.Cut) -> list[ccsteps.LStep]:
    """``Session.live_steps``."""
    if not cut.compactions:
        return list(steps)
    start = cut.compactions[-1]["before_step"]
    return [s for s in steps if s.index >= start or s.preserved]


def _account(
    lines: list[ccread.Line], steps: list[ccsteps.LStep], cut: ccsteps.Cut
) -> accounting.Accounting | None:
    """``accounting.account`` when the session recorded its usage (None: it did not, and the
    tokenizer must count it: the full path's work)."""
    active = _active(steps, cut)
    copied = 0
    for s in steps:
        if not any(lines[i].forked for i in s.lines):
            break
        copied += 1
    folded = any(b[6] for s in steps[:copied] for b in s.blocks if b[0] == "result")
    own = [s for s in active if s.index > copied] if folded else active
    rec = next((s for s in reversed(own) if s.usage is not None
                and s.usage[0] + s.usage[1] + s.usage[2] > 0 and s.model != "<synthetic>"), None)  # fmt: skip
    if rec is None or rec.usage is None:
        return None
    total = rec.usage[0] + rec.usage[1] + rec.usage[2]
    est = dict.fromkeys(accounting.CATEGORIES, 0)
    for s in active:
        for b in s.blocks:
            est[_category(b)] += _estimate(b)
    return _recorded(total, accounting.scale_to(est, total), rec.usage[3], copied)


def _recorded(
    total: int, breakdown: dict[str, int], last_output: int, copied: int
) -> accounting.Accounting:
    """The accounting of a session whose last call recorded its usage."""
    return accounting.Accounting(
        total=total, source="recorded", breakdown=breakdown,
        breakdown_method="chars-scaled-to-recorded", scaled_to_recorded=True,
        last_output_tokens=last_output, inherited_steps=copied, includes_harness_overhead=True,
    )


def _category(b: tuple[Any, ...]) -> str:
    if b[0] == "est":
        return str(b[1])
    return "assistant_history" if b[0] == "call" else "tool_outputs"


def _estimate(b: tuple[Any, ...]) -> int:
    if b[0] == "call":
        return int(b[4]) if len(b) > 4 else call_estimate(b[2], b[3])
    return int(b[2])
