"""``contextfork fork``: continue a Claude Code session in a folded copy, losing nothing.

The original transcript is only ever read. We export a package, fold every step into the cold
store of the original session, then write a new session file beside it (``forkplan``): the
original's live view — after a compaction, the boundary, the summary, the preserved segment
and what follows — under a new session id, each large tool result replaced by a verified stub.
Lines are written as compact JSON, as Claude Code writes them. Finally our own adapter must read
the fork back as the same conversation (same steps, same calls, same texts), or the fork is
removed and the command fails.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from contextfork import atomic, layout
from contextfork.envelope import Problem, Result
from contextfork.errors import ContextforkError, IntegrityError, UsageError
from contextfork.harness.forkplan import STUB_MIN_CHARS, build_fork, check_fork, is_stub_candidate
from contextfork.hashing import sha256_file, sha256_text


def window_tokens(session: Any) -> dict[str, int]:
    """History tokens (counted): o200k tokens of the conversation text, whole chain and after the
    last compaction. Not the context tokens (``telemetry.accounting.account``): no system prompt
    or tool definitions, and always counted — so it is reported under that label."""
    from contextfork.tokens import count_tokens

    live = {s.index for s in session.live_steps()}  # incl. a preserved segment
    chain = window = 0
    for s in session.steps:
        parts = []
        for b in s.blocks:
            if b.type in ("text", "thinking"):
                parts.append(b.text)
            elif b.type == "tool_call":
                parts.append(b.name + json.dumps(b.input, ensure_ascii=False))
            elif b.type == "tool_result":
                parts.append(b.content)
        n = count_tokens("\n".join(parts))
        chain += n
        if s.index in live:
            window += n
    return {"chain": chain, "window": window}


def _fmt(ctx: dict[str, Any]) -> str:
    from contextfork.telemetry.accounting import context_label

    total = ctx.get("total")
    return f"{total:,} ({context_label(ctx)})" if isinstance(total, int) else "unknown"


def _handoff_offer(info: dict[str, Any], session_id: str) -> list[str]:
    from contextfork.harness.hooks.commands import offer

    line = offer(Path(str(info.get("package_path") or "")), session_id) if info.get("package_path") else None
    return [line] if line else []


def _nothing_to_save(
    transcript: Path, orig_id: str, why: str, sha: str, size: int, package: str | None = None
) -> Result:
    """No fork is written: it would hold the same bytes (or more) and save no context."""
    data = {
        "original": str(transcript),
        "original_session_id": orig_id,
        "original_sha256": sha,
        "original_unchanged": True,
        "fork": None,
        "session_id": None,
        "package_id": package,
        "stubbed": 0,
        "bytes_before": size,
        "nothing_to_save": why,
        "resume_command": None,
    }
    text = f"Nothing to save: {why}. No fork written; keep using session {orig_id}." + (
        f" (package {package} was exported.)" if package else ""
    )
    return Result("fork", data=data, text=text)


def _brief_chars(repo: Path, package_id: str, new_id: str, shown: str | None) -> int:
    """What the fork's first request will carry beyond its messages: the resume brief its
    SessionStart hook injects (rendered now, without claiming the package), plus its heading."""
    from contextfork.resume.api import resume

    try:
        res = resume(repo, package_id, session_id=new_id, mark=False, shown_summary=shown)
    except ContextforkError:
        return 0
    return len(str(res.data.get("brief") or res.text or "")) + BRIEF_HEAD_CHARS


BRIEF_HEAD_CHARS = 400  # the session-start hook's heading around the brief (briefs.resume_brief)


def _summary_shown(session: Any, live: set[int]) -> str | None:
    """SHA-256 of the harness's compaction summary when the fork carries it (its step is in the
    live view): the brief then leaves out the parts harvested from it (``resume.brief``)."""
    from contextfork.package.harvest import find_summary

    found = find_summary(session)
    return sha256_text(found[1]) if found is not None and found[0] in live else None


def fork_session(
    repo: Path, transcript: Path, *, min_chars: int = STUB_MIN_CHARS, force: bool = False
) -> Result:
    """Fork ``transcript`` into the harness's session folder for ``repo``.

    The fork goes where ``claude --resume`` looks: ``${CLAUDE_CONFIG_DIR:-~/.claude}/projects/
    <slug of the repo>/``, wherever the source file was. A fork that would stub nothing (or be
    no smaller) is not written: exit 0 and say so. A fork of a fork keeps the stubs it has.

    What counts is the first request the resumed fork sends, not the file: the harness sends
    only its live view (after a compaction: the summary, the preserved segment and what
    follows), so only stubs there make it smaller, and the resume brief the fork gets at
    session start makes it bigger. When the stubs in the live view save no more than that
    brief adds, nothing is written unless ``force``.
    """
    from contextfork.harness.briefs import fold_and_export
    from contextfork.slice.units import units_by_call
    from contextfork.telemetry.accounting import context_tokens
    from contextfork.tokens import warm
    from contextfork.transcript import load_session
    from contextfork.transcript.detect import detect_format
    from contextfork.transcript.locate import project_dir

    transcript = transcript.expanduser()
    if detect_format(transcript) == "codex":  # before a parse: the rollout's fork makes its own
        from contextfork.harness.codex_fork import fork_rollout

        return fork_rollout(repo, transcript, min_chars=min_chars)
    # With its subagents (the export's seed reads them); our own, not shared: the fold lets its
    # steps' blocks go (issue 27), so whatever fork reads of them is taken before the fold.
    original = load_session(transcript, between=warm, shared=False,  # the fold counts tokens
                            outputs_in_file=True)  # fmt: skip
    if original.format != "claude-code":
        raise UsageError(
            f"{transcript} is a {original.format} transcript; fork writes Claude Code sessions "
            "and Codex rollouts"
        )
    orig_id = original.session_id or transcript.stem
    before_sha, before_size = sha256_file(transcript)
    live = {s.index for s in original.live_steps()}
    candidates = [
        s.index
        for s in original.steps
        for r in s.tool_results
        if is_stub_candidate(r.content, min_chars)
    ]
    if not candidates:
        return _nothing_to_save(
            transcript, orig_id, f"no tool result of at least {min_chars:,} chars to fold out",
            before_sha, before_size,
        )
    if not force and not live.intersection(candidates):
        return _nothing_to_save(
            transcript, orig_id,
            f"the harness no longer sends the {len(candidates)} large tool result(s): they are "
            "before its last compaction, so a fork would not make the next request smaller "
            "(--force forks anyway)",
            before_sha, before_size,
        )
    # What fork reads of the blocks, before the fold lets them go (and the export's seed).
    units = units_by_call(original, repo)  # the subagents' stores: the fold writes none
    shown = _summary_shown(original, live)
    cb, tb = context_tokens(original), window_tokens(original)
    info = fold_and_export(repo, transcript, orig_id, "claude-code", "fork", session=original,
                           release=True)  # fmt: skip
    new_id = str(uuid.uuid4())
    from contextfork.cold.decisions import load_decisions

    plan = build_fork(original, repo, orig_id, new_id, min_chars=min_chars,
                      decisions=load_decisions(repo, orig_id), units=units)
    n_steps = len(original.steps)
    del original  # the plan holds what is left to read: not both sessions at once (issue 27)
    size = sum(len(line.encode("utf-8")) for line in plan.lines)  # never the body whole twice
    # forced, a fork may stub nothing: it still leaves the lines before the compaction behind
    if (not plan.stubs and not force) or size >= before_size:
        why = (
            f"the fork would not be smaller ({size:,} bytes)"
            if plan.stubs or force
            else "no large tool result the harness still sends could be verified in the cold store"
        )
        return _nothing_to_save(
            transcript, orig_id, why, before_sha, before_size, info["package_id"]
        )
    saved = sum(int(s["chars"]) - int(s["stub_chars"]) for s in plan.stubs if s["position"] in live)
    added = _brief_chars(repo, str(info["package_id"]), new_id, shown)
    if not force and saved <= added:
        return _nothing_to_save(
            transcript, orig_id,
            f"the fork's first request would not be smaller: its stubs take {saved:,} chars "
            f"out of what the harness sends, its resume brief adds {added:,} (--force forks anyway)",
            before_sha, before_size, info["package_id"],
        )
    target = project_dir(repo) / f"{new_id}.jsonl"
    atomic.write_chunks(target, (line.encode("utf-8") for line in plan.lines))
    forked = load_session(target, include_subagents=False)
    problems = check_fork(forked, new_id, plan)
    after_sha, _ = sha256_file(transcript)
    if after_sha != before_sha:
        problems.append(
            Problem("error", "original_modified", f"{transcript} changed during the fork")
        )
    if any(p.severity == "error" for p in problems):
        target.unlink(missing_ok=True)
        raise IntegrityError(
            f"fork of {transcript.name} failed its read-back check: {problems[0].message}"
        )
    ca = context_tokens(forked)
    atomic.write_json(
        layout.fork_record(repo, new_id),
        {
            "session_id": new_id,
            "forked_from": orig_id,
            "transcript": str(target),
            "package_id": info["package_id"],
            "context_tokens": ca,
            "summary_sha256": shown,
        },
    )
    ta = window_tokens(forked)
    size_after = target.stat().st_size
    problems += [
        Problem("info", "kept_large_result", f"step {k['step']}: {k['reason']}")
        for k in plan.kept_large
    ]
    data = {
        "original": str(transcript),
        "original_session_id": orig_id,
        "original_sha256": before_sha,
        "original_unchanged": True,
        "fork": str(target),
        "session_id": new_id,
        "package_id": info["package_id"],
        "folded_steps": info.get("folded_steps"),
        "stubbed": len(plan.stubs),
        "stubbed_chars": sum(s["chars"] for s in plan.stubs),
        "next_request_chars_saved": saved,
        "brief_chars": added,
        "lines_left_out": plan.left_out,
        "summary_carried": shown is not None,
        "steps": n_steps,
        "bytes_before": before_size,
        "bytes_after": size_after,
        "context_tokens_before": cb,
        "context_tokens_after": ca,
        "history_tokens_before": tb,
        "history_tokens_after": ta,
        "resume_command": f"claude --resume {new_id}",
        "project_dir": str(target.parent),
    }
    text = "\n".join(
        [
            f"Forked session {orig_id} → {new_id}",
            f"  package:   {info['package_id']} (cold store: {info.get('folded_steps', 0)} steps folded)",
            f"  fork:      {target}",
            f"  stubbed:   {len(plan.stubs)} large tool results ({data['stubbed_chars']:,} chars), each verified in the cold store",
            *([f"  carried:   what the harness sends (the compaction summary and what follows); "
               f"{plan.left_out:,} earlier lines stay in the original and its cold store"]
              if plan.left_out else []),
            f"  next request: {saved:,} chars fewer in what the harness sends, {added:,} more for "
            f"the resume brief",
            f"  context tokens: {_fmt(cb)} → {_fmt(ca)} (what the next model call sends; "
            "the fork's figure is counted until the harness records its first call)",
            f"  history tokens (counted): {tb['window']:,} → {ta['window']:,} in the live window "
            f"({tb['chain']:,} → {ta['chain']:,} over the whole chain); {before_size:,} → {size_after:,} bytes",
            "  original:  unchanged (sha256 verified)",
            *_handoff_offer(info, orig_id),
            f"  resume:    in {repo} (Claude Code's session folder for it is {target.parent}):",
            "",
            f"claude --resume {new_id}",
        ]
    )
    return Result("fork", data=data, problems=problems, text=text)
