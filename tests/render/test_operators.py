"""Each operator on its own: boundary, dedupe, fold (STALE, reminder), epoch, baselines."""

from __future__ import annotations

from contextfork.cold.decisions import BRIEF_CAP
from contextfork.render.api import make_renderer, render
from contextfork.render.boundary import boundary
from contextfork.render.dedupe import LineIndex, dedupe_text, is_signature
from contextfork.render.fold import REMINDER, note_texts, parse_marks, parse_steps
from contextfork.render.metrics import first_difference
from contextfork.render.policies import Policy, policy
from contextfork.resources import render_template
from tests.render.builders import file_view, long_session, session, step


def test_boundary_moves_every_k_steps() -> None:
    assert [boundary(t, 3) for t in range(1, 13)] == [0, 0, 0, 0, 0, 3, 3, 3, 6, 6, 6, 9]
    assert [boundary(t, 1) for t in range(1, 5)] == [0, 1, 2, 3]


def test_dedupe_stubs_a_repeated_line_range_and_keeps_top_level_signatures() -> None:
    index = LineIndex()
    first = file_view("mod", 1, 60)
    d1 = dedupe_text(first, 2, 3, index)
    assert d1.text == first and not d1.runs  # nothing shown before
    second = "header line that is new\n" + file_view("mod", 21, 80)
    d2 = dedupe_text(second, 5, 3, index)
    assert len(d2.runs) == 1
    run = d2.runs[0]
    assert (run.start, run.end) == (1, 40)  # lines 21..60 repeat, 61..80 are new
    assert "already shown in step 2 L21-60; restore 5" in d2.text
    assert "def mod_func_21(arg_21):" in d2.text and "def mod_func_51(arg_51):" in d2.text
    assert "value_30 =" not in d2.text and "value_70 =" in d2.text
    assert d2.text.startswith("header line that is new\n")


def test_dedupe_leaves_short_repeats_alone() -> None:
    index = LineIndex()
    dedupe_text("alpha beta\ngamma delta\n", 1, 0, index)
    d = dedupe_text("alpha beta\ngamma delta\nnew\n", 2, 0, index)
    assert not d.runs and d.text == "alpha beta\ngamma delta\nnew\n"


def test_dedupe_forgets_lines_of_a_folded_step() -> None:
    index = LineIndex()
    dedupe_text(file_view("m", 1, 30), 1, 0, index)
    index.drop_step(1)
    assert not dedupe_text(file_view("m", 1, 30), 2, 0, index).runs


def test_signature_detection_handles_line_number_prefixes() -> None:
    assert is_signature("    12→class Foo:")
    assert is_signature("  7\tasync def run():")
    assert not is_signature("    12→    def method(self):")


def test_progress_and_stale_lines_are_parsed_from_the_head_of_a_reply() -> None:
    m = parse_marks("PROGRESS: tests pass, now docs\nSTALE: 3, 5-7\n\nrest of reply")
    assert m.progress == "tests pass, now docs" and m.stale == (3, 5, 6, 7)
    assert not parse_marks("no lines here\nSTALE is a word").has_lines
    assert parse_steps("2–4, 9") == (2, 3, 4, 9)


def test_template_teaches_the_lines_the_parser_reads() -> None:
    text = render_template("refold_prompt.md.j2", k=3, example_steps="4, 5")
    assert "PROGRESS:" in text and "STALE:" in text and "restore N" in text and "peek F" in text
    example = "PROGRESS: read the parser\nSTALE: 4, 5\n"
    assert parse_marks(example).stale == (4, 5)


def _stale_session() -> list:
    steps = [step(1, "start", "ls", "a\nb\n", prompt="do it")]
    for i in range(2, 13):
        reply = f"PROGRESS: p{i}\nSTALE: {i - 1}\nworking" if i in (6, 7) else f"working {i}"
        steps.append(step(i, reply, f"echo {i}", f"output of step {i}\n"))
    return steps


def test_stale_steps_fold_into_one_shared_progress_note_behind_the_boundary() -> None:
    s = session(_stale_session())
    pol = Policy("refold", fold_stale=True)
    view = render(s, 12, pol)
    notes = [m for m in view.messages if m.kind == "note"]
    assert len(notes) == 2  # 5 (PROGRESS p6) and 6 (PROGRESS p7) differ → two notes
    assert "PROGRESS: p6" in notes[0].content and "restore 5" in notes[0].content
    assert not any(m.step in (5, 6) and m.kind == "output" for m in view.messages)
    folds = [r for r in view.removals if r.kind == "fold"]
    assert [r.step for r in folds] == [5, 6]


def test_adjacent_folded_steps_share_one_note() -> None:
    texts = note_texts([4, 5, 6], [], progress="one line")
    assert len(texts) == 1 and texts[0][0] == (4, 5, 6) and "steps 4-6" in texts[0][1]


def test_a_reply_without_the_lines_gets_a_reminder_in_its_tool_output() -> None:
    s = session(_stale_session())
    view = render(s, 12, Policy("refold", reminder=True))
    tail_outputs = [m for m in view.messages if m.kind == "output" and m.step > view.boundary]
    assert tail_outputs and all(m.content.endswith(REMINDER) for m in tail_outputs
                                if m.step not in (6, 7))
    assert not any(m.content.endswith(REMINDER) for m in tail_outputs if m.step in (6, 7))
    behind = [m for m in view.messages if m.kind == "output" and 0 < m.step <= view.boundary]
    assert behind and not any(REMINDER in m.content for m in behind)


def test_between_boundary_moves_the_prompt_only_grows_at_its_end() -> None:
    s = long_session(40)
    for name in ("refold", "epoch"):
        r = make_renderer(s, policy(name, budget_tokens=6000))
        prev = None
        for t in range(1, 41):
            view = r.advance(t)
            if prev is not None and view.boundary == prev[0] and view.epochs == prev[2]:
                assert first_difference(prev[1], view.messages) == len(prev[1]), (name, t)
            prev = (view.boundary, view.messages, view.epochs)


def test_operators_act_only_behind_the_boundary() -> None:
    s = long_session(30)
    view = render(s, 30, policy("refold"))
    assert view.boundary == 27
    assert all(r.step <= view.boundary for r in view.removals)
    for m in view.messages:
        if m.step > view.boundary and m.kind == "output":
            assert "[contextfork:" not in m.content.replace(REMINDER, "")


def test_epoch_commits_at_80_percent_and_folds_stalest_first_down_to_40() -> None:
    s = long_session(60)
    pol = Policy("epoch", dedupe=False, epoch=True, budget_tokens=20_000)
    r = make_renderer(s, pol)
    from contextfork.tokens import estimate_tokens

    occ = []
    epochs = 0
    for t in range(1, 61):
        view = r.advance(t)
        occ.append(sum(estimate_tokens(m.content) for m in view.messages))
        if view.epochs > epochs:
            epochs = view.epochs
            assert occ[-1] <= 0.4 * 20_000 + 2_000, occ[-1]
    assert epochs >= 2
    assert max(occ) < 0.8 * 20_000 + 3_000
    notes = [m for m in view.messages if m.kind == "note"]
    assert notes and all(len(n.content) <= BRIEF_CAP + 10 for n in notes)
    folded_steps = sorted(r.step for r in view.removals if r.kind == "fold")
    # Step 1 (`ls`, two lines) is smaller than its brief would be: never folded. Step 2 showed
    # mod.py first and every reply names it: the stalest are the oldest steps after it.
    assert 1 not in folded_steps and 2 not in folded_steps and folded_steps[0] == 3


def test_render_is_deterministic() -> None:
    s = long_session(25)
    for name in ("refold", "epoch", "mask", "compact", "base"):
        a = render(s, 25, policy(name, budget_tokens=5000))
        b = render(s, 25, policy(name, budget_tokens=5000))
        assert a.messages == b.messages and a.removals == b.removals


def test_mask_keeps_the_last_ten_tool_outputs() -> None:
    s = long_session(20)
    view = render(s, 20, policy("mask"))
    outputs = [m for m in view.messages if m.kind == "output"]
    raw = [m for m in outputs if not m.content.startswith("[old tool output omitted")]
    assert len(raw) == 10 and [m.step for m in raw] == list(range(10, 20))


def test_compact_uses_recorded_compaction_points() -> None:
    s = long_session(20)
    s.compactions = session([], compactions=[10]).compactions
    view = render(s, 15, policy("compact"))
    steps = {m.step for m in view.messages if m.step > 0}
    assert min(steps) == 10


def test_compact_summarizes_at_the_threshold_when_nothing_is_recorded() -> None:
    s = long_session(30)
    view = render(s, 30, policy("compact").with_(compact_threshold=5000))
    assert any(m.kind == "note" and "compacted" in m.content for m in view.messages)
    assert view.messages[0].kind == "system"
