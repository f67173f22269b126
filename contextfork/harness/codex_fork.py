"""``contextfork fork`` of a Codex rollout: a folded rollout that ``codex resume`` accepts.

As for Claude Code (``harness.fork``): the original is only read; every step is folded into the
cold store of the original session and a package is exported first; then a new rollout is
written under ``$CODEX_HOME/sessions/YYYY/MM/DD/`` with a new session id (``session_meta``), and
each large command output (``function_call_output``) replaced by the stub that names its step,
its SHA-256 and how to page it back — only after the exact line holding it has been found in the
verified cold node of its step. The fork must read back as the same conversation (same steps,
same calls) or it is removed and the command fails.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contextfork import atomic, layout
from contextfork.envelope import Problem, Result
from contextfork.errors import IntegrityError
from contextfork.forkstub import STUB_PREFIX, stub_text
from contextfork.hashing import sha256_file, sha256_text

_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _sessions_dir() -> Path:
    home = os.environ.get("CODEX_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".codex") / "sessions"


def _output_of(obj: dict[str, Any]) -> str | None:
    payload = obj.get("payload")
    if obj.get("type") != "response_item" or not isinstance(payload, dict):
        return None
    if payload.get("type") not in _OUTPUTS or not isinstance(payload.get("output"), str):
        return None
    return str(payload["output"])


class _NothingStubbed(Exception):
    """Ends the fork's write before its file appears: no output could be stubbed."""


def _forked_lines(rollout: Path, new_id: str, orig_id: str, min_chars: int,
                  step_of: dict[int, int], read_node: Callable[[int], dict[str, Any]],
                  stubs: list[dict[str, Any]]) -> Iterator[bytes]:  # fmt: skip
    """The fork's lines, one at a time (the rollout is never held whole): each large output
    whose exact line is in the verified node of its step is stubbed (appended to ``stubs``).
    A line that is not UTF-8 JSON passes through byte for byte."""
    node: tuple[int, str] | None = None  # the last step's verified content: a step's lines are adjacent
    offset = 0
    with open(rollout, "rb") as fh:
        for raw in fh:
            here, offset = offset, offset + len(raw)
            try:
                text = raw.decode("utf-8").rstrip("\n")
                obj = json.loads(text)
            except ValueError:  # not UTF-8 (UnicodeDecodeError is one) or not JSON
                yield raw if raw.endswith(b"\n") else raw + b"\n"
                continue
            payload = obj.get("payload") if isinstance(obj, dict) else None
            if isinstance(obj, dict) and obj.get("type") == "session_meta" and isinstance(payload, dict):
                payload["id"] = new_id
                payload["forked_from"] = orig_id
            body = _output_of(obj) if isinstance(obj, dict) else None
            cold_step = step_of.get(here)
            if body is not None and cold_step is not None and len(body) >= min_chars \
                    and not body.startswith(STUB_PREFIX):  # fmt: skip
                if node is None or node[0] != cold_step:
                    node = (cold_step, str(read_node(cold_step).get("content") or ""))
                if text in node[1]:  # the exact line, inside the verified node of its step
                    sha = sha256_text(body)
                    assert isinstance(payload, dict)
                    payload["output"] = stub_text(cold_step, body, sha, orig_id)
                    stubs.append({"step": cold_step, "call_id": payload.get("call_id"),
                                  "chars": len(body), "sha256": sha})  # fmt: skip
            try:
                yield (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate (``\\ud800`` in the line) stays escaped
                yield (json.dumps(obj, separators=(",", ":")) + "\n").encode("ascii")
    if not stubs:
        raise _NothingStubbed


def fork_rollout(repo: Path, rollout: Path, *, min_chars: int) -> Result:
    from contextfork.cold.keyed import known_ids
    from contextfork.cold.layout import StoreLayout, check_session_id
    from contextfork.cold.store import read_node
    from contextfork.harness.briefs import fold_and_export
    from contextfork.harness.hooks.commands import offer
    from contextfork.tokens import warm
    from contextfork.transcript import load_session

    # Our own parse, not shared: the fold lets its steps' blocks go (issue 27); what the fork
    # reads of them (each step's calls) is taken first.
    original = load_session(rollout, between=warm, shared=False,  # the fold counts tokens
                            outputs_in_file=True)  # fmt: skip
    orig_id = original.session_id or rollout.stem
    before_sha, before_size = sha256_file(rollout)
    calls = [len(s.tool_calls) for s in original.steps]
    info = fold_and_export(repo, rollout, orig_id, "codex", "fork", session=original, release=True)
    store = StoreLayout(layout.cold_root(repo), check_session_id(orig_id))
    cold_ids = known_ids(store, original.steps)
    step_of: dict[int, int] = {}  # line offset -> cold step id
    for step in original.steps:
        for r in step.raw:
            step_of[r.offset] = cold_ids.get(step.index, step.index)
    del original  # the fork is written from the file and the store
    new_id = str(uuid.uuid4())
    stubs: list[dict[str, Any]] = []
    now = datetime.now(UTC)
    target = _sessions_dir() / now.strftime("%Y/%m/%d") / (
        f"rollout-{now.strftime('%Y-%m-%dT%H-%M-%S')}-{new_id}.jsonl")  # fmt: skip
    try:
        atomic.write_chunks(target, _forked_lines(rollout, new_id, orig_id, min_chars, step_of,
                                                  lambda sid: read_node(store, sid), stubs))  # fmt: skip
    except _NothingStubbed:
        return Result("fork", data={"original": str(rollout), "original_session_id": orig_id,
                                    "fork": None, "session_id": None,
                                    "package_id": info["package_id"], "stubbed": 0,
                                    "nothing_to_save": f"no output of at least {min_chars:,} "
                                                       "chars could be verified in the cold store"},
                      text=f"Nothing to save: no command output of at least {min_chars:,} chars "
                           f"to fold out. No fork written; keep using session {orig_id}.")  # fmt: skip
    forked = load_session(target, include_subagents=False)
    problems: list[Problem] = []
    same = calls == [len(s.tool_calls) for s in forked.steps]
    if forked.session_id != new_id or not same:
        problems.append(Problem("error", "fork_readback", "the fork does not read back as the "
                                "same conversation"))  # fmt: skip
    if sha256_file(rollout)[0] != before_sha:
        problems.append(Problem("error", "original_modified", f"{rollout} changed during the fork"))
    if problems:
        target.unlink(missing_ok=True)
        raise IntegrityError(f"fork of {rollout.name} failed its read-back check: "
                             f"{problems[0].message}")  # fmt: skip
    atomic.write_json(layout.fork_record(repo, new_id), {
        "session_id": new_id, "forked_from": orig_id, "transcript": str(target),
        "package_id": info["package_id"]})  # fmt: skip
    chars = sum(int(s["chars"]) for s in stubs)
    after = target.stat().st_size
    offered = offer(Path(str(info["package_path"])), orig_id)
    text = "\n".join([
        f"Forked Codex session {orig_id} → {new_id}",
        f"  package:   {info['package_id']} (cold store: {info.get('folded_steps', 0)} steps folded)",
        f"  fork:      {target}",
        f"  stubbed:   {len(stubs)} large command outputs ({chars:,} chars), each verified in the "
        "cold store",
        f"  bytes:     {before_size:,} → {after:,}; original unchanged (sha256 verified)",
        *([offered.replace("claude --resume", "codex resume").replace("`/handoff`",
                                                                      "`/prompts:handoff`")]
          if offered else []),
        "", f"codex resume {new_id}",
    ])  # fmt: skip
    return Result("fork", data={
        "original": str(rollout), "original_session_id": orig_id, "original_sha256": before_sha,
        "original_unchanged": True, "fork": str(target), "session_id": new_id,
        "package_id": info["package_id"], "stubbed": len(stubs), "stubbed_chars": chars,
        "bytes_before": before_size, "bytes_after": after,
        "resume_command": f"codex resume {new_id}"}, text=text)  # fmt: skip
