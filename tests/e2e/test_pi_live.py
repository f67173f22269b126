"""The real pi (npm, pinned) with contextfork's extension, folding live against the mock."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.mock_anthropic import MockAnthropic, Reply, ToolUse, Usage
from tests.e2e.pi_rig import MODEL, PiRig

KNOBS = {"CONTEXTFORK_PI_ADAPTIVE": "0", "CONTEXTFORK_PI_BUDGET": "3000",
         "CONTEXTFORK_PI_TIMING": "1", "CONTEXTFORK_PI_TIMEOUT_MS": "5000"}
TURNS = 22


@pytest.fixture
def pi(tmp_path: Path, client_prefix: Path, anthropic: MockAnthropic) -> PiRig:
    rig = PiRig.create(tmp_path, client_prefix, anthropic)
    for n in range(1, TURNS + 1):
        rig.repo.write(f"data/part_{n}.txt", "".join(
            f"part {n} line {i}: value_{n}_{i} = compute_{n}({i}, {i * n})\n" for i in range(45)))
    rig.contextfork("hooks", "install", "--pi")
    return rig


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _pairs_ok(messages: list[dict[str, Any]]) -> bool:
    """Every tool_use is answered in the very next user message, every tool_result answers."""
    for i, m in enumerate(messages):
        blocks = m["content"] if isinstance(m["content"], list) else []
        uses = {b["id"] for b in blocks if b.get("type") == "tool_use"}
        if m["role"] == "assistant" and uses:
            nxt = messages[i + 1]["content"] if i + 1 < len(messages) else []
            got = {b.get("tool_use_id") for b in nxt if isinstance(b, dict)}
            if not uses <= got:
                return False
        if m["role"] == "user":
            prev = messages[i - 1]["content"] if i > 0 else []
            prev_uses = {b.get("id") for b in prev if isinstance(b, dict)} if isinstance(
                prev, list) else set()
            for b in blocks:
                if b.get("type") == "tool_result" and b.get("tool_use_id") not in prev_uses:
                    return False
    return True


def _tokens(body: dict[str, Any]) -> int:
    return len(json.dumps(_strip(body["messages"]))) // 4


def _results(body: dict[str, Any]) -> dict[str, str]:
    out = {}
    for m in body["messages"]:
        for b in m["content"] if isinstance(m["content"], list) else []:
            if b.get("type") == "tool_result":
                c = b.get("content")
                out[b["tool_use_id"]] = c if isinstance(c, str) else "".join(
                    x.get("text", "") for x in c)
    return out


def test_pi_folds_live_within_the_band_with_valid_pairs_pins_and_a_verified_peek(
    pi: PiRig,
) -> None:
    reads = [ToolUse("bash", {"command": f"cat data/part_{n}.txt"}) for n in range(1, TURNS + 1)]
    pin = ToolUse("contextfork_context", {"verb": "pin", "steps": [1, 2]})
    peek = ToolUse("contextfork_context", {"verb": "peek", "target": "F1", "bytes": 100000})
    script = [Reply(text=f"Reading part {n + 1}.", tool_uses=[reads[n]]) for n in range(2)]
    script.append(Reply(text="Pinning the first two reads.", tool_uses=[pin]))
    script += [Reply(text=f"Reading part {n + 1}.", tool_uses=[reads[n]])
               for n in range(2, TURNS)]
    script.append(Reply(text="Checking the first fold.", tool_uses=[peek]))
    script.append(Reply(text="All parts read."))
    pi.mock.script(*script)

    run = pi.run("Read every part of data/ and summarise it.", env=KNOBS)

    assert run.returncode == 0, run
    assert "All parts read." in run.stdout
    bodies = [_strip(b) for b in pi.mock.main_requests()]
    assert len(bodies) == len(script)
    log = pi.log()
    renders = [e for e in log if e.get("event") == "context" and e.get("action") == "render"]
    assert not [e for e in log if e.get("action") == "pass-through"], log
    assert renders and max(e["folds"] for e in renders) >= 1, log[-5:]

    # tool_use / tool_result pairs stay valid in every request the model got
    assert all(_pairs_ok(b["messages"]) for b in bodies)
    # the window stays in a band while the history grows past the commit watermark
    sizes = [_tokens(b) for b in bodies]
    history = sum(len(p.read_text()) for p in (pi.repo.path / "data").iterdir()) // 4
    assert max(sizes) < history / 2, sizes
    # the prefix is rewritten only at commits/boundary moves: otherwise a request extends the last
    rewrites = sum(1 for a, b in itertools.pairwise(bodies)
                   if b["messages"][: len(a["messages"]) - 1] != a["messages"][:-1])
    moves = len({(e["boundary"], e["epochs"]) for e in renders})
    assert 0 < rewrites <= moves, (rewrites, moves)
    # pinned steps 1-2 (a durable decision) went out exactly as pi sent them in every request
    assert "pin: steps 1-2 (recorded)" in _results(bodies[3])[pin.id]
    first_two = {reads[0].id, reads[1].id}
    for b in bodies[3:]:
        res = _results(b)
        for tid in first_two:
            assert tid in res and res[tid].startswith("part "), (tid, list(res))
    # the peek brought back the exact bytes of a folded step, verified
    answer = _results(bodies[-1])[peek.id]
    assert answer.startswith("[contextfork peek F1") and " verified]" in answer.splitlines()[0]
    folded_read = next(t for t in reads[2:] if t.id not in _results(bodies[-2]))
    n = reads.index(folded_read) + 1
    assert (pi.repo.path / "data" / f"part_{n}.txt").read_text() in answer


def _workers(pi: PiRig) -> list[dict[str, Any]]:
    return [e for e in pi.log() if e.get("event") == "worker"]


def test_pi_restarts_a_killed_worker_and_folds_again(pi: PiRig) -> None:
    killed: list[int] = []

    def kill_worker(_body: dict[str, Any]) -> bool:
        started = [e for e in _workers(pi) if e.get("pid")]
        if started and not killed:
            killed.append(started[-1]["pid"])
            os.kill(started[-1]["pid"], signal.SIGKILL)
            # pi's next context event must not race the exit: wait until the extension saw it
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not any(e.get("restart") for e in _workers(pi)):
                time.sleep(0.05)
        return True

    reads = [ToolUse("bash", {"command": f"cat data/part_{n}.txt"}) for n in range(1, 9)]
    script = [Reply(text="One.", tool_uses=[reads[0]]),
              Reply(text="Two.", tool_uses=[reads[1]], when=kill_worker)]
    script += [Reply(text=f"Part {n + 1}.", tool_uses=[reads[n]]) for n in range(2, 8)]
    script.append(Reply(text="Survived."))
    pi.mock.script(*script)

    run = pi.run("Read eight parts.", env=KNOBS)

    assert run.returncode == 0, run
    assert "Survived." in run.stdout and killed
    workers = _workers(pi)
    restarted = [e for e in workers if e.get("action") == "restarted"]
    assert len(restarted) == 1 and restarted[0]["pid"] != killed[0], workers
    # one death, one restart: the session's own end (pi closes its worker) is not a death
    assert [e.get("restart") for e in workers if e.get("restart")] == ["1 of 3"], workers
    log = pi.log()
    after = log[log.index(restarted[0]) + 1:]
    renders = [e for e in after if e.get("event") == "context" and e.get("action") == "render"]
    assert renders and max(e["folds"] for e in renders) >= 1, after[-5:]
    bodies = [_strip(b) for b in pi.mock.main_requests()]
    assert all(_pairs_ok(b["messages"]) for b in bodies)
    assert len(_results(bodies[-1])) < 8  # folded again by the new worker


def test_pi_gives_up_on_a_worker_that_keeps_dying_and_passes_through(
    pi: PiRig, tmp_path: Path
) -> None:
    broken = tmp_path / "broken" / "contextfork"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("import sys\nsys.exit(3)\n")
    reads = [ToolUse("bash", {"command": f"cat data/part_{n}.txt"}) for n in range(1, 4)]
    pi.mock.script(*[Reply(text=f"Part {n + 1}.", tool_uses=[reads[n]]) for n in range(3)],
                   Reply(text="Still here."))

    run = pi.run("Read three parts.", env={**KNOBS, "CONTEXTFORK_PI_RESTARTS": "2",
                                           "PYTHONPATH": str(broken.parent)})

    assert run.returncode == 0, run
    assert "Still here." in run.stdout
    workers = _workers(pi)
    assert len([e for e in workers if e.get("pid")]) == 3, workers  # the first and two restarts
    gave_up = [e for e in workers if "not restarted" in str(e.get("error"))]
    assert len(gave_up) == 1 and "(3 deaths this session)" in gave_up[0]["error"], workers
    last = _strip(pi.mock.main_requests()[-1])
    assert len(_results(last)) == 3  # untouched: every output is there
    assert not [e for e in pi.log() if e.get("action") == "render"]


class _Rpc:
    """pi in RPC mode (JSON lines on stdin/stdout), for what `-p` cannot do: a second session
    in the same process."""

    def __init__(self, pi: PiRig, env: dict[str, str]) -> None:
        import subprocess

        self.proc = subprocess.Popen(
            [str(pi.bin), "--mode", "rpc", "--provider", "mock", "--model", MODEL],
            cwd=pi.repo.path, env={**pi.env, **env}, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True,
        )  # fmt: skip
        self.seen: list[dict[str, Any]] = []
        import queue
        import threading

        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def send(self, **command: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(json.JSONDecodeError):
                self.events.put(json.loads(line))
        self.events.put(None)

    def until(self, predicate: Any, timeout: float = 60) -> dict[str, Any]:
        import queue

        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                event = self.events.get(timeout=left)
            except queue.Empty:
                break
            if event is None:
                break
            self.seen.append(event)
            if predicate(event):
                return dict(event)
        types = [e.get("type") for e in self.seen[-8:]]
        raise AssertionError(f"pi --mode rpc: not seen in time; last events {types}")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.reader.join(timeout=10)
            assert self.proc.stdout is not None
            self.proc.stdout.close()


def test_a_new_pi_session_gets_a_fresh_worker_and_no_restart_is_counted(pi: PiRig) -> None:
    pi.mock.script(
        Reply(text="One.", tool_uses=[ToolUse("bash", {"command": "cat data/part_1.txt"})]),
        Reply(text="First session done."),
        Reply(text="Second session done."),
    )
    rpc = _Rpc(pi, KNOBS)
    try:
        rpc.send(id="1", type="prompt", message="Read part 1.")
        rpc.until(lambda e: e.get("type") == "agent_end")
        rpc.send(id="2", type="new_session")
        assert rpc.until(lambda e: e.get("id") == "2")["success"] is True
        rpc.send(id="3", type="prompt", message="Hello again.")
        rpc.until(lambda e: e.get("type") == "agent_end")
    finally:
        rpc.close()
    workers = _workers(pi)
    started = [e for e in workers if e.get("pid")]
    assert [e["action"] for e in started] == ["started", "started"], workers
    assert started[0]["pid"] != started[1]["pid"]
    assert not [e for e in workers if e.get("restart") or e.get("level") == "error"], workers
    renders = [e for e in pi.log() if e.get("action") == "render"]
    assert len(renders) >= 3, pi.log()  # both sessions' calls went through a worker


def test_pi_passes_messages_through_when_the_worker_is_too_slow(pi: PiRig) -> None:
    pi.mock.script(
        Reply(text="One.", tool_uses=[ToolUse("bash", {"command": "cat data/part_1.txt"})]),
        Reply(text="Fine."),
    )

    run = pi.run("Read one part.", env={**KNOBS, "CONTEXTFORK_PI_TIMEOUT_MS": "1"})

    assert run.returncode == 0, run
    assert "Fine." in run.stdout
    whys = [str(e.get("why")) for e in pi.log() if e.get("action") == "pass-through"]
    assert whys and all("no answer within 1 ms" in w for w in whys), whys


def test_pi_under_load_sends_its_last_fold_extended_never_an_unfolded_call(pi: PiRig) -> None:
    # Once folding has started, every render takes 2.5 s in the worker against a 1.5 s timeout
    # (its own deadline 1.2 s): what the calls send then is the extension's own answer.
    reads = [ToolUse("bash", {"command": f"cat data/part_{n}.txt"}) for n in range(1, TURNS + 1)]
    script = [Reply(text=f"Reading part {n + 1}.", tool_uses=[reads[n]]) for n in range(TURNS)]
    pi.mock.script(*script, Reply(text="All parts read."))
    slow = {**KNOBS, "CONTEXTFORK_PI_TIMEOUT_MS": "1500",
            "CONTEXTFORK_TEST_PAUSE_AT": "pi-render-folded", "CONTEXTFORK_TEST_PAUSE_S": "2.5"}

    run = pi.run("Read every part of data/ and summarise it.", env=slow)

    assert run.returncode == 0, run
    assert "All parts read." in run.stdout
    bodies = [_strip(b) for b in pi.mock.main_requests()]
    calls = [e for e in pi.log() if e.get("event") == "context"]
    late = [e for e in calls if e.get("action") == "last-plan"]
    assert len(late) >= 3, calls[-5:]
    # the first call that folded something, and what it folded
    issued: list[str] = []
    first, folded = None, set()
    for i, b in enumerate(bodies):
        folded = set(issued) - set(_results(b))
        if folded:
            first = i
            break
        issued += [t.id for t in reads if t.id in _results(b)]
    assert first is not None, "nothing was ever folded"
    for b in bodies[first:]:  # never unfolded again, tool pairs valid
        assert _pairs_ok(b["messages"])
        assert not folded & set(_results(b)), "a call went out unfolded after folding started"
    assert not [e for e in calls[first:] if e.get("action") == "pass-through"], calls
    print(f"\n{len(late)} of {len(bodies)} calls answered by the last fold extended; "
          f"sizes {[_tokens(b) for b in bodies]}")


def test_pi_threshold_compaction_is_answered_by_an_epoch_commit(
    tmp_path: Path, client_prefix: Path, anthropic: MockAnthropic
) -> None:
    rig = PiRig.create(tmp_path, client_prefix, anthropic, window=40_000,
                       compaction={"enabled": True, "reserveTokens": 8000,
                                   "keepRecentTokens": 2000})
    rig.contextfork("hooks", "install", "--pi")
    big = Usage(input_tokens=35_000)  # pi's count passes 40k - 8k: a threshold compaction
    anthropic.script(
        Reply(text="Looking.", tool_uses=[ToolUse("bash", {"command": "ls"})]),
        Reply(text="Done for now.", usage=big),
    )

    run = rig.run("Look around.", env=KNOBS)

    assert run.returncode == 0, run
    log = rig.log()
    assert any(e.get("event") == "compact" and e.get("action") == "epoch-commit" for e in log), log
    sessions = rig.sessions()
    assert sessions
    entries = [json.loads(x) for x in sessions[0].read_text().splitlines()]
    assert not [e for e in entries if e.get("type") == "compaction"]  # pi's lossy summary: none
    # ... and the PreCompact path (detached, like Claude Code's hook) folded and exported
    hooks_log = rig.repo.path / ".contextfork" / "logs" / "hooks.log"
    deadline = time.monotonic() + 60
    done: list[dict[str, Any]] = []
    while not done and time.monotonic() < deadline:
        if hooks_log.exists():
            done = [e for e in map(json.loads, hooks_log.read_text().splitlines())
                    if e.get("event") == "pre-compact" and e.get("action") == "fold+export"]
        time.sleep(0.5)
    assert done and done[0]["folded_steps"] >= 2 and done[0]["package_id"], done
    pkg = rig.repo.path / ".contextfork" / "packages" / done[0]["package_id"]
    meta = json.loads((pkg / "session_metadata.json").read_text())
    assert meta["harness"] == "pi", meta.get("harness")  # the package says which harness made it
