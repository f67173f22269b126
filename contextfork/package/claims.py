"""The model writes the handoff, the machine checks every reference it can (IPSF's rule).

A handoff written by the model (``export --handoff FILE``, the MCP tool ``export_session_context``)
cites evidence. Each citation is checked here against what the machine can see, and the outcome
is recorded per claim in the package (``handoff_claims.json``):

- ``file``: the path (``path``, ``path:LINE``, optionally ``@sha256:HEX``) exists in the working
  tree or in the diff (a deleted or renamed path); the hash, when given, matches the bytes.
- ``commit``: the commit exists in the repository.
- ``step``: the step exists in the session's transcript (its number, its key, a message uuid or
  a tool-call id the model saw); every `backquoted` fragment of the note is in that step.
- ``command``: a tool call ran exactly that command; "exit N" in the note matches its exit code.
- ``test``: ``path::name`` — the file exists and names the test.
- a failed approach's ``step`` exists, and its ``error_excerpt`` is what that step returned.

A check that fails refuses the whole handoff, one line per problem, before anything is written:
invented evidence never reaches a new session. ``url`` and ``note`` cannot be checked, and a
step or command cannot be checked without a transcript; those are recorded as unverified.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork.envelope import Problem, Result
from contextfork.errors import ContextforkError
from contextfork.hashing import sha256_file

VERIFIED, UNVERIFIED, REFUSED = "verified", "unverified", "refused"
_LINE_SUFFIX = re.compile(r"(?::\d+(?:-\d+)?|#L\d+(?:-L?\d+)?)$")
_SHA_SUFFIX = re.compile(r"@sha256:([0-9a-f]{64})$")
_EXIT_NOTE = re.compile(r"\bexit(?:\s+code)?\s*[:=]?\s*(-?\d+)\b", re.IGNORECASE)
_EXIT_TEXT = re.compile(r"^\s*(?:Error:\s*)?Exit code:?\s*(-?\d+)", re.IGNORECASE)
_QUOTED = re.compile(r"`([^`]{3,})`")
_CALL_NOTE = re.compile(r"\btool call (\S+)")


def _squash(text: str) -> str:
    return " ".join(text.split())


@dataclass
class _Session:
    """What the checks need of a transcript: each step's text, ids, commands and exit codes."""

    path: str
    steps: list[dict[str, Any]] = field(default_factory=list)

    def find(self, ref: str) -> dict[str, Any] | None:
        ref = ref.strip().removeprefix("step ").removeprefix("#")
        for s in self.steps:
            if ref == str(s["index"]) or ref in s["ids"]:
                return s
        return None


def _exit_code(result: Any) -> int:
    if result.exit_code is not None:
        return int(result.exit_code)
    m = _EXIT_TEXT.match(result.content or "")
    if m:
        return int(m.group(1))
    return 1 if result.is_error else 0


def _command_of(call: Any) -> str | None:
    args = call.input if isinstance(call.input, dict) else {}
    for key in ("command", "cmd"):
        value = args.get(key)
        if isinstance(value, list):  # Codex: ["bash", "-lc", "pytest -q"] ran "pytest -q"
            shell = len(value) >= 3 and value[-2] in ("-lc", "-c")
            value = str(value[-1]) if shell else " ".join(str(v) for v in value)
        if isinstance(value, str):
            return _squash(value)
    return None


def load(path: Path) -> _Session:
    from contextfork.transcript import load_session
    from contextfork.transcript.model import TextBlock, ToolCall, ToolResult

    session = load_session(path, include_subagents=False)
    out = _Session(str(path))
    for step in session.steps:
        texts: list[str] = []
        ids = {step.identity}
        if step.key and ":" in step.key:
            ids.add(step.key.split(":", 1)[1])
        if step.message_id:
            ids.add(step.message_id)
        calls: dict[str, str | None] = {}
        exits: dict[str, int] = {}
        for b in step.blocks:
            if isinstance(b, TextBlock):
                texts.append(b.text)
            elif isinstance(b, ToolCall):
                ids.add(b.id)
                calls[b.id] = _command_of(b)
                texts.append(b.name + " " + json.dumps(b.input, ensure_ascii=False))
            elif isinstance(b, ToolResult):
                texts.append(b.content)
                exits[b.call_id] = _exit_code(b)
        out.steps.append({
            "index": step.index, "ids": ids, "text": _squash("\n".join(texts)),
            "commands": [(cmd, exits.get(cid)) for cid, cmd in calls.items() if cmd],
        })  # fmt: skip
    return out


@dataclass
class _Checker:
    root: Path
    session: _Session | None
    changed: set[str]
    claims: list[dict[str, Any]] = field(default_factory=list)

    def record(self, where: str, kind: str, ref: str, status: str, detail: str) -> None:
        self.claims.append({"where": where, "kind": kind, "ref": ref, "status": status,
                            "detail": detail})  # fmt: skip

    def evidence(self, where: str, e: dict[str, Any]) -> None:
        kind, ref, note = str(e.get("kind")), str(e.get("ref") or ""), str(e.get("note") or "")
        check = getattr(self, f"_{kind}", None)
        if check is None:
            self.record(where, kind, ref, UNVERIFIED, f"a {kind} cannot be checked by the machine")
            return
        status, detail = check(ref, note)
        self.record(where, kind, ref, status, detail)

    def _file(self, ref: str, note: str) -> tuple[str, str]:
        from contextfork.paths import unsafe_reason

        m = _SHA_SUFFIX.search(ref)
        rel = _LINE_SUFFIX.sub("", ref[: m.start()] if m else ref).strip()
        if rel.startswith(str(self.root) + "/"):
            rel = rel[len(str(self.root)) + 1 :]
        why = unsafe_reason(rel)
        if why or not rel:
            return REFUSED, f"not a path inside the repository ({why or 'empty'})"
        full = self.root / rel
        if full.is_file() and not full.is_symlink():
            if m and sha256_file(full)[0] != m.group(1):
                return REFUSED, "the file's sha256 differs from the one cited"
            return VERIFIED, "in the working tree" + (", sha256 matches" if m else "")
        if rel in self.changed:
            return VERIFIED, "in the diff (deleted or renamed)"
        return REFUSED, "exists neither in the working tree nor in the diff"

    def _commit(self, ref: str, note: str) -> tuple[str, str]:
        from contextfork import gitstate

        sha = ref.strip()
        try:
            ok = bool(re.fullmatch(r"[0-9a-fA-F]{4,64}", sha)) and gitstate.commit_exists(self.root, sha)
        except ContextforkError:
            ok = False
        return (VERIFIED, "the commit exists") if ok else (REFUSED, "no such commit here")

    def _step(self, ref: str, note: str) -> tuple[str, str]:
        if self.session is None:
            return UNVERIFIED, "no transcript to check the step against"
        step = self.session.find(ref)
        if step is None:
            return REFUSED, f"no such step in {Path(self.session.path).name}"
        for frag in _QUOTED.findall(note):
            if _squash(frag) not in step["text"]:
                return REFUSED, f"step {step['index']} does not contain `{frag}`"
        call = _CALL_NOTE.search(note)
        if call and call.group(1) not in step["ids"]:
            return REFUSED, f"step {step['index']} has no tool call {call.group(1)}"
        return VERIFIED, f"step {step['index']} exists and says what is cited"

    def _command(self, ref: str, note: str) -> tuple[str, str]:
        if self.session is None:
            return UNVERIFIED, "no transcript to check the command against"
        want = _squash(ref)
        runs = [(s["index"], code) for s in self.session.steps for cmd, code in s["commands"]
                if cmd == want]  # fmt: skip
        if not runs:
            return REFUSED, "no tool call in the session ran this command"
        m = _EXIT_NOTE.search(note)
        if m:
            said = int(m.group(1))
            hits = [i for i, code in runs if code == said]
            if not hits:
                got = ", ".join(f"step {i}: exit {c}" for i, c in runs)
                return REFUSED, f"it never exited {said} ({got})"
            return VERIFIED, f"ran at step {hits[-1]} with exit {said}"
        return VERIFIED, f"ran at step {runs[-1][0]}"

    def _test(self, ref: str, note: str) -> tuple[str, str]:
        if "::" not in ref:
            return UNVERIFIED, "a test name without its file (path::name) cannot be checked"
        path, name = ref.split("::", 1)
        status, detail = self._file(path, "")
        if status != VERIFIED:
            return status, detail
        leaf = name.split("[")[0].split("::")[-1]  # Class::test_x[param] names test_x
        text = (self.root / path).read_text(encoding="utf-8", errors="replace")
        if leaf not in text:
            return REFUSED, f"{path} does not define {leaf}"
        return VERIFIED, f"{path} defines {leaf}"

    def failure(self, where: str, f: dict[str, Any]) -> None:
        """The approach's step exists and returned its error (the step, else its first cited
        step: a model knows its tool call ids, not contextfork's step numbers)."""
        ref_step = f.get("step")
        if ref_step is None:
            cited = [e for e in f.get("evidence") or [] if e.get("kind") == "step"]
            if not cited or not f.get("error_excerpt"):
                return
            ref_step = cited[0].get("ref")
        ref = str(ref_step)
        if self.session is None:
            self.record(where + "/step", "step", ref, UNVERIFIED, "no transcript")
            return
        step = self.session.find(ref)
        if step is None:
            self.record(where + "/step", "step", ref, REFUSED, "no such step in the transcript")
            return
        excerpt = _squash(str(f.get("error_excerpt") or ""))
        if excerpt and excerpt not in step["text"]:
            self.record(where + "/error_excerpt", "step", ref, REFUSED,
                        f"step {step['index']} did not return this error")  # fmt: skip
            return
        self.record(where + "/step", "step", ref, VERIFIED,
                    f"step {step['index']} exists" + (" and returned this error" if excerpt else ""))  # fmt: skip


def _changed_paths(root: Path) -> set[str]:
    from contextfork import gitstate

    st = gitstate.status(root)
    out = {e.path for e in st.entries} | {e.orig_path for e in st.entries if e.orig_path}
    return out | set(st.untracked)


def check(given: dict[str, Any], root: Path, transcript: Path | None) -> list[dict[str, Any]]:
    """Every claim of the model-written parts, checked; the list is recorded in the package."""
    session = load(transcript) if transcript is not None else None
    c = _Checker(root, session, _changed_paths(root))
    for i, d in enumerate(given.get("settled_decisions") or []):
        for j, e in enumerate(d.get("evidence") or []):
            c.evidence(f"/settled_decisions/{i}/evidence/{j}", e)
    for i, f in enumerate(given.get("failed_approaches") or []):
        c.failure(f"/failed_approaches/{i}", f)
        for j, e in enumerate(f.get("evidence") or []):
            c.evidence(f"/failed_approaches/{i}/evidence/{j}", e)
    return c.claims


def refusal(claims: list[dict[str, Any]]) -> Result | None:
    """The export's answer when a claim is false: one line per problem, nothing written."""
    bad = [x for x in claims if x["status"] == REFUSED]
    if not bad:
        return None
    problems = [Problem("error", "claim_refused", f"{x['kind']} `{x['ref']}`: {x['detail']}",
                        f"handoff{x['where']}") for x in bad]  # fmt: skip
    text = (f"Handoff refused: {len(bad)} of {len(claims)} cited claim(s) could not be verified; "
            "nothing was written. Fix or remove them and export again.")  # fmt: skip
    return Result("export", data={"refused": bad, "claims": len(claims)}, problems=problems,
                  exit_code=1, text=text)  # fmt: skip


PARTS = ("active_goal", "settled_decisions", "failed_approaches", "open_risks", "next_action")


def merge_harvest(
    given: dict[str, Any] | None, harvested: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parts to build from (the model's first, then the harness summary's) and where each
    part came from."""
    given = dict(given or {})
    got = (harvested or {}).get("parts") or {}
    prov_h = (harvested or {}).get("provenance") or {}
    parts = dict(given)
    prov: dict[str, Any] = {}
    for part in PARTS:
        if given.get(part) is not None:
            prov[part] = {"source": "model"}
        elif got.get(part) is not None:
            parts[part] = got[part]
            prov[part] = prov_h.get(part, {"source": "harness-summary"})
        else:
            prov[part] = {"source": "not recorded"}
    return parts, prov


def record(claims: list[dict[str, Any]] | None, provenance: dict[str, Any],
           seeded_failures: int = 0) -> dict[str, Any]:  # fmt: skip
    """``handoff_claims.json``: where each part came from, and each claim's check."""
    claims = claims or []
    prov = dict(provenance)
    if prov.get("failed_approaches", {}).get("source") == "not recorded" and seeded_failures:
        prov["failed_approaches"] = {"source": "machine-seeded",
                                     "note": "failed tool calls read from the transcript"}  # fmt: skip
    counts = {s: sum(1 for x in claims if x["status"] == s) for s in (VERIFIED, UNVERIFIED)}
    return {"claims_version": "1", "parts": prov, "claims": claims, "counts": counts}


def _cites_session(given: dict[str, Any]) -> bool:
    evidence = [e for d in given.get("settled_decisions") or [] for e in d.get("evidence") or []]
    evidence += [e for f in given.get("failed_approaches") or [] for e in f.get("evidence") or []]
    return any(e.get("kind") in ("step", "command") for e in evidence) or any(
        f.get("step") is not None for f in given.get("failed_approaches") or []
    )


def verify(
    given: dict[str, Any], root: Path, transcript: Path | None
) -> tuple[list[dict[str, Any]], Result | None, Path | None]:
    """Check the model's parts before the export writes anything: (claims, refusal or None,
    the transcript they were checked against).

    Steps and commands are checked against ``transcript``; when none is named and the parts
    cite some, against the session that did the work here (``pick_session``), if one is clear."""
    if transcript is not None or not _cites_session(given):
        claims = check(given, root, transcript)
        return claims, refusal(claims), transcript
    from contextfork.package.pick_session import candidates

    # The calling session is not named (an MCP call): the first candidate session in which
    # every cited claim holds is the one that wrote them; else the first one's refusals.
    first: list[dict[str, Any]] | None = None
    for path in candidates(root):
        try:
            claims = check(given, root, path)
        except ContextforkError:
            continue
        if refusal(claims) is None:
            return claims, None, path
        first = claims if first is None else first
    claims = first if first is not None else check(given, root, None)
    return claims, refusal(claims), None
