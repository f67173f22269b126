"""``contextfork demo``: the whole cycle on an embedded sample, in a throwaway repository.

The story: the status badge of a sample Claude Code session → fold it into the cold store → a
prompt that pages a folded detail back in (through the real hook handler) → export → validate →
resume after another edit, with the drift report. Each step gets the demo context and returns
one line of narrative; ``run_demo(steps=[...])`` runs a subset (the export/validate pair works
on its own).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork import atomic, gitstate, layout
from contextfork.envelope import Result

_IDENTITY = {
    "GIT_AUTHOR_NAME": "contextfork demo",
    "GIT_AUTHOR_EMAIL": "demo@contextfork.invalid",
    "GIT_COMMITTER_NAME": "contextfork demo",
    "GIT_COMMITTER_EMAIL": "demo@contextfork.invalid",
}


@dataclass
class DemoContext:
    root: Path
    facts: dict[str, Any] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)


def _git(root: Path, *args: str) -> None:
    gitstate.run(root, args, env=_IDENTITY)


def make_sample_repo(root: Path) -> None:
    """A repo with staged, unstaged, deleted, renamed, binary, CRLF, Latin-1 and untracked changes."""

    def put(rel: str, data: str | bytes) -> None:
        atomic.write_bytes(root / rel, data.encode("utf-8") if isinstance(data, str) else data)

    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q", "-b", "main")
    put("src/billing.py", "PORT = 5433\n\ndef charge(amount):\n    return amount\n")
    put("src/old_name.py", "def helper():\n    return 'renamed soon'\n")
    put("notes.txt", b"line one\r\nline two\r\n")
    put("legacy.txt", "caf\xe9 cr\xe8me\n".encode("latin-1"))
    put("obsolete.md", "to be deleted\n")
    put("logo.bin", bytes(range(256)) * 4)
    put(".gitignore", ".env\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "initial import")
    billing = "PORT = 5433\n\ndef charge(amount, currency='EUR'):\n    return amount\n"
    put("src/billing.py", billing)
    _git(root, "add", "src/billing.py")
    put("src/billing.py", billing + "\n# TODO: migration V12 re-applied\n")
    _git(root, "mv", "src/old_name.py", "src/new name é.py")
    (root / "obsolete.md").unlink()
    put("notes.txt", b"line one\r\nline two changed\r\n")
    put("legacy.txt", "caf\xe9 cr\xe8me br\xfbl\xe9e\n".encode("latin-1"))
    put("logo.bin", bytes(reversed(range(256))) * 4)
    put("scratch/plan.md", "# plan\n- port back to 5433\n")
    put("scratch/blob.dat", b"\x00\x01\x02binary\xff")
    put(".env", "SECRET=never-captured\n")


def _session_path(ctx: DemoContext) -> Path:
    from contextfork.harness.sample_session import SESSION_ID

    return ctx.root.parent / "claude-projects" / f"{SESSION_ID}.jsonl"


def _step_badge(ctx: DemoContext) -> str:
    """The statusLine badge of the embedded sample session (telemetry from recorded usage)."""
    from contextfork.harness.sample_session import write_transcript
    from contextfork.status import build_status

    transcript = write_transcript(_session_path(ctx), ctx.root)
    res = build_status(transcript, ctx.root, ctx.root)
    risk = res.data.get("risk") or {}
    ctx.facts["badge"] = risk.get("badge")
    ctx.facts["transcript"] = str(transcript)
    return f"status   → {risk.get('badge')} (recorded usage of the sample Claude Code session)"


def _step_fold(ctx: DemoContext) -> str:
    """Fold every step of the session into its cold store (what the PreCompact hook does)."""
    from contextfork.cold import api as cold_api
    from contextfork.harness.sample_session import SESSION_ID

    res = cold_api.fold_session(Path(ctx.facts["transcript"]), repo=ctx.root, session=SESSION_ID)
    d = res.data
    ctx.facts["fold"] = {k: d[k] for k in ("steps", "written", "payload_bytes", "tokens")}
    return (
        f"fold     → {d['steps']} steps folded byte-exact into .contextfork/cold/{SESSION_ID[:8]}… "
        f"({d['payload_bytes']} bytes, {d['tokens']} tokens out of the prompt)"
    )


def _step_page_in(ctx: DemoContext) -> str:
    """Ask the reference question through the real UserPromptSubmit hook handler."""
    import re

    from contextfork.cold.scenario import REFERENCE_QUESTION
    from contextfork.harness.hooks.runner import on_user_prompt_submit, parse_input
    from contextfork.harness.sample_session import SESSION_ID

    payload = {
        "session_id": SESSION_ID,
        "transcript_path": ctx.facts["transcript"],
        "cwd": str(ctx.root),
        "hook_event_name": "UserPromptSubmit",
        "prompt": REFERENCE_QUESTION,
    }
    out = on_user_prompt_submit(parse_input("user-prompt-submit", payload, codex=False))
    context = out.get("hookSpecificOutput", {}).get("additionalContext", "")
    steps = [int(m) for m in re.findall(r'<cold-step step="(\d+)"', context)]
    ctx.facts["paged_in"] = steps
    ctx.facts["page_in_chars"] = len(context)
    return (
        f'page-in  → "{REFERENCE_QUESTION}" → hook injected steps {steps} '
        f"({len(context)} chars, each SHA-256 verified): the newest port, the re-applied "
        "migration and the rollback that explains it; superseded port steps stay folded"
    )


def _step_export(ctx: DemoContext) -> str:
    from contextfork.package import api
    from contextfork.package.export import ExportOptions

    opts = ExportOptions(goal="Port billing to the new currency API", trigger="demo")
    if ctx.facts.get("transcript"):
        from contextfork.checkpoint import transcript_seed
        from contextfork.harness.sample_session import SESSION_ID

        transcript = Path(ctx.facts["transcript"])
        opts.session_id = SESSION_ID
        opts.transcript = transcript
        opts.harness = "claude-code"
        opts.seed = transcript_seed(ctx.root, transcript, SESSION_ID, "claude-code")
        opts.cold_store_refs = [layout.cold_store_rel(SESSION_ID)]
    res = api.export_package(ctx.root, opts)
    ctx.facts["package_id"] = res.data["package_id"]
    ctx.facts["export"] = res.data
    d = res.data
    return (
        f"export   → package {d['package_id']}: {d['staged']} staged, {d['modified']} modified, "
        f"{d['deleted']} deleted, {d['renamed']} renamed, {d['untracked_captured']} untracked captured "
        f"(.env is ignored and never captured)"
    )


def _step_validate(ctx: DemoContext) -> str:
    from contextfork.package import api

    res = api.validate(ctx.root, ctx.facts["package_id"])
    ctx.facts["validate"] = res.data
    d = res.data
    return f"validate → {'valid' if d['valid'] else 'INVALID'}: {d['errors']} error(s), {d['warnings']} warning(s) (unfilled handoff parts are warnings)"


def _step_resume(ctx: DemoContext) -> str:
    """Another session edits a file, then a new session resumes: the drift report names it."""
    from contextfork.resume.api import resume

    with (ctx.root / "src" / "billing.py").open("a") as fh:
        fh.write("# edited after the export\n")
    res = resume(ctx.root, ctx.facts["package_id"], session_id="demo-next-session")
    drift = res.data.get("drift") or {}
    ctx.facts["resume"] = {
        "valid": res.data.get("valid"),
        "drifted": drift.get("drifted"),
        "changed": drift.get("changed", []),
        "missing": drift.get("missing", []),
        "new": drift.get("new", []),
        "brief_lines": len(str(res.data.get("brief", "")).splitlines()),
    }
    r = ctx.facts["resume"]
    return (
        f"resume   → drift: {len(r['changed'])} changed ({', '.join(r['changed']) or '-'}), "
        f"{len(r['missing'])} missing, {len(r['new'])} new since export; resume brief of "
        f"{r['brief_lines']} lines for the next session; package marked consumed"
    )


Step = Callable[[DemoContext], str]
STEPS: list[Step] = [
    _step_badge,
    _step_fold,
    _step_page_in,
    _step_export,
    _step_validate,
    _step_resume,
]


def run_demo(*, keep: bool = False, steps: list[Step] | None = None) -> Result:
    tmp = Path(tempfile.mkdtemp(prefix="contextfork-demo-"))
    root = tmp / "repo"
    try:
        make_sample_repo(root)
        ctx = DemoContext(root=root)
        for step in steps or STEPS:
            ctx.lines.append(step(ctx))

        pkg = layout.packages_dir(root) / ctx.facts["package_id"]
        files = sorted(p.relative_to(pkg).as_posix() for p in pkg.rglob("*") if p.is_file())
        text = "\n".join(
            [
                "contextfork demo — a sample repository with every kind of change",
                f"repo: {root}",
                "",
                *ctx.lines,
                "",
                f"package at {pkg}:",
            ]
            + [f"  {f}" for f in files]
            + ([] if keep else ["", "(temporary repo removed; pass --keep to inspect it)"])
        )
        data = {
            "repo": str(root) if keep else None,
            "facts": ctx.facts,
            "steps": ctx.lines,
            "package_files": files,
        }
        return Result("demo", data=data, text=text)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
