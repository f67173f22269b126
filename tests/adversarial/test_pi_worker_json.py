"""Issue 22 items 4 and 8: the pi worker reads any legal JSON, answers every request in time,
and never writes invalid JSON.

Each test drives the real ``contextfork pi-worker`` process over its stdio protocol (JSON
lines), as the extension ``hooks/pi/contextfork.ts`` does, and reads every answer with a strict
parser: RFC 8259 JSON (no ``NaN``/``Infinity``) in valid UTF-8.
"""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from contextfork.hashing import sha256_bytes
from tests.helpers import Repo, clean_env, run_cli

FOLD_ENV = {"CONTEXTFORK_PI_ADAPTIVE": "0", "CONTEXTFORK_PI_BUDGET": "1000"}


def strict(raw: bytes) -> Any:
    """One answer line as JSON JavaScript's ``JSON.parse`` accepts, or AssertionError."""
    text = raw.decode("utf-8")  # UnicodeDecodeError: not UTF-8

    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in an answer: not JSON ({text[:200]!r})")

    return json.loads(text, parse_constant=refuse)


class WorkerProc:
    """A real worker process, fed raw lines, answers read with a timeout."""

    def __init__(self, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "contextfork", "pi-worker"], cwd=cwd, env=clean_env(env),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.sel = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)

    def send(self, line: bytes | str | dict[str, Any]) -> None:
        if isinstance(line, dict):
            line = json.dumps(line)
        raw = line.encode("utf-8") if isinstance(line, str) else line
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def answer(self, timeout: float = 60.0) -> Any:
        assert self.proc.stdout is not None
        if not self.sel.select(timeout):
            raise AssertionError(f"no answer within {timeout} s (worker alive: "
                                 f"{self.proc.poll() is None})")
        raw = self.proc.stdout.readline()
        assert raw, f"the worker ended (exit {self.proc.wait()}): {self.stderr()}"
        return strict(raw.rstrip(b"\n"))

    def ask(self, line: bytes | str | dict[str, Any], timeout: float = 60.0) -> Any:
        self.send(line)
        return self.answer(timeout)

    def stderr(self) -> str:
        self.proc.kill()
        self.proc.wait()
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode("utf-8", "replace")[-2000:]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.sel.close()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


def _messages(tool_text: str, turns: int = 8) -> list[dict[str, Any]]:
    ts = 1_700_000_000_000
    out: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "go"}],
                                  "timestamp": ts}]
    for n in range(1, turns + 1):
        cid = f"toolu_{n:04d}"
        out.append({"role": "assistant", "content": [
            {"type": "text", "text": f"step {n}"},
            {"type": "toolCall", "id": cid, "name": "bash", "arguments": {"command": "make"}}],
            "timestamp": ts + 2 * n})
        out.append({"role": "toolResult", "toolCallId": cid, "toolName": "bash",
                    "content": [{"type": "text", "text": tool_text if n == 1 else "ok\n"}],
                    "isError": False, "timestamp": ts + 2 * n + 1})
    return out


def test_a_lone_surrogate_in_a_request_is_answered_and_the_worker_serves_on(repo: Repo) -> None:
    # legal JSON: "\ud83d" is half of an emoji, what a JavaScript string cut mid-emoji gives
    w = WorkerProc(repo.path, {"CONTEXTFORK_PI_ADAPTIVE": "0",
                               "CONTEXTFORK_PI_TIMEOUT_MS": "120000"})
    try:
        first = w.ask(r'{"id": 1, "op": "\ud83d"}')
        assert first["id"] == 1 and first["ok"] is False and "unknown op" in first["error"]
        # a re-read listing whose lines hold the half emoji: deduplicated, so stored
        listing = "".join(f"def handler_{i}(request):  # cut \ud83d\n    return {i}\n"
                          for i in range(30))
        msgs = _messages("ok\n", turns=6)
        for n in (1, 4):
            msgs[2 * n]["content"][0]["text"] = listing
        render = w.ask({"id": 2, "op": "render", "session": "s", "cwd": str(repo.path),
                        "base": 0, "messages": msgs, "context_window": 200_000}, timeout=120)
        assert render["id"] == 2 and render["ok"] is True, render
        assert w.ask({"id": 3, "op": "ping"}) == {"ok": True, "id": 3, "ms": w_ms(w)}
    finally:
        w.close()


def w_ms(_w: WorkerProc) -> Any:
    """Any timing: the answers' ``ms`` is not what these tests are about."""

    class _Any:
        def __eq__(self, other: object) -> bool:
            return isinstance(other, (int, float))

    return _Any()


def test_a_lone_surrogate_is_stored_as_the_replacement_character(repo: Repo) -> None:
    """The cold store holds what a UTF-8 encoder (pi's own, sending the text) makes of it:
    U+FFFD, hashed as such, and the store verifies."""
    w = WorkerProc(repo.path, {**FOLD_ENV, "CONTEXTFORK_PI_TIMEOUT_MS": "120000"})
    try:
        tool = "cut \ud83d here\n" + "a long listing line\n" * 2000
        line = json.dumps({"id": 1, "op": "render", "session": "surr", "cwd": str(repo.path),
                           "base": 0, "messages": _messages(tool), "context_window": 8000})
        assert "\\ud83d" in line  # sent as the extension sends it: an escape, legal JSON
        out = w.ask(line, timeout=120)
        assert out["ok"] is True and out["plan"] is not None, out
    finally:
        w.close()
    nodes = sorted((repo.path / ".contextfork" / "cold" / "surr-render").rglob("step_*.json"))
    held = [json.loads(p.read_bytes()) for p in nodes]
    node = next(n for n in held if "cut \ufffd here" in n["content"])
    assert "\ud83d" not in node["content"]
    assert node["payload_sha256"] == sha256_bytes(node["content"].encode("utf-8"))
    res = run_cli("fold", "validate", "--session", "surr-render", cwd=repo.path)
    assert res.returncode == 0, res.stdout + res.stderr


def test_an_id_json_cannot_carry_is_answered_with_a_null_id_in_valid_json(repo: Repo) -> None:
    w = WorkerProc(repo.path)
    try:
        for line in ['{"id": NaN, "op": "ping"}', '{"id": Infinity, "op": "ping"}',
                     '{"id": -Infinity, "op": "ping"}', '{"id": 1e999, "op": "ping"}']:
            out = w.ask(line)  # strict: NaN/Infinity in the answer fail here
            assert out["id"] is None, (line, out)
        bad = w.ask('{"id": 7, "op": "ping", "weight": NaN}')
        assert bad == {"ok": False, "error": bad["error"], "id": 7, "ms": w_ms(w)}
        assert "NaN" in bad["error"]
        assert w.ask({"id": 8, "op": "ping"})["ok"] is True
    finally:
        w.close()


def test_a_malformed_line_gets_an_error_answer_carrying_its_id(repo: Repo) -> None:
    w = WorkerProc(repo.path)
    try:
        out = w.ask('{"id": 41, "op": "render", "messages": [')
        assert out["id"] == 41 and out["ok"] is False and "not valid JSON" in out["error"]
        assert w.ask("[1, 2]") == {"ok": False, "error": "request is not a JSON object",
                                   "id": None, "ms": w_ms(w)}
        assert w.ask({"id": 42, "op": "ping"})["id"] == 42
    finally:
        w.close()


def test_bytes_that_are_not_utf8_are_answered_and_the_worker_serves_on(repo: Repo) -> None:
    w = WorkerProc(repo.path)
    try:
        out = w.ask(b'{"id": 5, "op": "\xff\xfe"}')
        assert out["id"] == 5 and out["ok"] is False
        assert w.ask({"id": 6, "op": "ping"})["id"] == 6
    finally:
        w.close()


def test_a_30_mb_tool_output_is_answered_within_the_timeout_and_the_worker_serves_on(
    repo: Repo,
) -> None:
    """The extension waits 1 s by default; pass-through is an answer. 5 s: a loaded machine."""
    w = WorkerProc(repo.path, FOLD_ENV)
    try:
        assert w.ask({"id": 0, "op": "ping"})["ok"] is True  # imports paid
        text = "tests/test_big.py " + "." * 30_000_000
        line = json.dumps({"id": 1, "op": "render", "session": "big", "cwd": str(repo.path),
                           "base": 0, "messages": _messages(text), "context_window": 8000})
        started = time.perf_counter()
        w.send(line)
        out = w.answer(timeout=60)
        took = time.perf_counter() - started
        assert out["id"] == 1 and out["ok"] is True and out["plan"] is None, out
        assert took < 5.0, f"answered after {took:.1f} s"
        started = time.perf_counter()
        assert w.ask({"id": 2, "op": "ping"}, timeout=60)["ok"] is True
        assert time.perf_counter() - started < 5.0
    finally:
        w.close()
