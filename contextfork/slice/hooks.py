"""SubagentStart (inject the role slice) and SubagentStop (fold the subagent back), per harness.

What the clients send was checked against Claude Code 2.1.328 and Codex 0.169.0 (docs/slice.md):
Claude Code's SubagentStart names the parent's transcript; Codex's names the child's rollout,
and the parent's is ``rollout-*-<session_id>.jsonl`` in the same folder. SubagentStop names the
subagent's own transcript in ``agent_transcript_path`` on both.

The subagent's transcript is folded into the cold store under its own key
``<parent session>.agent-<agent_id>`` and a record beside the parent's other hook state links
the two (``layout.subagent_record``): the agent type, the role and slice it was given, the
transcript's SHA-256, and the folded store. The start hook imports the stdlib and the store's
read path only; the stop hook may load the transcript adapters (it runs once per subagent).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from contextfork import layout

AGENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
HOOK_CAP = 9_500  # the hooks' additionalContext cap (hookrunner.MAX_CONTEXT_CHARS)


MAX_UNIT_BYTES = 64 * 1024 * 1024


def store_key(session_id: str, agent_id: str) -> str:
    """The cold-store session a subagent's transcript is folded under, step by step."""
    return f"{session_id}.agent-{agent_id}"


def unit_key(session_id: str, agent_id: str) -> str:
    """The store holding the subagent's whole transcript as one node (one step per version)."""
    return f"{store_key(session_id, agent_id)}.unit"


def result_key(session_id: str, agent_id: str) -> str:
    """The store holding the subagent's result (its last message) as one node per version."""
    return f"{store_key(session_id, agent_id)}.result"


def _fold_version(root: Path, key: str, summary: str, data: bytes, sha: str,
                  source: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """``data`` as one restorable node of store ``key``: step N+1 when it differs from the
    newest step N, else step N."""
    from contextfork.cold import api as cold_api
    from contextfork.cold.layout import step_of_name
    from contextfork.cold.store import node_files, read_node

    lay = cold_api.open_layout(root, key)
    steps = [s for s in (step_of_name(p.name) for p in node_files(lay)) if s is not None]
    newest = max(steps, default=0)
    if newest:
        node = read_node(lay, newest)
        if sha in (node["payload_sha256"], (node.get("source") or {}).get("original_sha256")):
            return {"session": key, "step": newest, "status": "unchanged",
                    "payload_sha256": node["payload_sha256"]}  # fmt: skip
    res = cold_api.fold_step(newest + 1, summary, data, repo=root, session=key,
                             source={**source, "original_sha256": sha})  # fmt: skip
    return {"session": key, "step": newest + 1, "status": res.data["status"],
            "payload_sha256": res.data["payload_sha256"]}  # fmt: skip


def _fold_unit(root: Path, session: str, agent_id: str, agent_type: str | None, transcript: Path,
               data: bytes, sha: str) -> dict[str, Any]:  # fmt: skip
    """The whole transcript file as one restorable node (one step per version)."""
    summary = f"subagent {agent_id} ({agent_type or 'agent'}) of session {session}: its whole transcript"
    return _fold_version(root, unit_key(session, agent_id), summary, data, sha, {
        "kind": "subagent", "file": transcript.name, "parent_session": session,
        "agent_id": agent_id, "agent_type": agent_type})  # fmt: skip


def _fold_result(root: Path, session: str, agent_id: str, agent_type: str | None,
                 text: str) -> dict[str, Any]:  # fmt: skip
    """The subagent's result (what the parent's agent call gets back) as one restorable node."""
    from contextfork.hashing import sha256_bytes

    data = text.encode("utf-8")
    summary = f"subagent {agent_id} ({agent_type or 'agent'}) of session {session}: its result"
    out = _fold_version(root, result_key(session, agent_id), summary, data, sha256_bytes(data), {
        "kind": "subagent-result", "parent_session": session, "agent_id": agent_id,
        "agent_type": agent_type})  # fmt: skip
    return {**out, "chars": len(text), "sha256": sha256_bytes(data)}


def agent_id_of(raw: dict[str, Any]) -> str | None:
    v = raw.get("agent_id")
    return v if isinstance(v, str) and AGENT_ID.fullmatch(v) else None


def agent_type_of(raw: dict[str, Any]) -> str | None:
    v = raw.get("agent_type")
    return v[:128] if isinstance(v, str) and v else None


def parent_transcript(transcript: Path | None, session_id: str | None, harness: str) -> Path | None:
    """The parent's transcript: as given (Claude Code), or the parent's rollout beside the
    child's (Codex names the child's rollout in SubagentStart); a parent started the day before
    (Codex files rollouts by date: ``sessions/YYYY/MM/DD/``) is looked for there too."""
    if transcript is None:
        return None
    if harness != "codex" or session_id is None or transcript.name.endswith(f"-{session_id}.jsonl"):
        return transcript
    folders = [transcript.parent]
    try:
        from datetime import date, timedelta  # lazy: hot path

        y, m, d = (int(p) for p in transcript.parent.parts[-3:])
        prev = date(y, m, d) - timedelta(days=1)
        folders.append(transcript.parent.parents[2] / f"{prev:%Y}" / f"{prev:%m}" / f"{prev:%d}")
    except (ValueError, IndexError):
        pass
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.startswith("rollout-") and entry.name.endswith(f"-{session_id}.jsonl"):
                        return Path(entry.path)
        except OSError:
            continue
    return None


def _write_record(root: Path, session_id: str, agent_id: str, update: dict[str, Any]) -> None:
    from contextfork import atomic  # lazy: hot path

    path = layout.subagent_record(root, session_id, agent_id)
    try:
        old = json.loads(path.read_bytes())
    except (OSError, ValueError):
        old = {}
    record = {**(old if isinstance(old, dict) else {}), **update}
    layout.ensure_state_dir(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_bytes(path, (json.dumps(record, indent=1, sort_keys=True) + "\n").encode("utf-8"))


def on_start(root: Path | None, session_id: str | None, transcript: Path | None, harness: str,
             raw: dict[str, Any]) -> tuple[str, dict[str, Any]]:  # fmt: skip
    """The slice for this subagent (text, info); ("", info) when there is nothing to give."""
    from contextfork.hashing import sha256_text  # lazy: hot path
    from contextfork.slice import roles as R  # lazy: hot path
    from contextfork.slice.build import slice_for  # lazy: hot path

    agent_id, agent_type = agent_id_of(raw), agent_type_of(raw)
    parent = parent_transcript(transcript, session_id, harness)
    slices = R.read_slices(root)
    role = R.role_for(agent_type, slices)
    spec = R.resolve(role, slices)
    budget = min(spec.budget if spec else R.DEFAULT_BUDGET, HOOK_CAP)
    from contextfork.slice.live import WAIT_SECONDS  # lazy: hot path

    out = slice_for(root, parent, role, agent_type=agent_type, session=session_id, budget=budget,
                    wait=WAIT_SECONDS if parent is not None else 0.0, agent_id=agent_id)  # fmt: skip
    text = str(out["text"])[:HOOK_CAP]
    info = {"agent_id": agent_id, "agent_type": agent_type, "role": out["role"], "chars": len(text),
            "blocks": len(out["blocks"]), "left": len(out["left"]), "task": out["task"],
            "sources": out["sources"]}  # fmt: skip
    if root is not None and session_id and agent_id:
        _write_record(root, session_id, agent_id, {
            "agent_id": agent_id, "agent_type": agent_type, "parent_session": session_id,
            "harness": harness, "role": out["role"],
            "slice": {"chars": len(text), "sha256": sha256_text(text), "blocks": out["blocks"],
                      "left": out["left"], "task": out["task"]},
        })  # fmt: skip
    return text, info


TRANSCRIPT_WAIT_SECONDS = 3.0


def _appeared(path: Path, agent_type: str | None) -> bool:
    """Whether the subagent's transcript exists, waiting a little for a typed agent's.

    Claude Code 2.1.328 fires SubagentStop for an Agent-tool subagent that is still listed as
    running, before its transcript file is written (seen with an idle machine: the file
    appeared after the hook), and for its compaction agent (``agent_type`` empty), which writes
    none. So a typed agent's file is waited for, briefly; an untyped one's is not."""
    import time

    if os.path.lexists(path):
        return True
    if not agent_type:
        return False
    deadline = time.monotonic() + TRANSCRIPT_WAIT_SECONDS
    while time.monotonic() < deadline:
        time.sleep(0.025)
        if os.path.lexists(path):
            return True
    return False


def on_stop(root: Path | None, session_id: str | None, harness: str, raw: dict[str, Any]) -> dict[str, Any]:
    """Fold the subagent's own transcript under its own key and link it to the parent."""
    from contextfork.cold import api as cold_api
    from contextfork.hashing import sha256_bytes, sha256_text
    from contextfork.inputfile import read_regular, require_regular

    agent_id, agent_type = agent_id_of(raw), agent_type_of(raw)
    path = raw.get("agent_transcript_path")
    if root is None or not session_id or agent_id is None or not isinstance(path, str) or not path:
        return {"action": "none", "reason": "no repository, session, agent id or agent transcript"}
    if not _appeared(Path(path).expanduser(), agent_type):
        return {"action": "none", "reason": "the subagent left no transcript", "agent_id": agent_id}
    transcript = require_regular(Path(path).expanduser(), "agent transcript")
    key = store_key(session_id, agent_id)
    data = read_regular(transcript, "agent transcript", limit=MAX_UNIT_BYTES)
    sha, size = sha256_bytes(data), len(data)
    unit = _fold_unit(root, session_id, agent_id, agent_type, transcript, data, sha)
    res = cold_api.fold_session(transcript, repo=root, session=key)
    last = raw.get("last_assistant_message")
    result = _fold_result(root, session_id, agent_id, agent_type, last) if isinstance(last, str) and last else None
    _write_record(root, session_id, agent_id, {
        "agent_id": agent_id, "agent_type": agent_type, "parent_session": session_id,
        "harness": harness, "store_session": key, "transcript": str(transcript),
        "transcript_sha256": sha, "transcript_bytes": size, "steps": res.data["steps"],
        "unit": unit, "result": result,
        "last_message": ({"sha256": sha256_text(last), "chars": len(last)}
                         if isinstance(last, str) else None),
    })  # fmt: skip
    return {"action": "fold", "agent_id": agent_id, "store_session": key, "steps": res.data["steps"],
            "written": res.data["written"], "unit": unit, "result": result}  # fmt: skip
