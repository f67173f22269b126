"""``contextfork slice`` and the MCP ``get_slice`` tool: one role's slice as a Result."""

from __future__ import annotations

import json
from pathlib import Path

from contextfork import layout
from contextfork.envelope import Result
from contextfork.errors import NotFoundError, UsageError
from contextfork.sessionids import check_session_id


def find_parent(session: str | None, transcript: Path | None, root: Path | None, cwd: Path) -> tuple[Path | None, str | None]:
    """The parent's transcript and session id: as given, else this project's session named
    ``session``, else its newest Claude Code session."""
    from contextfork.transcript.locate import current_transcript, project_dir

    if session is not None:
        check_session_id(session)
    if transcript is not None:
        if not transcript.is_file():
            raise NotFoundError(f"transcript {transcript} does not exist or is not a file")
        return transcript, session or _session_of(transcript)
    where = root or cwd
    if session is not None:
        cand = project_dir(where) / f"{session}.jsonl"
        if not cand.is_file():
            raise NotFoundError(f"no transcript of session {session} in {cand.parent}",
                                hint="pass --transcript PATH")  # fmt: skip
        return cand, session
    found = current_transcript(where)
    return found, _session_of(found) if found else None


def _session_of(path: Path) -> str | None:
    stem = path.stem
    if stem.startswith("rollout-") and len(stem) > 36:
        stem = stem[-36:]
    try:
        return check_session_id(stem)
    except UsageError:
        return None


def parse_argv(raw: str | None) -> list[str] | None:
    """``--child-argv``: a JSON list of strings (anything else is a usage error)."""
    if raw is None:
        return None
    try:
        argv = json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"--child-argv is not JSON: {exc}") from None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise UsageError("--child-argv must be a JSON list of strings")
    return argv


def slice_result(role: str | None, *, session: str | None = None, transcript: Path | None = None,
                 agent_type: str | None = None, budget: int | None = None, task: str | None = None,
                 repo: Path | None = None, cwd: Path | None = None,
                 child_argv: list[str] | None = None) -> Result:  # fmt: skip
    from contextfork.slice.build import slice_for
    from contextfork.slice.roles import pi_child

    if child_argv is not None and role is None and agent_type is None:
        agent_type, role = pi_child(child_argv)  # a child pi: its agent name or its tools
    if budget is not None and budget <= 0:
        raise UsageError(f"--budget must be a positive number of characters, not {budget}")
    if role is None and agent_type is None:
        role = "default"
    cwd = cwd or Path.cwd()
    root = layout.optional_repo(repo, cwd)
    path, sid = find_parent(session, transcript, root, cwd)
    out = slice_for(root, path, role, agent_type=agent_type, session=sid, budget=budget, task=task)
    out["transcript"] = str(path) if path else None
    text = out["text"] or f"(empty slice: nothing verified to give the {out['role']} role)"
    return Result("slice", data=out, text=text)
