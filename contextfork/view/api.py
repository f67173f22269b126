"""``contextfork view``: resolve what to show, write the site, optionally serve it.

One function the CLI calls; it knows nothing of Typer.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from contextfork.envelope import Result
from contextfork.errors import NotFoundError, UsageError
from contextfork.layout import optional_repo, view_dir


def resolve_transcript(
    transcript: Path | None, session: str | None, root: Path | None, cwd: Path
) -> Path | None:
    """--transcript, else --session ID in the project's Claude Code folder, else the newest one."""
    if transcript is not None and session is not None:
        raise UsageError("pass --transcript or --session, not both")
    if transcript is not None:
        if not transcript.is_file():
            raise NotFoundError(f"transcript {transcript} not found")
        return transcript
    from contextfork.cold.layout import check_session_id
    from contextfork.transcript.locate import current_transcript, project_dir

    places = list(dict.fromkeys([cwd, *([root] if root else [])]))
    if session is not None:
        check_session_id(session)
        for where in places:
            candidate = project_dir(where) / f"{session}.jsonl"
            if candidate.is_file():
                return candidate
        raise NotFoundError(f"no Claude Code session {session!r} for this project",
                            hint="pass --transcript PATH")  # fmt: skip
    for where in places:
        found = current_transcript(where)
        if found is not None:
            return found
    return None


def _has_packages(root: Path) -> bool:
    from contextfork.package.store import list_packages

    return bool(list_packages(root))


def _no_session(root: Path | None, cwd: Path) -> str:
    """Nothing to show, and where we looked (so the user knows which folder was empty)."""
    from contextfork.transcript.locate import project_dir

    looked = ", ".join(str(project_dir(p)) for p in dict.fromkeys([cwd, *([root] if root else [])]))
    if root is None:
        return f"nothing to show: no session transcript in {looked}, and not inside a git repository"
    return f"nothing to show: no session transcript in {looked}, and no package in {root}"


def default_out(root: Path | None, cwd: Path) -> Path:
    if root is not None:
        return view_dir(root)  # every component lstat-checked (no symlink escape)
    return cwd / "contextfork-view"


def check_host(host: str, allow_remote: bool) -> str:
    """Loopback only unless the user asks otherwise: the page shows code, diffs and tool output."""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        raise UsageError(f"--host {host!r} is not an IP address or 'localhost'") from None
    if not loopback and not allow_remote:
        raise UsageError(f"--host {host} is not a loopback address",
                         hint="the inspector shows your code and tool output; add "
                              "--allow-remote only if you mean to expose it")  # fmt: skip
    return host


def view(
    *,
    repo: Path | None,
    transcript: Path | None,
    session: str | None,
    out: Path | None,
    with_replay: bool,
    cwd: Path | None = None,
) -> Result:
    from contextfork.view.site import build_site

    cwd = cwd or Path.cwd()
    root = optional_repo(repo, cwd)
    path = resolve_transcript(transcript, session, root, cwd)
    if path is None and (root is None or not _has_packages(root)):
        raise NotFoundError(_no_session(root, cwd),
                            hint="pass --transcript PATH (a Claude Code, Codex, pi or "
                                 "mini-swe-agent transcript) or --session ID")  # fmt: skip
    target = (out or default_out(root, cwd)).absolute()
    res = build_site(path, root, target, with_replay=with_replay)
    data = {
        "out": str(res.out),
        "index": str(res.out / "index.html"),
        "transcript": str(path) if path else None,
        "pages": res.pages,
        "steps": res.steps,
        "cold_nodes": res.cold_nodes,
        "failed_nodes": res.failed_nodes,
        "packages": res.packages,
        "seconds": res.seconds,
    }
    alone = "" if path else "No session found: showing the packages only.\n"
    text = alone + (f"Wrote {len(res.pages)} page(s) to {res.out} in {res.seconds:.2f} s: {res.steps} "
            f"steps, {res.cold_nodes} cold node(s) ({res.failed_nodes} failing verification), "
            f"{res.packages} package(s).\nOpen {res.out / 'index.html'}")  # fmt: skip
    return Result("view", data=data, text=text)
