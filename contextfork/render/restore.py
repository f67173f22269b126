"""``restore STEP`` and ``peek FOLD [--offset N --bytes M]``: verified originals, appended.

An answer is plain text that goes at the *end* of the prompt (as the tool output of the call
that asked), so nothing already sent is rewritten and nothing is re-run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contextfork.errors import IntegrityError, NotFoundError, UsageError
from contextfork.hashing import sha256_bytes
from contextfork.render.store import StepSource

_RESTORE = re.compile(r"^\s*restore\s+#?(\d{1,7})\s*$")
_PEEK = re.compile(r"^\s*peek\s+(F?\d{1,7})((?:\s+--(?:offset|bytes)[ =]\d{1,12})*)\s*$")
PEEK_DEFAULT_BYTES = 4000


@dataclass(frozen=True)
class Request:
    verb: str  # "restore" | "peek"
    target: str  # a step number, or a fold id "F<n>"
    offset: int = 0
    nbytes: int | None = None


def parse_request(command: str) -> Request | None:
    """A restore/peek request if the whole command is one, else None (then it runs normally)."""
    m = _RESTORE.match(command)
    if m:
        return Request("restore", m.group(1))
    m = _PEEK.match(command)
    if m:
        opts = dict(re.findall(r"--(offset|bytes)[ =](\d+)", m.group(2) or ""))
        nbytes = int(opts["bytes"]) if "bytes" in opts else PEEK_DEFAULT_BYTES
        return Request("peek", m.group(1), int(opts.get("offset", 0)), nbytes)
    return None


def _verified_step(step: int, source: StepSource, expected: dict[int, str]) -> tuple[bytes, int]:
    """A step's original bytes and how many secret spans the store scrubbed from them.

    A scrubbed copy cannot match the sha256 recorded at render time; it is still verified by
    the store (its own payload sha256) and every answer that contains one says so.
    """
    data = source.step_text(step).encode("utf-8")
    redacted = source.redactions(step)
    want = expected.get(step)
    if want is not None and not redacted and sha256_bytes(data) != want:
        raise IntegrityError(
            f"step {step} does not verify against the sha256 recorded at render time",
            hint="the cold store or transcript was modified",
        )
    return data, redacted


_TARGET = re.compile(r"F?\d{1,7}")


def fold_steps(target: str, folds: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    if not _TARGET.fullmatch(target):
        raise UsageError(
            f"cannot peek {target!r}: not a fold id or a step number",
            hint="use F<n> (the id printed in a fold note) or a step number",
        )
    if target.startswith("F"):
        if target not in folds:
            raise NotFoundError(f"no fold {target}", hint="fold ids are printed in each note")
        return folds[target]
    return (int(target),)


def answer(
    req: Request,
    source: StepSource,
    expected: dict[int, str],
    folds: dict[str, tuple[int, ...]] | None = None,
) -> str:
    """The text that answers a request; every byte verified before it is shown."""
    steps = fold_steps(req.target, folds or {})
    parts = [_verified_step(s, source, expected) for s in steps]
    data = b"".join(p for p, _ in parts)
    redacted = sum(n for _, n in parts)
    digest = sha256_bytes(data)
    label = f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]}-{steps[-1]}"
    verified = "verified" if not redacted else f"verified; {redacted} secret span(s) redacted"
    if req.verb == "restore":
        return (
            f"[contextfork restore {label} · {len(data)} bytes · sha256 {digest} {verified}]\n"
            + data.decode("utf-8")
        )
    if req.offset < 0 or (req.nbytes is not None and req.nbytes <= 0):
        raise UsageError("peek needs --offset >= 0 and --bytes > 0")
    end = len(data) if req.nbytes is None else req.offset + req.nbytes
    chunk = data[req.offset : end]
    text = chunk.decode("utf-8", errors="replace")
    return (
        f"[contextfork peek {req.target} ({label}) bytes {req.offset}-{req.offset + len(chunk)} "
        f"of {len(data)} · sha256 of whole {digest} {verified}]\n{text}"
    )
