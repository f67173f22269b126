"""Package operations as typed results, shared by the CLI, the git hooks and the MCP server."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextfork import gitstate, layout
from contextfork.envelope import Result
from contextfork.errors import ExitCode, UsageError
from contextfork.package import store
from contextfork.transcript.origin import forked_from

if TYPE_CHECKING:  # validate must not pay for importing the export machinery
    from contextfork.package.export import ExportOptions


def export_package(root: Path, opts: ExportOptions, loc: gitstate.Location | None = None) -> Result:
    from contextfork.package import export as export_mod

    out = export_mod.export(root, opts, loc)
    data: dict[str, Any] = {
        "package_id": out.package_id,
        "path": str(out.path),
        "package_sha256": out.manifest["package_sha256"],
        "files": len(out.manifest["files"]),
        "bytes": sum(e["size"] for e in out.manifest["files"]),
        "head": out.git_status["head"],
        "branch": out.git_status["branch"],
        "detached": out.git_status["detached"],
        "unborn": out.git_status["unborn"],
        "staged": len(out.git_status["staged"]),
        "modified": len(out.git_status["modified"]),
        "deleted": len(out.git_status["deleted"]),
        "renamed": len(out.git_status["renamed"]),
        "untracked": len(out.untracked["files"]),
        "untracked_captured": sum(1 for f in out.untracked["files"] if f["captured"]),
    }
    text = (
        f"Exported package {out.package_id}\n"
        f"  path:    {out.path}\n"
        f"  HEAD:    {data['head'] or '(unborn)'} "
        f"({'detached' if data['detached'] else data['branch']})\n"
        f"  changes: {data['staged']} staged, {data['modified']} modified, {data['deleted']} deleted, "
        f"{data['renamed']} renamed, {data['untracked_captured']}/{data['untracked']} untracked captured\n"
        f"  files:   {data['files']} ({data['bytes']} bytes), package sha256 {data['package_sha256'][:16]}…"
    )
    return Result("export", data=data, problems=out.problems, text=text)


def _repo_for(pkg_dir: Path, explicit_root: Path | None) -> Path | None:
    if explicit_root is not None:
        return explicit_root
    try:
        return layout.repo_root(pkg_dir)
    except Exception:  # noqa: BLE001 - a package copied outside any repo still validates
        return None


def validate(root: Path | None, spec: str | None, *, strict: bool = False) -> Result:
    from contextfork import signing
    from contextfork.package.validate import INTEGRITY_CODES, validate_package

    ref = store.resolve(root, spec)
    repo = _repo_for(ref.path, root)
    v = validate_package(ref.path, repo, strict=strict)
    problems = list(v.problems)
    standing = None
    if repo is not None:
        # where it came from and its own signature (never a ref): see contextfork.signing
        st, found = signing.provenance_problems(repo, ref.package_id, ref.path)
        problems += found
        standing = st.code
    errors = sum(p.severity == "error" for p in problems)
    warnings = len(problems) - errors
    exit_code = int(v.exit_code)
    if errors and not exit_code:
        tampered = any(p.code in INTEGRITY_CODES or p.code in signing.CODES for p in problems)
        exit_code = int(ExitCode.INTEGRITY if tampered else ExitCode.CHECK_FAILED)
    data = {
        "package_id": ref.package_id,
        "path": str(ref.path),
        "valid": errors == 0,
        "errors": errors,
        "warnings": warnings,
        "package_sha256": v.manifest.package_sha256 if v.manifest else None,
        "checked_against_repo": str(repo) if repo else None,
        "provenance": standing,
    }
    verdict = "valid" if errors == 0 else "INVALID"
    text = f"Package {ref.package_id}: {verdict} ({errors} error(s), {warnings} warning(s))"
    return Result("validate", data=data, problems=problems, exit_code=exit_code, text=text)


def export_from_options(
    repo: Path | None,
    *,
    goal: str | None = None,
    session: str | None = None,
    handoff: Path | None = None,
    transcript: Path | None = None,
    trigger: str = "cli",
    file_cap: int = store.DEFAULT_FILE_CAP,
    with_conversation: bool = False,
) -> Result:
    """The export command's whole job (the CLI command and the MCP tool call it)."""
    from contextfork.package import export as export_mod
    from contextfork.package import seeding

    if file_cap < 0:
        raise UsageError(f"--file-cap must be 0 or more bytes, not {file_cap}")
    loc = gitstate.locate(repo)
    choice = None
    if transcript is not None and str(transcript) == "auto":
        from contextfork.package.pick_session import choose

        choice = choose(loc.root)
        transcript = choice.chosen.path
    given = _load_handoff(handoff) if handoff else None
    claims = None
    if given:
        from contextfork.package.claims import verify

        claims, refused, used = verify(given, loc.root, transcript)
        if refused is not None:
            return refused  # invented evidence: one line per claim, nothing written
        transcript = transcript or used  # the session holding the claims seeds the rest
    extra = None
    if with_conversation:
        from contextfork.package import conversation

        if transcript is None:
            raise UsageError("--with-conversation needs the session: --transcript PATH or auto")
        extra = conversation.capture(seeding.resolve_transcript(transcript, loc.root), loc.root,
                                     session)  # fmt: skip
    opts = export_mod.ExportOptions(
        goal=goal,
        session_id=session,
        handoff_input=given,
        claims=claims,
        extra_files=extra,
        trigger=seeding.check_trigger(trigger),
        file_cap=file_cap,
        transcript=transcript,
        seed=seeding.seed_from_transcript(transcript, loc.root) if transcript else None,
    )
    opts.cold_store_refs = _cold_refs(loc.root, session or (opts.seed or {}).get("session_id"))
    if transcript is not None and opts.transcript is not None:  # a fork's stubs point at its origin
        origin = forked_from(Path(opts.transcript))
        opts.cold_store_refs += [r for r in _cold_refs(loc.root, origin)
                                 if r not in opts.cold_store_refs]  # fmt: skip
    result = export_package(loc.root, opts, loc)
    if choice is not None:
        result.data["transcript_choice"] = choice.to_json()
        result.text = f"{result.text or ''}\n  transcript: {choice.chosen.path} ({choice.why})"
    return result


def _cold_refs(root: Path, session_id: object) -> list[str]:
    """The session's cold store, when it has one here: the package names it (the brief pages
    from it, ``push --with-cold`` carries it)."""
    if not isinstance(session_id, str) or not session_id:
        return []
    try:
        store = layout.cold_store(root, session_id)
    except UsageError:
        return []
    return [layout.cold_store_rel(session_id)] if store.is_dir() else []


def _load_handoff(path: Path) -> dict[str, Any]:
    from contextfork.package.handoff_input import load_input  # lazy: pydantic only for --handoff

    return load_input(path)
