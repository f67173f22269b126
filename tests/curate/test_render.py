"""The renderer honours the agent's decisions; without them it is byte-identical."""

from __future__ import annotations

from pathlib import Path

from contextfork.cold.decisions import Brief, Decisions
from contextfork.render.api import make_renderer, render
from contextfork.render.engine import ReFoldRenderer, View
from contextfork.render.messages import step_messages
from contextfork.render.policies import Policy, policy
from contextfork.transcript import load_session
from tests.render.builders import long_session

EPOCH = Policy("epoch", dedupe=True, epoch=True, budget_tokens=5_000)


def _run(session: object, pol: Policy, decisions: Decisions | None, upto: int) -> list[View]:
    r = make_renderer(session, pol, decisions)  # type: ignore[arg-type]
    return [r.advance(t) for t in range(1, upto + 1)]


def _same(a: View, b: View) -> bool:
    return a.messages == b.messages and a.removals == b.removals and a.folds == b.folds


def test_no_decisions_render_byte_identical(transcripts_dir: Path) -> None:
    s = long_session(40)
    unknown = Decisions(pinned=frozenset({"uuid:not-in-this-session"}),
                        briefs={"uuid:x": Brief("uuid:x", ("uuid:x",), "nothing here")},
                        boundary="uuid:nope")
    for name in ("refold", "epoch"):
        pol = policy(name, budget_tokens=8000, adaptive=False)
        plain = _run(s, pol, None, 40)
        for d in (Decisions(), unknown):
            assert all(_same(a, b) for a, b in zip(plain, _run(s, pol, d, 40), strict=True))
    real = load_session(transcripts_dir / "claude-code" / "tool_heavy.jsonl")
    last = max(st.index for st in real.steps)
    pol = policy("epoch", budget_tokens=6000, adaptive=False)
    assert _same(render(real, last, pol), render(real, last, pol, Decisions()))


def test_a_pinned_step_is_never_stubbed_or_folded_through_epoch_commits() -> None:
    s = long_session(60)
    plain = _run(s, EPOCH, None, 60)
    assert plain[-1].epochs >= 2
    folded = sorted({r.step for r in plain[-1].removals if r.kind == "fold"})
    stubbed = sorted({r.step for r in plain[-1].removals if r.kind == "stub"})
    pin = next(x for x in folded if x in stubbed)  # a step the plain render stubs and folds
    views = _run(s, EPOCH, Decisions(pinned=frozenset({f"index:{pin}"})), 60)
    assert views[-1].epochs >= 2
    raw = [m.content for m in step_messages(s.steps[pin - 1]).body]
    for v in views:
        assert not any(r.step == pin for r in v.removals)
        if v.t > pin:
            shown = [m.content for m in v.messages if m.step == pin and m.kind != "note"]
            assert all(c in shown or c.rstrip() in "\n".join(shown) for c in raw)
    others = {r.step for r in views[-1].removals if r.kind == "fold"}
    assert others and pin not in others


def test_an_expanded_step_is_shown_raw_and_refold_folds_it_again() -> None:
    s = long_session(60)
    plain = _run(s, EPOCH, None, 60)[-1]
    target = sorted({r.step for r in plain.removals if r.kind == "fold"})[0]
    expanded = _run(s, EPOCH, Decisions(expanded=frozenset({f"index:{target}"})), 60)[-1]
    assert target not in {r.step for r in expanded.removals}
    assert _same(plain, _run(s, EPOCH, Decisions(), 60)[-1])  # refold = the decision dropped


def test_an_agent_brief_replaces_the_generated_note_verbatim() -> None:
    s = long_session(60)
    plain = _run(s, EPOCH, None, 60)[-1]
    _fid, steps = next((f, st) for f, st in plain.folds.items() if len(st) >= 3)
    words = "Read mod.py windows; nothing to fix there — the bug is in compute_mod()."
    keys = tuple(f"index:{x}" for x in steps[:2])
    d = Decisions(briefs={keys[0]: Brief(keys[0], keys, words)})
    view = _run(s, EPOCH, d, 60)[-1]
    notes = [m.content for m in view.messages if m.kind == "note"]
    mine = [n for n in notes if words in n]
    assert len(mine) == 1
    assert f"s{steps[0]} (agent brief): {words}" in mine[0]
    assert f"s{steps[1]}:" not in mine[0]  # the brief covers the second step too
    assert f"s{steps[2]}:" in mine[0]  # a step outside the brief keeps its generated line


def test_reboundary_stops_the_next_epoch_commit_before_the_chosen_step() -> None:
    s = long_session(60)
    plain = _run(s, EPOCH, None, 60)[-1]
    folded = sorted({r.step for r in plain.removals if r.kind == "fold"})
    stop = folded[len(folded) // 2]
    view = _run(s, EPOCH, Decisions(boundary=f"index:{stop}"), 60)[-1]
    got = {r.step for r in view.removals if r.kind == "fold"}
    assert got and max(got) < stop


def test_same_history_and_decisions_render_the_same_bytes() -> None:
    s = long_session(50)
    d = Decisions(pinned=frozenset({"index:7"}), expanded=frozenset({"index:12"}),
                  briefs={"index:4": Brief("index:4", ("index:4", "index:5"), "setup read")})
    a = _run(s, EPOCH, d, 50)
    b = _run(s, EPOCH, d, 50)
    assert all(_same(x, y) for x, y in zip(a, b, strict=True))


def _fifty_turns_with_a_fold() -> tuple[ReFoldRenderer, str, list[int]]:
    """A live renderer 50 turns into a 60-step session, and a fold of two steps or more."""
    r = make_renderer(long_session(60), EPOCH)
    assert isinstance(r, ReFoldRenderer)
    for t in range(1, 51):
        view = r.advance(t)
    fid, steps = next((f, st) for f, st in view.folds.items() if len(st) >= 2)
    return r, fid, list(steps)


def test_pinning_a_folded_step_mid_session_shows_it_raw_and_refolds_the_rest() -> None:
    r, fid, steps = _fifty_turns_with_a_fold()
    pin = steps[0]
    r.apply_decisions(Decisions(pinned=frozenset({f"index:{pin}"})))
    view = r.advance(51)
    assert fid not in view.folds and not any(rm.step == pin for rm in view.removals)
    assert any(m.step == pin and m.kind == "output" for m in view.messages)
    assert all(x in {rm.step for rm in view.removals if rm.kind == "fold"} for x in steps[1:])
    import re

    shown = [re.findall(r"\((F\d+)\)$", m.content) for m in view.messages if m.kind == "note"]
    assert sorted(x[0] for x in shown) == sorted(view.folds)  # one note per fold, no id reused
    r.apply_decisions(Decisions())  # unpinned: a later commit may fold it again
    for t in range(52, 61):
        view = r.advance(t)


def test_a_pin_survives_replay() -> None:
    from contextfork.render.replay import replay_runs

    s = long_session(60)
    pol = policy("epoch", budget_tokens=5000, adaptive=False)
    runs, _, _ = replay_runs(s, [pol])
    folded = sorted({r.step for r in runs[0].removals if r.kind == "fold"})
    assert folded
    pin = folded[0]
    runs, _, _ = replay_runs(s, [pol], decisions=Decisions(pinned=frozenset({f"index:{pin}"})))
    now = {r.step for r in runs[0].removals if r.kind == "fold"}
    assert pin not in {r.step for r in runs[0].removals} and now - {pin}


def test_a_pin_on_the_recorded_pi_session_survives_its_epoch_commits(transcripts_dir: Path) -> None:
    s = load_session(transcripts_dir / "pi" / "large-session.jsonl")
    t = max(st.index for st in s.steps) + 1
    pol = policy("epoch")
    plain = render(s, t, pol)
    assert plain.epochs >= 1
    folded = sorted({r.step for r in plain.removals if r.kind == "fold"})
    pin = folded[len(folded) // 2]
    key = next(st.identity for st in s.steps if st.index == pin)
    view = render(s, t, pol, Decisions(pinned=frozenset({key})))
    assert view.epochs >= 1
    assert pin not in {r.step for r in view.removals}
    assert any(m.step == pin and m.kind == "output" for m in view.messages)
    assert len({r.step for r in view.removals if r.kind == "fold"}) >= len(folded) - 1


def test_a_brief_given_after_the_fold_rewrites_its_note_once() -> None:
    r, _fid, steps = _fifty_turns_with_a_fold()
    key = f"index:{steps[0]}"
    r.apply_decisions(Decisions(briefs={key: Brief(key, (key,), "the agent's own words")}))
    view = r.advance(51)
    notes = [m.content for m in view.messages if m.kind == "note"]
    assert sum(f"s{steps[0]} (agent brief): the agent's own words" in n for n in notes) == 1
    assert steps[0] in {rm.step for rm in view.removals if rm.kind == "fold"}
