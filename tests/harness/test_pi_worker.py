"""The pi worker: pi's messages in, the renderer's view out as a safe plan over them."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from contextfork.harness.pi import verbs as pi_verbs
from contextfork.harness.pi.live import LiveSession, live_policy
from contextfork.harness.pi.messages import apply_plan, check_plan, fingerprint
from contextfork.harness.pi.worker import Worker, serve
from contextfork.render.api import render
from contextfork.transcript.model import Session
from tests.harness.pi_session import calls, pi_messages
from tests.helpers import Repo, run_cli

BUDGET = 3000  # estimated tokens: a 40-line listing is ~600, so epochs commit every few turns


def _session(root: Path | None, budget: int = BUDGET) -> LiveSession:
    return LiveSession("s1", live_policy("epoch", None, budget, 3, False), root)


def _drive(sess: LiveSession, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every call of the scripted session through the live path (deltas, as the extension
    sends them); the answers in order."""
    sent = 0
    answers = []
    for ctx in calls(messages):
        prev = fingerprint(ctx[sent - 1]) if sent else None
        assert sess.sync(sent, prev, json.loads(json.dumps(ctx[sent:])))
        sent = len(ctx)
        answers.append({**sess.render(), "ctx": ctx})
    return answers


def _sent(answer: dict[str, Any]) -> list[dict[str, Any]]:
    ctx = answer["ctx"]
    return ctx if answer["plan"] is None else apply_plan(ctx, answer["plan"])


def _tool_pairs_valid(msgs: list[dict[str, Any]]) -> bool:
    open_calls: set[str] = set()
    for m in msgs:
        if m["role"] == "assistant":
            if open_calls:
                return False
            open_calls = {c["id"] for c in m["content"] if c.get("type") == "toolCall"}
        elif m["role"] == "toolResult":
            if m["toolCallId"] not in open_calls:
                return False
            open_calls.discard(m["toolCallId"])
    return not open_calls


def test_live_view_is_the_view_render_gives_for_the_same_history(repo: Repo) -> None:
    sess = _session(repo.path)
    answers = _drive(sess, pi_messages(30))
    pol = sess.policy
    steps = list(sess.live.steps)
    full = Session(format="pi", session_id="s1", steps=steps)
    view = render(full, len(steps) + 1, pol)
    assert sess.last_view is not None
    assert [m.content for m in sess.last_view.messages] == [m.content for m in view.messages]
    assert answers[-1]["stats"]["epochs"] >= 1


def test_rendered_calls_keep_tool_pairs_and_stay_under_the_budget_band(repo: Repo) -> None:
    answers = _drive(_session(repo.path), pi_messages(40))

    assert any(a["plan"] is not None for a in answers)
    for a in answers:
        assert "why" not in a, a["why"]
        sent = _sent(a)
        assert _tool_pairs_valid(sent)
        assert check_plan(a["ctx"], a["plan"] or list(range(len(a["ctx"])))) is None
    window = [a["stats"]["est_tokens"] for a in answers]
    full = sum(len(json.dumps(m)) for m in answers[-1]["ctx"]) // 4
    assert max(window) < 2 * BUDGET  # epochs hold it in a band; only the notes accumulate
    assert window[-1] < full / 3


def test_prefix_is_rewritten_only_at_boundary_moves_and_commits(repo: Repo) -> None:
    answers = _drive(_session(repo.path), pi_messages(40))
    rewrites = 0
    for prev, cur in itertools.pairwise(answers):
        a, b = _sent(prev), _sent(cur)
        if b[: len(a)] != a:
            rewrites += 1
            moved = (cur["stats"]["boundary"] != prev["stats"]["boundary"]
                     or cur["stats"]["epochs"] != prev["stats"]["epochs"])
            assert moved, "the prefix changed without a boundary move or an epoch commit"
    assert 0 < rewrites < len(answers) - 1  # and between moves the prompt only grows


def test_every_removed_original_is_in_the_cold_store_and_peek_gives_its_exact_bytes(
    repo: Repo,
) -> None:
    sess = _session(repo.path)
    messages = pi_messages(30)
    _drive(sess, messages)
    view = sess.last_view
    assert view is not None and view.folds
    fid, steps = next(iter(view.folds.items()))

    out = pi_verbs.run(sess, "peek", {"target": fid, "bytes": 100_000})

    assert out["ok"], out
    assert " verified]" in out["text"].splitlines()[0]
    step = sess.live.steps[steps[0] - 1]
    result = step.tool_results[0].content
    assert result in out["text"]  # the exact tool output, back from the store
    assert (repo.path / ".contextfork" / "cold" / "s1-render").is_dir()


def test_a_pinned_step_is_never_stubbed_or_folded(repo: Repo) -> None:
    sess = _session(repo.path)
    msgs = pi_messages(40)
    answers = _drive(sess, msgs[:5])  # steps 1-2 are finished
    pinned = pi_verbs.run(sess, "pin", {"steps": [1, 2]})
    assert pinned["ok"], pinned
    answers += _drive(sess, msgs)
    assert sess.last_view is not None and sess.last_view.folds
    pinned_results = {i for i, m in enumerate(answers[-1]["ctx"])
                      if m["role"] == "toolResult" and m["toolCallId"] in ("toolu_0001",
                                                                           "toolu_0002")}
    for a in answers:
        plan = a["plan"] or list(range(len(a["ctx"])))
        for i in pinned_results:
            if i < len(a["ctx"]):
                assert i in plan  # kept as pi sent it: not replaced, not dropped
    assert all(s not in (1, 2) for steps in sess.last_view.folds.values() for s in steps)


def test_threshold_compaction_makes_the_next_call_commit_an_epoch(repo: Repo) -> None:
    worker = Worker()
    msgs = pi_messages(30)
    base = {"session": "s2", "cwd": str(repo.path)}
    first = worker.handle({"op": "render", **base, "base": 0, "messages": msgs[:-2]})
    assert first["ok"] and first["stats"]["epochs"] == 0  # 200k default window: no commit yet

    assert worker.handle({"op": "compact", **base, "trigger": "threshold"})["action"] == "epoch"
    after = worker.handle({"op": "render", **base, "base": len(msgs) - 2,
                           "prev_fp": fingerprint(msgs[-3]), "messages": msgs[-2:]})

    assert after["stats"]["epochs"] == 1 and after["plan"] is not None
    assert after["stats"]["est_tokens"] < first["stats"]["est_tokens"]


def test_worker_asks_for_the_whole_array_when_histories_differ(repo: Repo) -> None:
    worker = Worker()
    msgs = pi_messages(5)
    base = {"session": "s3", "cwd": str(repo.path)}
    assert worker.handle({"op": "render", **base, "base": 0, "messages": msgs[:4]})["ok"]
    stale = worker.handle({"op": "render", **base, "base": 4, "prev_fp": "user:0",
                           "messages": msgs[4:]})
    assert stale == {"ok": False, "need": "full"}
    assert worker.handle({"op": "render", **base, "base": 0, "messages": msgs})["ok"]


def test_serve_answers_bad_requests_and_keeps_serving() -> None:
    lines = "not json\n[1]\n" + json.dumps({"id": 7, "op": "ping"}) + "\n"
    out = io.StringIO()
    assert serve(io.StringIO(lines), out) == 0
    answers = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [a["ok"] for a in answers] == [False, False, True]
    assert answers[2]["id"] == 7


def test_pi_worker_command_runs_the_json_lines_loop(repo: Repo) -> None:
    msgs = pi_messages(3)
    reqs = [{"id": 1, "op": "ping"},
            {"id": 2, "op": "render", "session": "s4", "cwd": str(repo.path), "base": 0,
             "messages": msgs}]
    res = run_cli("pi-worker", cwd=repo.path, input="".join(json.dumps(r) + "\n" for r in reqs))
    assert res.returncode == 0, res.stderr
    answers = [json.loads(x) for x in res.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 2]
    assert answers[1]["ok"] and answers[1]["plan"] is None  # a short session goes untouched


def _folded_midway(repo: Repo) -> tuple[LiveSession, list[dict[str, Any]], int]:
    """A live session driven to a fold, its whole history, and one step it folded."""
    sess = _session(repo.path)
    msgs = pi_messages(30)
    _drive(sess, msgs[:-6])
    assert sess.last_view is not None and sess.last_view.folds
    return sess, msgs, next(iter(sess.last_view.folds.values()))[0]


def test_pinning_a_folded_step_brings_it_back_raw_and_durable(repo: Repo) -> None:
    sess, msgs, folded = _folded_midway(repo)

    out = pi_verbs.run(sess, "pin", {"step": folded})
    assert out["ok"], out
    answers = _drive(sess, msgs)

    assert all(folded not in steps for steps in sess.last_view.folds.values())
    cid = f"toolu_{folded:04d}"
    sent = _sent(answers[-1])
    assert any(m["role"] == "toolResult" and m["toolCallId"] == cid for m in sent)
    again = _session(repo.path)  # a new worker (pi restarted) reads the same decision
    pi_verbs.load(again)
    assert again.decisions is not None and again.decisions.pinned


def test_a_recorded_step_peek_expands_the_step_in_the_live_view_at_once(repo: Repo) -> None:
    sess, msgs, folded = _folded_midway(repo)

    out = pi_verbs.run(sess, "peek", {"step": folded, "record": True})
    assert out["ok"], out
    answers = _drive(sess, msgs)

    assert all(folded not in steps for steps in sess.last_view.folds.values())
    cid = f"toolu_{folded:04d}"
    assert any(m["role"] == "toolResult" and m["toolCallId"] == cid for m in _sent(answers[-1]))


@pytest.mark.parametrize("args", [{"step": "x"}, {"steps": [5, 1]}, {}])
def test_a_bad_verb_call_is_an_error_answer_not_a_crash(repo: Repo, args: dict[str, Any]) -> None:
    sess = _session(repo.path)
    _drive(sess, pi_messages(4))
    out = Worker().verb(sess, "pin", args)
    assert out["ok"] is False and out["error"]


def _with_peek(messages: list[dict[str, Any]], after_turn: int, record: bool = False
               ) -> list[dict[str, Any]]:
    """The scripted session with a peek call (and its answer) after ``after_turn``."""
    at = next(i for i, m in enumerate(messages)
              if m["role"] == "toolResult" and m["toolCallId"] == f"toolu_{after_turn:04d}") + 1
    ts = messages[at - 1]["timestamp"]
    args: dict[str, Any] = {"verb": "peek", "target": "F1"}
    if record:
        args["record"] = True
    call = {"role": "assistant", "content": [{"type": "toolCall", "id": "toolu_peek",
                                              "name": "contextfork_context", "arguments": args}],
            "timestamp": ts + 1}
    answer = {"role": "toolResult", "toolCallId": "toolu_peek", "toolName": "contextfork_context",
              "content": [{"type": "text", "text": "[contextfork peek F1 (step 1) bytes 0-900 "
                                                   "of 900 · sha256 of whole ab12 verified]\n"
                                                   + "exact original bytes\n" * 40
                                                   + "peek_marker_value = 42\n"}],
              "isError": False, "timestamp": ts + 2}
    # the agent goes on to use what it peeked at, so the step is not stale (not folded)
    nxt = dict(messages[at])
    nxt["content"] = [{"type": "text", "text": "Using peek_marker_value."}, *nxt["content"]]
    return [*messages[:at], call, answer, nxt, *messages[at + 1:]]


def test_a_peek_answer_is_ephemeral_once_the_boundary_passes_it(repo: Repo) -> None:
    msgs = _with_peek(pi_messages(30), after_turn=8)
    answers = _drive(_session(repo.path, budget=1_000_000), msgs)  # no epoch: only the peek

    def peek_text(a: dict[str, Any]) -> str | None:
        sent = _sent(a)
        return next((m["content"][0]["text"] for m in sent
                     if m["role"] == "toolResult" and m["toolCallId"] == "toolu_peek"), None)

    texts = [peek_text(a) for a in answers if peek_text(a) is not None]
    assert "exact original bytes" in texts[0]  # shown in full at the end of the prompt
    assert texts[-1].startswith("[contextfork peek F1 ") and "ephemeral peek" in texts[-1]
    assert "exact original bytes" not in texts[-1]
    changes = sum(1 for a, b in itertools.pairwise(texts) if a != b)
    assert changes == 1  # shrinks once, at a boundary move, and stays


def test_a_recorded_peek_stays(repo: Repo) -> None:
    msgs = _with_peek(pi_messages(30), after_turn=8, record=True)
    answers = _drive(_session(repo.path, budget=1_000_000), msgs)
    sent = _sent(answers[-1])
    peek = next(m for m in sent if m["role"] == "toolResult" and m["toolCallId"] == "toolu_peek")
    assert "exact original bytes" in peek["content"][0]["text"]


def test_fold_notes_name_only_the_verbs_pis_model_has(repo: Repo) -> None:
    sess = _session(repo.path)
    answers = _drive(sess, pi_messages(40))
    assert answers[-1]["stats"]["epochs"] >= 1
    assert sess.last_view is not None
    notes = [m.content for m in sess.last_view.messages if m.kind == "note"]
    assert notes, "nothing was folded"
    for note in notes:  # pi's tool has peek; it has no `restore` command
        assert "restore" not in note and "contextfork_context" in note and "peek" in note
    # nor does any dedupe stub (a re-read listing; no epoch commits under this budget)
    answers = _drive(_session(repo.path, budget=1_000_000), pi_messages(40))
    ours = [b["text"] for a in answers for m in _sent(a) if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "text" and "[contextfork" in b["text"]]
    stubs = [t for t in ours if "already shown in" in t]
    assert stubs, "no dedupe stub was made"
    assert not [t for t in ours if "restore" in t], [t for t in ours if "restore" in t][:1]
    assert all("contextfork_context peek step" in t for t in stubs)


def test_staging_between_calls_leaves_the_first_epoch_nothing_to_store(repo: Repo) -> None:
    """Fold ahead of need: while pi is idle the worker stores finished steps' originals, so
    the call that commits the first epoch of a long session writes nothing to the store."""
    sess = _session(repo.path)
    sent = 0
    committed = False
    for ctx in calls(pi_messages(40)):
        prev = fingerprint(ctx[sent - 1]) if sent else None
        assert sess.sync(sent, prev, json.loads(json.dumps(ctx[sent:])))
        sent = len(ctx)
        before = set(sess.stored)
        epochs = sess.last_view.epochs if sess.last_view is not None else 0
        answer = sess.render()
        assert "why" not in answer, answer["why"]
        if sess.last_view is not None and sess.last_view.epochs > epochs:
            committed = True
            removed = {r.step for r in sess.last_view.removals}
            assert removed and removed <= before, "the epoch had to store originals in the call"
        while sess.stage():  # idle: a few steps per slice until nothing is left
            pass
        assert all(s.index in sess.stored for s in sess.live.steps[:-1])
    assert committed
