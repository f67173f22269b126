"""``contextfork fork --role ROLE``: a fresh session that carries only a role's slice of the parent.

For handing a task to a new session by hand: the parent is folded into its cold store and a
package is exported (as ``fork`` does), then a new Claude Code session is written into the
project's session folder whose one message is the slice — verified blocks labelled with their
step and payload_sha256 — and a fork record links it to the parent, so the prompt hook pages
the parent's folded steps back in on demand. The original transcript is never modified.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

from contextfork import atomic, layout
from contextfork.envelope import Result
from contextfork.errors import IntegrityError, UsageError
from contextfork.hashing import sha256_file


def _user_line(session_id: str, cwd: Path, text: str, branch: str | None) -> str:
    obj = {
        "parentUuid": None, "isSidechain": False, "type": "user",
        "message": {"role": "user", "content": text}, "uuid": str(uuid.uuid4()),
        "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "userType": "external", "cwd": str(cwd), "sessionId": session_id,
        "gitBranch": branch or "",
    }  # fmt: skip
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


def _branch(session: object) -> str | None:
    """The git branch the parent's newest line names (Claude Code writes it on every line)."""
    steps = getattr(session, "steps", [])
    if not steps or not steps[-1].raw:
        return None
    try:
        value = json.loads(steps[-1].raw[-1].text).get("gitBranch")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def fork_role(repo: Path, transcript: Path, role: str, *, budget: int | None = None,
              task: str | None = None) -> Result:  # fmt: skip
    from contextfork.checkpoint import fold_and_export
    from contextfork.slice import roles as R
    from contextfork.slice.build import slice_for
    from contextfork.tokens import warm
    from contextfork.transcript import load_session
    from contextfork.transcript.locate import project_dir

    slices = R.read_slices(repo)
    if R.resolve(role, slices) is None:  # before anything is folded or exported
        raise UsageError(f"unknown role {role!r}", hint="roles: " + ", ".join(R.role_names(slices)))
    transcript = transcript.expanduser()
    # With its subagents, as ``fork`` does: the export's seed is taken from it. Our own, not
    # shared: the fold lets its steps' blocks go (a 55 MB parent held 2.09 B/B; issue 27).
    original = load_session(transcript, between=warm, shared=False,  # the fold counts tokens
                            outputs_in_file=True)  # fmt: skip
    if original.format != "claude-code":
        raise UsageError(f"{transcript} is a {original.format} transcript; fork writes Claude Code sessions")
    orig_id = original.session_id or transcript.stem
    before_sha, before_size = sha256_file(transcript)
    branch = _branch(original)
    info = fold_and_export(repo, transcript, orig_id, "claude-code", "fork", session=original,
                           release=True)  # fmt: skip
    del original  # the slice is read from the store
    out = slice_for(repo, transcript, role, agent_type=None, session=orig_id, budget=budget, task=task or "")
    if not out["text"]:
        raise UsageError(f"nothing verified to carry for the {out['role']} role from {transcript.name}",
                         hint="fork without --role keeps the whole conversation, folded")  # fmt: skip
    new_id = str(uuid.uuid4())
    intro = (f"This session continues session {orig_id} with only what the {out['role']} role "
             "needs of it (below). Read any step in full with `contextfork fold show STEP "
             f"--session {orig_id}`.\n\n")  # fmt: skip
    target = project_dir(repo) / f"{new_id}.jsonl"
    atomic.write_text(target, _user_line(new_id, repo, intro + out["text"], branch))
    if sha256_file(transcript)[0] != before_sha:
        target.unlink(missing_ok=True)
        raise IntegrityError(f"{transcript} changed during the fork")
    atomic.write_json(layout.fork_record(repo, new_id), {
        "session_id": new_id, "forked_from": orig_id, "transcript": str(target),
        "package_id": info.get("package_id"), "role": out["role"],
    })  # fmt: skip
    data = {"original": str(transcript), "original_session_id": orig_id, "original_sha256": before_sha,
            "original_unchanged": True, "original_bytes": before_size, "fork": str(target),
            "session_id": new_id, "role": out["role"], "package_id": info.get("package_id"),
            "folded_steps": info.get("folded_steps"), "slice_chars": out["chars"],
            "blocks": out["blocks"], "left": out["left"],
            "resume_command": f"claude --resume {new_id}"}  # fmt: skip
    text = "\n".join([
        f"Forked session {orig_id} → {new_id} carrying the {out['role']} slice",
        f"  package:  {info.get('package_id')} (cold store: {info.get('folded_steps', 0)} steps folded)",
        f"  slice:    {out['chars']:,} chars, {len(out['blocks'])} verified blocks, {len(out['left'])} named to peek",
        f"  fork:     {target}",
        "  original: unchanged (sha256 verified)",
        "",
        f"claude --resume {new_id}",
    ])  # fmt: skip
    return Result("fork", data=data, text=text)
