"""``contextfork demo``: the whole cycle on an embedded sample, in a throwaway repository.

Later areas append their steps to ``STEPS`` (fold, page-in, resume) so the demo grows with the
tool; each step gets the demo context and returns one line of narrative.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork import gitstate
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
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q", "-b", "main")
    (root / "src").mkdir()
    (root / "src" / "billing.py").write_text(
        "PORT = 5433\n\ndef charge(amount):\n    return amount\n"
    )
    (root / "src" / "old_name.py").write_text("def helper():\n    return 'renamed soon'\n")
    (root / "notes.txt").write_bytes(b"line one\r\nline two\r\n")
    (root / "legacy.txt").write_bytes("caf\xe9 cr\xe8me\n".encode("latin-1"))
    (root / "obsolete.md").write_text("to be deleted\n")
    (root / "logo.bin").write_bytes(bytes(range(256)) * 4)
    (root / ".gitignore").write_text(".env\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "initial import")
    (root / "src" / "billing.py").write_text(
        "PORT = 5433\n\ndef charge(amount, currency='EUR'):\n    return amount\n"
    )
    _git(root, "add", "src/billing.py")
    with (root / "src" / "billing.py").open("a") as fh:
        fh.write("\n# TODO: migration V12 re-applied\n")
    _git(root, "mv", "src/old_name.py", "src/new name é.py")
    (root / "obsolete.md").unlink()
    (root / "notes.txt").write_bytes(b"line one\r\nline two changed\r\n")
    (root / "legacy.txt").write_bytes("caf\xe9 cr\xe8me br\xfbl\xe9e\n".encode("latin-1"))
    (root / "logo.bin").write_bytes(bytes(reversed(range(256))) * 4)
    (root / "scratch").mkdir()
    (root / "scratch" / "plan.md").write_text("# plan\n- port back to 5433\n")
    (root / "scratch" / "blob.dat").write_bytes(b"\x00\x01\x02binary\xff")
    (root / ".env").write_text("SECRET=never-captured\n")


def _step_export(ctx: DemoContext) -> str:
    from contextfork.package import api
    from contextfork.package.export import ExportOptions

    res = api.export_package(
        ctx.root, ExportOptions(goal="Port billing to the new currency API", trigger="demo")
    )
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


Step = Callable[[DemoContext], str]
STEPS: list[Step] = [_step_export, _step_validate]


def run_demo(*, keep: bool = False, steps: list[Step] | None = None) -> Result:
    tmp = Path(tempfile.mkdtemp(prefix="contextfork-demo-"))
    root = tmp / "repo"
    try:
        make_sample_repo(root)
        ctx = DemoContext(root=root)
        for step in steps or STEPS:
            ctx.lines.append(step(ctx))
        pkg = root / ".contextfork" / "packages" / ctx.facts["package_id"]
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
