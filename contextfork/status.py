"""``contextfork status``: the IPSF context metrics of a session plus the state of its repository.

Works with only a transcript (no repository), only a repository (no transcript found), or both.
The session's figures are ``contextfork.telemetry.status``; this module adds the git state and
the latest package, so it sits above ``telemetry`` and ``package``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextfork import gitstate, layout
from contextfork.envelope import Problem, Result
from contextfork.errors import ContextforkError
from contextfork.package.store import list_packages
from contextfork.telemetry import proxystats
from contextfork.telemetry.ccstatus import fast_facts
from contextfork.telemetry.report import render_text
from contextfork.telemetry.status import Facts, facts, now_iso, policy_data, telemetry_of
from contextfork.transcript.locate import current_transcript

# The report is built as JSON values, each part as its model in ``telemetry.models`` dumps it
# (tests/telemetry/test_status_plain.py validates it against ``Telemetry``): pydantic is not
# imported for a Claude Code session in a repository with no policy.json and no package.


def git_info(root: Path) -> dict[str, Any]:
    head = gitstate.head(root)
    st = gitstate.status(root)
    staged = sum(1 for e in st.entries if e.kind != "u" and e.xy[:1] not in (".", "?", " "))
    modified = sum(1 for e in st.entries if e.kind != "u" and e.xy[1:2] == "M")
    deleted = sum(1 for e in st.entries if "D" in e.xy and e.kind != "u")
    renamed = sum(1 for e in st.entries if e.kind == "2")
    conflicts = sum(1 for e in st.entries if e.kind == "u")
    return {
        "root": str(root), "branch": head.branch, "detached": head.detached,
        "unborn": head.unborn, "head": head.sha, "staged": staged, "modified": modified,
        "deleted": deleted, "renamed": renamed, "untracked": len(st.untracked),
        "conflicts": conflicts, "dirty": bool(st.entries or st.untracked),
        "latest_package": latest_package(root), "error": None,
    }


def latest_package(root: Path) -> dict[str, Any] | None:
    """The newest package a session would be offered (``contextfork.provenance``)."""
    refs = list_packages(root)
    if not refs:
        return None
    # lazy: start-up time (most repositories `status` looks at hold no package yet)
    from contextfork import provenance
    from contextfork.package.validate import validate_package

    offered = (r for r in reversed(refs) if provenance.standing(root, r.package_id, r.path).offered)
    ref = next(offered, None)
    if ref is None:
        return None
    v = validate_package(ref.path, root)
    warnings = sum(1 for p in v.problems if p.severity == "warning")
    return {
        "package_id": ref.package_id, "path": str(ref.path), "valid": not v.errors,
        "errors": len(v.errors), "warnings": warnings,
    }


def session_facts(path: Path) -> Facts:
    """The session's figures: in one lean pass for a Claude Code file
    (``contextfork.telemetry.ccstatus``), else (or when that pass declines) from its
    ``Session``."""
    found = fast_facts(path)
    if found is not None:
        return found
    from contextfork.transcript import load_session  # lazy: the full path (pydantic)

    return facts(load_session(path, outputs_in_file=True))


def find_transcript(transcript: Path | None, root: Path | None, cwd: Path) -> Path | None:
    if transcript is not None:
        return transcript
    for where in dict.fromkeys([cwd, *([root] if root else [])]):
        found = current_transcript(where)
        if found is not None:
            return found
    return None


def build_status(
    transcript: Path | None = None,
    repo: Path | None = None,
    cwd: Path | None = None,
    *,
    context_window: int | None = None,
) -> Result:
    """The whole report as a ``Result`` whose data validates against context-telemetry."""
    cwd = cwd or Path.cwd()
    root = layout.optional_repo(repo, cwd)
    pol = policy_data(root)
    notes: list[str] = []
    problems: list[Problem] = []
    path = find_transcript(transcript, root, cwd)
    parts: dict[str, Any] = {
        "session": None, "tokens": None, "steps": None, "compactions": [],
        "touched_files": [], "failed_commands": [], "billing": None, "risk": None,
    }
    if path is None:
        notes.append("no transcript: pass --transcript P (no Claude Code session found here)")
    else:
        found = session_facts(path)
        parts.update(telemetry_of(found, pol["policy"], context_window=context_window))
        session_id, malformed = found.info["session_id"], found.info["malformed_lines"]
        if root is not None and session_id:
            figures = proxystats.read(root, session_id)
            parts["proxy"] = _proxy(proxystats.summary(figures)) if figures else None
        if malformed:
            problems.append(
                Problem("warning", "malformed_lines",
                        f"{malformed} malformed line(s) skipped", str(path))
            )
    git: dict[str, Any] | None = None
    if root is None:
        notes.append("not inside a git repository: git state omitted (pass --repo PATH)")
    else:
        try:
            git = git_info(root)
        except ContextforkError as err:
            problems.append(Problem("warning", "git_state", err.one_line(), str(root)))
    data = {"telemetry_version": "1", "generated_at": now_iso(),
            **{k: parts[k] for k in _PARTS}, "policy": pol, "git": git,
            "proxy": parts.get("proxy"), "notes": notes}  # fmt: skip
    return Result(command="status", data=data, problems=problems, text=render_text(data))


_PARTS = ("session", "tokens", "steps", "compactions", "touched_files", "failed_commands",
          "billing", "risk")  # fmt: skip


def _proxy(summary: dict[str, Any]) -> dict[str, Any]:
    """The ``proxy`` part, through its model (a session the proxy saw: rare, and its figures
    come from a file that pydantic's coercions keep as they always were)."""
    from contextfork.telemetry.models import ProxyInfo

    return ProxyInfo(**summary).model_dump(mode="json")
