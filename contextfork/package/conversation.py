"""The conversation travels with the work: a package can carry the Claude Code session, and
``resume --claude`` re-creates it where Claude Code looks on *this* machine.

``push``/``pull`` and ``resume --apply`` move the working state to another clone, but
``claude --resume`` there found no session: the transcript lives under the exporting machine's
``~/.claude/projects/<slug of its repo root>/``. ``export --with-conversation`` puts the
session's lines into the package (``conversation.jsonl``, every string scrubbed of secrets,
JSON kept valid; ``conversation.json`` says whose session, from which repository root, and the
sha256 of the lines; both are sealed by the manifest). ``resume --claude`` checks the package
and that sha256, rewrites every path under the exporting root to this root (``cwd`` fields and
paths inside messages and tool calls), and writes the session under this repository's slug in
this machine's Claude Code config, then prints ``claude --resume <id>``. An existing session of
that id with other content is never overwritten: the copy gets a new id.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

from contextfork.envelope import Result
from contextfork.errors import (
    CheckFailed,
    IntegrityError,
    NotFoundError,
    NotProvenanced,
    UsageError,
)
from contextfork.hashing import sha256_bytes

LINES = "conversation.jsonl"
META = "conversation.json"
VERSION = "1"


def _walk(obj: Any, fn: Any) -> Any:
    if isinstance(obj, str):
        return fn(obj)
    if isinstance(obj, list):
        return [_walk(v, fn) for v in obj]
    if isinstance(obj, dict):
        return {k: _walk(v, fn) for k, v in obj.items()}
    return obj


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def capture(transcript: Path, root: Path, session_id: str | None) -> dict[str, bytes]:
    """The two package files for ``transcript`` (a Claude Code session of ``root``)."""
    from contextfork.redact import redact_text
    from contextfork.transcript.detect import detect_format

    fmt = detect_format(transcript)
    if fmt not in CLIENTS.values():
        raise UsageError(f"--with-conversation carries Claude Code, Codex and pi sessions; "
                         f"{transcript} is {fmt}")  # fmt: skip
    found = 0

    def scrub(s: str) -> str:
        nonlocal found
        clean, hits = redact_text(s)
        found += len(hits)
        return clean

    out: list[str] = []
    sid = session_id
    for raw in transcript.read_bytes().split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            continue  # a torn last line (the session is live): Claude Code skips it too
        if sid is None and isinstance(obj, dict):
            sid = _session_id_of(obj)
        out.append(_dump(_walk(obj, scrub)))
    data = ("\n".join(out) + "\n").encode("utf-8")
    meta = {"conversation_version": VERSION, "format": fmt, "session_id": sid or transcript.stem,
            "exported_root": str(Path(root).resolve()), "lines": len(out), "redactions": found,
            "sha256": sha256_bytes(data), "file_name": transcript.name,
            "dated_dirs": list(transcript.parent.parts[-3:]) if fmt == "codex" else []}  # fmt: skip
    return {LINES: data, META: (json.dumps(meta, indent=2) + "\n").encode("utf-8")}


CLIENTS = {"claude": "claude-code", "codex": "codex", "pi": "pi"}


def _session_id_of(obj: dict[str, Any]) -> str | None:
    if isinstance(obj.get("sessionId"), str):  # Claude Code
        return str(obj["sessionId"])
    if obj.get("type") == "session" and isinstance(obj.get("id"), str):  # pi's header
        return str(obj["id"])
    payload = obj.get("payload")
    if obj.get("type") == "session_meta" and isinstance(payload, dict):  # Codex
        value = payload.get("id")
        return value if isinstance(value, str) else None
    return None


def _target(root: Path, fmt: str, sid: str, meta: dict[str, Any]) -> Path:
    """Where the client on this machine looks for the session."""
    if fmt == "claude-code":
        from contextfork.transcript.locate import project_dir

        return project_dir(root) / f"{sid}.jsonl"
    import os

    name = str(meta.get("file_name") or f"{sid}.jsonl")
    if fmt == "pi":  # pi's getDefaultSessionDir: --<cwd without its leading /, / \ : as ->--
        env = os.environ.get("PI_CODING_AGENT_DIR")
        agent = Path(env).expanduser() if env else Path.home() / ".pi" / "agent"
        cwd = str(Path(root).resolve())
        safe = "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd)) + "--"
        if "/" in name or "\\" in name or not name.endswith(".jsonl"):
            name = f"{sid}.jsonl"
        return agent / "sessions" / safe / name

    home = os.environ.get("CODEX_HOME")
    base = (Path(home).expanduser() if home else Path.home() / ".codex") / "sessions"
    dated = [str(d) for d in meta.get("dated_dirs") or [] if str(d).isdigit()]
    name = str(meta.get("file_name") or f"rollout-{sid}.jsonl")
    if "/" in name or "\\" in name or not name.endswith(".jsonl") or sid not in name:
        name = f"rollout-{sid}.jsonl"
    return base.joinpath(*dated[:3], name)


def _rewriter(old: str, new: str) -> Any:
    pattern = re.compile(re.escape(old) + r"(?=$|[/\\\s\"'`:;,)\]}])")

    def fn(s: str) -> str:
        return pattern.sub(lambda _m: new, s) if old in s else s

    return fn


def _vouched_or_refuse(root: Path, package_id: str, pkg: Path) -> None:
    """A conversation becomes a session the client resumes: only from a package this user
    exported, pulled or trusted (and signed, when signatures are required), as for ``resume``."""
    from contextfork import provenance, signing

    st = provenance.standing(root, package_id, pkg)
    why = st.problem if not st.offered else signing.unsigned_refusal(root, st)
    if why:
        raise NotProvenanced(f"{why}; not writing its conversation",
                             hint=f"inspect it, then `contextfork resume {package_id} --trust`")


def resume_session(root: Path, spec: str | None, client: str) -> Result:
    """Write the package's conversation where this machine's ``client`` looks for it."""
    from contextfork.package import store
    from contextfork.package.validate import validate_package

    ref = store.resolve(root, spec)
    _vouched_or_refuse(root, ref.package_id, ref.path)
    if validate_package(ref.path, root).errors:
        raise IntegrityError(f"package {ref.package_id} does not validate; not resuming its "
                             "conversation", hint=f"contextfork validate {ref.package_id}")  # fmt: skip
    if not (ref.path / META).is_file():
        raise NotFoundError(f"package {ref.package_id} carries no conversation",
                            hint="export it with `contextfork export --with-conversation "
                                 "--transcript PATH|auto`")  # fmt: skip
    meta = json.loads((ref.path / META).read_text(encoding="utf-8"))
    data = (ref.path / LINES).read_bytes()
    if sha256_bytes(data) != meta.get("sha256"):
        raise IntegrityError(f"package {ref.package_id}: {LINES} does not match its sha256")
    fmt = str(meta.get("format"))
    if CLIENTS[client] != fmt:
        raise UsageError(f"package {ref.package_id} carries a {fmt} session, not a "
                         f"{CLIENTS[client]} one", hint="resume it with --claude or --codex, as it was made")  # fmt: skip
    here = str(Path(root).resolve())
    fix = _rewriter(str(meta["exported_root"]), here)
    sid = str(meta["session_id"])
    target = _target(root, fmt, sid, meta)
    lines = [_walk(json.loads(x), fix) for x in data.decode("utf-8").splitlines() if x.strip()]
    new_id = sid
    if target.exists():
        body = ("\n".join(_dump(o) for o in lines) + "\n").encode("utf-8")
        if target.read_bytes() != body:
            new_id = str(uuid.uuid4())  # never overwrite another session of that id
    if new_id != sid:
        lines = [_walk(o, lambda s: s.replace(sid, new_id)) for o in lines]
        target = target.with_name(target.name.replace(sid, new_id))
        if new_id not in target.name:
            target = target.with_name(f"{target.stem}-{new_id}.jsonl")
    body = ("\n".join(_dump(o) for o in lines) + "\n").encode("utf-8")
    from contextfork import atomic

    if not target.exists():
        atomic.write_bytes(target, body)
    elif target.read_bytes() != body:  # pragma: no cover - a fresh uuid
        raise CheckFailed(f"{target} exists with other content")
    rewritten = sum(1 for x in data.decode("utf-8").splitlines() if meta["exported_root"] in x)
    command = {"claude-code": f"claude --resume {new_id}", "codex": f"codex resume {new_id}",
               "pi": f"pi --session {new_id}"}[fmt]  # fmt: skip
    text = (f"Conversation of package {ref.package_id} written for {CLIENTS[client]} on this "
            "machine\n"
            f"  session: {new_id}" + (f" (a copy of {sid}: that id holds another session here)"
                                       if new_id != sid else "") + "\n"
            f"  file:    {target}\n"
            f"  paths:   {meta['exported_root']} → {here} ({rewritten} line(s) rewritten)\n"
            f"\ncd {here} && {command}")  # fmt: skip
    return Result("resume", data={"package_id": ref.package_id, "session_id": new_id,
                                  "original_session_id": sid, "path": str(target),
                                  "exported_root": meta["exported_root"], "root": here,
                                  "lines": len(lines), "rewritten_lines": rewritten,
                                  "resume_command": command},
                  text=text)  # fmt: skip
