"""``contextfork fork``: continue a Claude Code session in a folded copy, losing nothing.

The original transcript is only ever read. We export a package, fold every step into the cold
store of the original session, then write a new session file beside it: new session id, fresh
uuids with every parent link remapped, ``forkedFrom`` on each line naming the original session
and line, and each large tool result replaced by a stub that names its step and SHA-256 and how
to page it back. A result is stubbed only after its exact text has been found, hash-equal,
inside the verified cold node of its step — so every stub is a promise the store can keep.
Lines are written as compact JSON, as Claude Code writes them. Finally our own adapter must read
the fork back as the same conversation (same steps, same calls, same texts), or the fork is
removed and the command fails.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextfork import atomic, layout
from contextfork.envelope import Problem, Result
from contextfork.errors import ContextforkError, IntegrityError, UsageError
from contextfork.forkstub import STUB_PREFIX, stub_text
from contextfork.harness.forkchain import rename_preserved
from contextfork.hashing import sha256_file, sha256_text

if TYPE_CHECKING:
    from contextfork.curate.state import Decisions

STUB_MIN_CHARS = 2_000


def result_text(content: Any) -> str:
    """The text of a tool_result's content (string, or text items joined by newlines)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if (
                isinstance(item, dict)
                and item.get("type") == "text"
                and isinstance(item.get("text"), str)
            ):
                parts.append(item["text"])
            elif isinstance(item, str):
                parts.append(item)
        return "\n".join(parts)
    return ""


def _has_binary(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(i, dict) and i.get("type") not in ("text", None) for i in content
    )


def _results_in_node(node: dict[str, Any]) -> dict[str, str]:
    """tool_use_id → sha256 of its result text, from a verified cold node's payload lines."""
    out: dict[str, str] = {}
    if node.get("content_encoding") != "utf-8":
        return out
    for line in str(node["content"]).splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        msg = obj.get("message") if isinstance(obj, dict) else None
        content = msg.get("content") if isinstance(msg, dict) else None
        if not isinstance(content, list):
            continue
        for b in content:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                out[str(b.get("tool_use_id"))] = sha256_text(result_text(b.get("content")))
    return out


def is_stub_candidate(text: str, min_chars: int) -> bool:
    """Large enough to fold out, and not already a stub (a fork of a fork keeps its stubs)."""
    return len(text) >= min_chars and not text.startswith(STUB_PREFIX)


@dataclass
class ForkPlan:
    new_id: str
    lines: list[str] = field(default_factory=list)
    stubs: list[dict[str, Any]] = field(default_factory=list)
    kept_large: list[dict[str, Any]] = field(default_factory=list)


def build_fork(
    session: Any, repo: Path, orig_id: str, new_id: str, *, min_chars: int = STUB_MIN_CHARS,
    decisions: Decisions | None = None,
) -> ForkPlan:
    """The fork's lines (pure: reads the cold store, writes nothing). A step the agent pinned
    or expanded (``contextfork context pin``) keeps its results raw in the fork. A subagent's
    result names the subagent's own folds too (one unit: ``slice.units``)."""
    from contextfork.cold.keyed import known_ids
    from contextfork.cold.layout import StoreLayout, check_session_id
    from contextfork.cold.store import read_node
    from contextfork.slice.units import stub_unit, units_by_call

    units = units_by_call(session, repo)
    store = StoreLayout(layout.cold_root(repo), check_session_id(orig_id))
    cold_ids = known_ids(store, session.steps)  # position -> the step's cold id (its key's)
    raw: dict[int, tuple[str, int]] = {}
    held: set[int] = set()  # line offsets of steps the agent holds raw
    # line offset -> the agent's brief, on the first step of its span only (as the renderer
    # shows it once): repeated on every stub it could outgrow the results it stands for
    briefs: dict[int, str] = {}
    position: dict[int, int] = {}  # line offset -> the step's transcript position
    for step in session.steps:
        brief = decisions.briefs.get(step.identity) if decisions is not None else None
        for r in step.raw:
            position.setdefault(r.offset, step.index)
            raw.setdefault(r.offset, (r.text, cold_ids.get(step.index, step.index)))
            if decisions is not None and decisions.held_raw(step.identity):
                held.add(r.offset)
            if brief is not None:
                briefs.setdefault(r.offset, brief.text)
    objs = {offset: json.loads(text) for offset, (text, _) in raw.items()}
    # Every new uuid up front: a compaction boundary names its summary line, which comes after it.
    renamed = {
        str(o["uuid"]): str(uuid.uuid4()) for o in objs.values() if isinstance(o.get("uuid"), str)
    }
    verified: dict[int, dict[str, str]] = {}
    uuids: dict[str, str] = {}
    plan = ForkPlan(new_id)
    last_new: str | None = None
    for offset in sorted(raw):
        step_index = raw[offset][1]
        obj = objs[offset]
        old = obj.get("uuid")
        new_uuid = renamed.get(old) if isinstance(old, str) else None
        if isinstance(old, str) and new_uuid:
            uuids[old] = new_uuid
        rename_preserved(obj, renamed)
        for key in ("parentUuid", "logicalParentUuid"):
            if isinstance(obj.get(key), str):
                mapped = uuids.get(obj[key])
                if key == "parentUuid":
                    obj[key] = mapped or last_new  # a parent outside the live chain: previous line
                elif mapped:
                    obj[key] = mapped
                else:
                    del obj[key]
        if isinstance(obj.get("sourceToolAssistantUUID"), str):
            obj["sourceToolAssistantUUID"] = uuids.get(obj["sourceToolAssistantUUID"], last_new)
        if "sessionId" in obj:
            obj["sessionId"] = new_id
        if new_uuid:
            obj["uuid"] = new_uuid
            last_new = new_uuid
        obj["forkedFrom"] = (
            {"sessionId": orig_id, "messageUuid": old}
            if isinstance(old, str)
            else {"sessionId": orig_id}
        )
        msg = obj.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        if obj.get("type") == "user" and isinstance(content, list):
            stubbed_here = False
            for b in content:
                if not (isinstance(b, dict) and b.get("type") == "tool_result"):
                    continue
                body = result_text(b.get("content"))
                if is_stub_candidate(body, min_chars) is False or _has_binary(b.get("content")):
                    continue
                if offset in held:
                    plan.kept_large.append({"step": step_index, "call_id": str(b.get("tool_use_id")),
                                            "chars": len(body), "reason": "held raw by the agent (pin or expand)"})
                    continue
                sha = sha256_text(body)
                if step_index not in verified:
                    verified[step_index] = _results_in_node(read_node(store, step_index))
                call = str(b.get("tool_use_id"))
                if verified[step_index].get(call) != sha:
                    plan.kept_large.append(
                        {
                            "step": step_index,
                            "call_id": call,
                            "chars": len(body),
                            "reason": "not byte-exact in the cold store (redacted?)",
                        }
                    )
                    continue
                unit = stub_unit(units.get(call), b.get("content"))
                b["content"] = stub_text(step_index, body, sha, orig_id, briefs.pop(offset, None), unit)
                plan.stubs.append(
                    {"step": step_index, "call_id": call, "chars": len(body), "sha256": sha,
                     "brief": offset in briefs, "stub_chars": len(b["content"]),
                     "position": position.get(offset), "subagent": unit}
                )
                stubbed_here = True
            if stubbed_here:
                obj.pop("toolUseResult", None)  # the UI copy of the same bytes
        plan.lines.append(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
    return plan


def _conversation(session: Any) -> list[tuple[Any, ...]]:
    """What must survive a fork: per step, texts, calls and which results exist (not their size)."""
    out = []
    for s in session.steps:
        texts = tuple(b.text for b in s.blocks if b.type == "text")
        calls = tuple((c.id, c.name) for c in s.tool_calls)
        results = tuple(r.call_id for r in s.tool_results)
        out.append((texts, calls, results))
    return out


def check_fork(original: Any, forked: Any, new_id: str, plan: ForkPlan) -> list[Problem]:
    problems: list[Problem] = []
    if forked.format != "claude-code" or forked.session_id != new_id:
        problems.append(
            Problem(
                "error",
                "fork_identity",
                f"fork reads back as {forked.format} "
                f"session {forked.session_id}, expected {new_id}",
            )
        )
    if _conversation(original) != _conversation(forked):
        problems.append(
            Problem(
                "error", "fork_incoherent", "the fork does not read back as the same conversation"
            )
        )
    uuids: set[str] = set()
    for line in plan.lines:
        obj = json.loads(line)
        parent = obj.get("parentUuid")
        if isinstance(parent, str) and parent not in uuids:
            problems.append(
                Problem(
                    "error", "fork_dangling_parent", f"parentUuid {parent} is not an earlier line"
                )
            )
            break
        if isinstance(obj.get("uuid"), str):
            uuids.add(obj["uuid"])
    def stubs(session: Any) -> int:
        return sum(
            1 for s in session.steps for r in s.tool_results if r.content.startswith(STUB_PREFIX)
        )

    stubbed = stubs(forked) - stubs(original)  # a fork of a fork already holds stubs
    if stubbed != len(plan.stubs):
        problems.append(
            Problem(
                "error", "fork_stub_count", f"{stubbed} stubs read back, {len(plan.stubs)} written"
            )
        )
    return problems


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
    from contextfork.harness.commands import offer

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


def _brief_chars(repo: Path, package_id: str, new_id: str) -> int:
    """What the fork's first request will carry beyond its messages: the resume brief its
    SessionStart hook injects (rendered now, without claiming the package), plus its heading."""
    from contextfork.resume.api import resume

    try:
        res = resume(repo, package_id, session_id=new_id, mark=False)
    except ContextforkError:
        return 0
    return len(str(res.data.get("brief") or res.text or "")) + BRIEF_HEAD_CHARS


BRIEF_HEAD_CHARS = 400  # the session-start hook's heading around the brief (briefs.resume_brief)


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
    from contextfork.telemetry.accounting import context_tokens
    from contextfork.transcript import load_session
    from contextfork.transcript.locate import project_dir

    transcript = transcript.expanduser()
    original = load_session(transcript, include_subagents=False)
    if original.format == "codex":
        from contextfork.harness.codex_fork import fork_rollout

        return fork_rollout(repo, transcript, min_chars=min_chars)
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
    info = fold_and_export(repo, transcript, orig_id, "claude-code", "fork")
    new_id = str(uuid.uuid4())
    from contextfork.curate.state import load_decisions

    plan = build_fork(original, repo, orig_id, new_id, min_chars=min_chars,
                      decisions=load_decisions(repo, orig_id))
    body = "".join(plan.lines)
    if not plan.stubs or len(body.encode("utf-8")) >= before_size:
        why = (
            "no large tool result could be verified in the cold store"
            if not plan.stubs
            else f"the fork would not be smaller ({len(body.encode('utf-8')):,} bytes)"
        )
        return _nothing_to_save(
            transcript, orig_id, why, before_sha, before_size, info["package_id"]
        )
    saved = sum(int(s["chars"]) - int(s["stub_chars"]) for s in plan.stubs if s["position"] in live)
    added = _brief_chars(repo, str(info["package_id"]), new_id)
    if not force and saved <= added:
        return _nothing_to_save(
            transcript, orig_id,
            f"the fork's first request would not be smaller: its stubs take {saved:,} chars "
            f"out of what the harness sends, its resume brief adds {added:,} (--force forks anyway)",
            before_sha, before_size, info["package_id"],
        )
    target = project_dir(repo) / f"{new_id}.jsonl"
    atomic.write_text(target, body)
    forked = load_session(target, include_subagents=False)
    problems = check_fork(original, forked, new_id, plan)
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
    cb, ca = context_tokens(original), context_tokens(forked)
    atomic.write_json(
        layout.fork_record(repo, new_id),
        {
            "session_id": new_id,
            "forked_from": orig_id,
            "transcript": str(target),
            "package_id": info["package_id"],
            "context_tokens": ca,
        },
    )
    tb, ta = window_tokens(original), window_tokens(forked)
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
        "steps": len(original.steps),
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
