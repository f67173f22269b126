"""``contextfork mcp``: the IPSF tools and the fold tools over MCP (stdio), for any agent.

The package tools are here; the page-in tools (``scan_context``, ``hydrate_step``, ``peek_fold``,
``get_slice``) are in ``pagein`` and the curation verb in ``curate``; ``build_server`` registers all.

The only module that imports ``mcp`` (an optional extra costing ~1 s to import, so never on a
hook's path). Every tool takes the workspace as a path a model wrote, so each one goes through
``allowed_roots`` first: the workspace, its git root, any package or transcript path must lie
inside ``CONTEXTFORK_ALLOWED_ROOTS`` with no ``..`` and no symlink on the way. Tools return the
same versioned JSON envelope as ``--json``; a refused or failed call is an MCP tool error whose
text is the one-line reason.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer

from contextfork.envelope import Result
from contextfork.harness.mcp.common import (
    call_tool,
    roots,
    transcript_arg,
    workspace_root,
)
from contextfork.harness.mcp.curate import contextfork_context
from contextfork.harness.mcp.pagein import get_slice, hydrate_step, peek_fold, scan_context
from contextfork.package.handoff import unfilled
from contextfork.package.models import ActiveGoal, Decision, FailedApproach, NextAction, Risk

T = TypeVar("T")

INSTRUCTIONS = """contextfork keeps long coding sessions lossless.
- get_context_status: how full the context is and what the policy recommends.
- export_session_context: write a verified handoff package; pass the handoff parts as fields
  (goal, decisions, failed approaches with the action to bar, risks, next action). Part 3 (the
  working tree) is filled from git. Cited evidence is checked (file in tree or diff, commit,
  step = your tool call id and the `quoted` words its result holds, command + "exit N", test
  path::name); a false citation refuses the export, one problem per line.
- validate_session_context / resume_session_context / get_package_details /
  read_handoff_summary / clean_session_context (dry run unless confirm=true): packages.
- scan_context / hydrate_step / peek_fold: page exact earlier details back from the cold store;
  peek_fold(store="render") also reads the originals the renderer removed (<session>-render).
- get_slice(role | agent_type, transcript_path | session_id): the parent session's slice for a
  subagent role (planner, coder, tester, reviewer, explorer, default), verified blocks labelled
  with their step and payload_sha256, within a budget in characters.
- contextfork_context(verb, session_id, args): curate the folds (status, peek, expand, refold,
  pin, unpin, brief, reboundary, unmark); decisions shape what `fork` stubs and page-in prefers.
All paths must lie inside CONTEXTFORK_ALLOWED_ROOTS."""


def package_spec(root: Path, package: str | None) -> str | None:
    """An absolute package directory: a bare id (or prefix) looked up among the workspace's
    own packages only (never the server's working directory), anything path-like checked
    against the allowed roots."""
    if not package:
        return None
    from contextfork.package import store

    if "\x00" in package or not store.is_bare_id(package) or package.startswith("."):
        relative = "\x00" not in package and not Path(package).is_absolute()
        given = str(root / package) if relative else package  # relative to the workspace
        return str(roots().check(given, what="package"))
    return str(store.resolve_in(root, package).path)


def _dump(value: Any) -> Any:
    if isinstance(value, list):
        return [_dump(v) for v in value]
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", exclude_unset=True) if dump else value


# ------------------------------------------------------------------------- tool bodies


def get_context_status(
    workspace: str | None = None, transcript_path: str | None = None
) -> dict[str, Any]:
    """Footprint, breakdown, risk level and recommendation of the session, plus the git state."""

    def run() -> Result:
        from contextfork.status import build_status

        root = workspace_root(workspace)
        return build_status(transcript_arg(transcript_path), root, root)

    return call_tool(run)


def export_session_context(
    workspace: str | None = None,
    active_goal: ActiveGoal | None = None,
    settled_decisions: list[Decision] | None = None,
    failed_approaches: list[FailedApproach] | None = None,
    open_risks: list[Risk] | None = None,
    next_action: NextAction | None = None,
    session_id: str | None = None,
    transcript_path: str | None = None,
) -> dict[str, Any]:
    """Export a handoff package: the parts you pass, git's exact state, schema-validated.

    Part 3 (working tree) is machine-filled. Failed approaches need a barred_action (what the
    next session must not retry). Evidence is checked claim by claim (file, commit, step: a tool
    call id with `quoted` words from its result, command with "exit N" in the note, test
    path::name); a false one refuses the export. The result lists unfilled parts and problems.
    """

    def run() -> Result:
        import json

        from contextfork.checkpoint import transcript_seed
        from contextfork.package import api
        from contextfork.package.export import ExportOptions
        from contextfork.package.handoff_input import parse_input

        root = workspace_root(workspace)
        transcript = transcript_arg(transcript_path)
        parts: dict[str, Any] = {
            "active_goal": active_goal,
            "settled_decisions": settled_decisions,
            "failed_approaches": failed_approaches,
            "open_risks": open_risks,
            "next_action": next_action,
        }
        given = parse_input(
            {k: _dump(v) for k, v in parts.items() if v is not None}, "from the MCP call"
        )
        from contextfork.package.claims import verify

        claims, refused, used = verify(given, root, transcript)
        if refused is not None:
            return refused  # invented evidence is refused, one line per claim
        transcript = transcript or used  # the session the claims were found in seeds the rest
        opts = ExportOptions(
            trigger="mcp",
            session_id=session_id,
            handoff_input=given,
            claims=claims,
            transcript=transcript,
            harness="mcp",
            seed=transcript_seed(root, transcript, session_id, "mcp"),
        )
        exported = api.export_package(root, opts)
        pkg = Path(exported.data["path"])
        check = api.validate(root, str(pkg))
        handoff = json.loads((pkg / "handoff.json").read_text(encoding="utf-8"))
        missing = unfilled(handoff)
        record = pkg / "handoff_claims.json"
        data = {
            **exported.data,
            "valid": check.data["valid"],
            "claims": json.loads(record.read_text(encoding="utf-8"))["counts"]
            if record.is_file() else None,
            "unfilled": missing,
            "handoff_summary": str(pkg / "handoff_summary.md"),
        }
        seen = {(p.code, p.path) for p in exported.problems}
        text = exported.text or ""
        text += "\nunfilled parts: " + (", ".join(missing) if missing else "none")
        return Result(
            "export",
            data=data,
            problems=exported.problems
            + [p for p in check.problems if (p.code, p.path) not in seen],
            exit_code=check.exit_code if not check.data["valid"] else 0,
            text=text,
        )

    return call_tool(run)


def validate_session_context(
    workspace: str | None = None, package: str | None = None
) -> dict[str, Any]:
    """Validate a package (hashes, schemas, hostile paths, patch vs recorded HEAD); latest by default."""

    def run() -> Result:
        from contextfork.package import api

        root = workspace_root(workspace)
        return api.validate(root, package_spec(root, package))

    return call_tool(run)


def resume_session_context(
    workspace: str | None = None,
    package: str | None = None,
    session_id: str | None = None,
    apply: bool = False,
) -> dict[str, Any]:
    """Validate, report drift against the live repo, return the resume brief, mark consumed.

    apply=true restores the exported working state onto a clean checkout of the same HEAD.
    """

    def run() -> Result:
        from contextfork.resume.api import resume

        root = workspace_root(workspace)
        return resume(root, package_spec(root, package), apply=apply, session_id=session_id)

    return call_tool(run)


def offered_ref(root: Path, package: str | None) -> Any:
    """The package a tool hands to the agent: named, or the newest offered one; either way
    only one this user exported, pulled or trusted here (``contextfork.provenance``): a
    repository's own files under ``.contextfork/`` never reach the agent as a handoff."""
    from contextfork import provenance
    from contextfork.errors import NotProvenanced
    from contextfork.package import store

    spec = package_spec(root, package)
    ref = store.resolve(root, spec) if spec else store.latest_offered(root)
    from contextfork import signing

    st = provenance.standing(root, ref.package_id, ref.path)
    if not st.offered:
        raise NotProvenanced(f"{st.problem}; not handed to an agent",
                             hint=f"a person can inspect it and run `contextfork resume "
                             f"{ref.package_id} --trust`")  # fmt: skip
    unsigned = signing.unsigned_refusal(root, st)
    if unsigned:
        raise NotProvenanced(f"{unsigned}; not handed to an agent")
    return ref


def get_package_details(workspace: str | None = None, package: str | None = None) -> dict[str, Any]:
    """Metadata, manifest, handoff (with unfilled parts) and consumed state of one package."""

    def run() -> Result:
        import json

        from contextfork import provenance

        root = workspace_root(workspace)
        ref = offered_ref(root, package)

        def read(name: str) -> Any:
            return json.loads((ref.path / name).read_text(encoding="utf-8"))

        state_file = ref.path.parent / f"{ref.package_id}.state.json"
        consumed = read_state(state_file)
        handoff = read("handoff.json")
        data = {
            "package_id": ref.package_id,
            "path": str(ref.path),
            "metadata": read("session_metadata.json"),
            "manifest": read("manifest.json"),
            "handoff": handoff,
            "unfilled": unfilled(handoff),
            "consumed": consumed,
            "provenance": provenance.standing(root, ref.package_id, ref.path).record,
        }
        return Result("packages show", data=data, text=f"package {ref.package_id}")

    return call_tool(run)


def read_state(path: Path) -> Any:
    import json

    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def clean_session_context(
    workspace: str | None = None, keep: int = 5, confirm: bool = False, force: bool = False
) -> dict[str, Any]:
    """Remove old packages, keeping the newest `keep`. A dry run unless confirm=true;
    unconsumed packages are kept unless force=true."""

    def run() -> Result:
        from contextfork.lifecycle import admin

        root = workspace_root(workspace)
        return admin.clean(root, keep=keep, yes=confirm, force=force)

    return call_tool(run)


def read_handoff_summary(
    workspace: str | None = None, package: str | None = None
) -> dict[str, Any]:
    """The 6-part handoff_summary.md of a package (latest by default)."""

    def run() -> Result:
        root = workspace_root(workspace)
        ref = offered_ref(root, package)
        text = (ref.path / "handoff_summary.md").read_text(encoding="utf-8")
        return Result("handoff", data={"package_id": ref.package_id, "markdown": text}, text=text)

    return call_tool(run)


TOOLS: tuple[Callable[..., dict[str, Any]], ...] = (
    get_context_status,
    export_session_context,
    validate_session_context,
    resume_session_context,
    get_package_details,
    clean_session_context,
    read_handoff_summary,
    scan_context,
    hydrate_step,
    peek_fold,
    get_slice,
    contextfork_context,
)


def build_server() -> MCPServer:
    from contextfork import __version__

    server: MCPServer = MCPServer(
        "contextfork", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )
    for fn in TOOLS:
        server.add_tool(fn, structured_output=False)
    return server


MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # one JSON-RPC line; a peer without newlines is cut off


def run_stdio() -> None:
    import sys

    from contextfork.inputfile import bounded_text_stdin

    sys.stdin = bounded_text_stdin(MAX_MESSAGE_BYTES)
    build_server().run("stdio")
