"""The replay bill: the native baseline, the harness fit, the cache model, honest carriage and
policies that adapt to the session (issue 12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextfork.render.api import make_renderer, render
from contextfork.render.bill import HarnessModel, card_for_model, fit_harness, modelled_bill
from contextfork.render.carriage import VisibleIdentifiers, content_text
from contextfork.render.engine import effective_budget
from contextfork.render.messages import Msg
from contextfork.render.metrics import PriceCard
from contextfork.render.policies import parse_policies, policy
from contextfork.render.replay import replay
from contextfork.transcript.model import Session, Usage
from tests.render.builders import file_view, long_session, session, step


def _with_usage(s: Session, overhead: int, scale: float) -> Session:
    """Record per-call usage the way a harness would: its overhead plus its own tokenizer."""
    r = make_renderer(s, policy("native"))
    from contextfork.render.metrics import Meter
    from contextfork.render.tokcache import TokenCache

    meter = Meter(TokenCache())
    for st in s.steps:
        view = r.advance(st.index)
        meter.observe(view.messages, view.boundary, 0.0)
        size = round(overhead + scale * meter.prompts[-1])
        st.usage = Usage(input_tokens=3, cache_read_input_tokens=size - 3, output_tokens=50)
    return s


def test_native_is_the_recorded_usage_and_policies_are_priced_in_the_harness_units() -> None:
    s = _with_usage(long_session(40), overhead=12_000, scale=1.25)
    report = replay(s, parse_policies("native,base,refold"))
    native, base, refold = report.policies
    assert native.prompt_tokens == sum(st.usage.context_tokens for st in s.steps if st.usage)
    assert report.harness["overhead_tokens"] == pytest.approx(12_000, abs=5)
    assert report.harness["scale"] == pytest.approx(1.25, abs=0.001)
    assert base.ratio_to_native == pytest.approx(1.0, abs=0.001)  # no compaction: same prompts
    assert refold.ratio_to_native is not None and refold.ratio_to_native < 1.0
    assert refold.prompt_tokens == sum(refold.prompt_per_call)
    assert min(refold.prompt_per_call) >= 12_000  # the harness overhead is in every call
    assert report.output_tokens == 40 * 50 and native.bill_usd > native.cost_usd


def test_native_cuts_the_history_at_the_recorded_compaction() -> None:
    s = long_session(20)
    s.compactions = session([], compactions=[10]).compactions
    native = render(s, 15, policy("native"))
    base = render(s, 15, policy("base"))
    assert min(m.step for m in native.messages if m.step > 0) == 10
    assert min(m.step for m in base.messages if m.step > 0) == 1


def test_the_fit_keeps_one_overhead_per_compaction_segment() -> None:
    rendered = [1000, 2000, 3000, 500, 1500]
    recorded: list[int | None] = [11_300, 12_600, 13_900, 14_650, 15_950]  # +3000 after it
    fit = fit_harness(rendered, recorded, [0, 0, 0, 1, 1])
    assert fit.scale == pytest.approx(1.3) and fit.overhead == pytest.approx(10_000)
    assert fit.mean_abs_error == pytest.approx(0.0, abs=1e-9)
    assert fit_harness([1, 2], [None, None], [0, 0]) == HarnessModel()


def test_the_cache_expires_after_the_ttl_and_writes_are_priced() -> None:
    card = PriceCard("t", 3.0, 0.3, 3.75, 6.0, 15.0)
    harness = HarnessModel(overhead=1000, scale=1.0)
    rendered, cached = [100, 200, 300], [0, 100, 200]
    warm = modelled_bill(harness, rendered, cached, [None, 60.0, 60.0], card, ttl=300)
    assert warm.reads == [0, 1100, 1200] and warm.writes == [1100, 100, 100]
    cold = modelled_bill(harness, rendered, cached, [None, 600.0, 60.0], card, ttl=300)
    assert cold.reads == [0, 0, 1200] and cold.expired == 1
    hour = modelled_bill(harness, rendered, cached, [None, 600.0, 60.0], card, ttl=3600)
    assert hour.reads == warm.reads
    assert hour.cost(card, 3600) == pytest.approx((2300 * 0.3 + 1300 * 6.0) / 1e6)
    implicit = PriceCard("g", 2.0, 0.2, None, None, 12.0)  # no write price: plain input
    bill = modelled_bill(harness, rendered, cached, [None, 1.0, 1.0], implicit)
    assert bill.writes == [0, 0, 0] and bill.fresh == [1100, 100, 100]


def test_each_session_is_priced_by_its_recorded_model() -> None:
    opus = card_for_model("claude-opus-4-6")
    assert opus is not None and (opus.input_per_mtok, opus.cache_write_per_mtok) == (5.0, 6.25)
    gemini = card_for_model("google/gemini-3-pro-preview")
    assert gemini is not None and gemini.cache_write_per_mtok is None
    assert card_for_model("unknown-model") is None


def test_carriage_does_not_count_lists_the_renderer_added() -> None:
    note = Msg("note", "[contextfork note: folded step 3] s3: → ls [names: parse_config_value]",
               3, -1, "note")
    stub = Msg("tool", "[contextfork: 40 lines (L1-40) already shown in step 2 L1-40; restore 5 "
               "for the exact text]\ndef load_widget_table(x):\nplain line after\n", 5, 1,
               "output")
    visible = VisibleIdentifiers()
    visible.update([note, stub], 0)
    assert "parse_config_value" not in visible and "load_widget_table" not in visible
    assert content_text(stub.content).endswith("plain line after\n")
    raw = Msg("tool", "def load_widget_table(x):\n", 2, 1, "output")
    visible.update([note, stub, raw], 2)
    assert "load_widget_table" in visible


def test_fold_notes_carry_no_list_of_names() -> None:
    view = render(long_session(60), 60, policy("epoch", budget_tokens=6000, adaptive=False))
    notes = [m.content for m in view.messages if m.kind == "note"]
    assert notes and not any("[names:" in n for n in notes)


def _referencing_session(n: int = 60) -> Session:
    """Early steps show names that every later reply keeps using."""
    steps = [step(1, "Start.", "cat -n core.py", file_view("core", 1, 80), prompt="Fix core")]
    for i in range(2, n + 1):
        a = 1 + (i % 7) * 30
        steps.append(step(i, "Reading the next module to see how it is wired into the rest of "
                          "the project before changing anything, and it still comes back to "
                          f"core_func_1 and core_func_{11 + (i % 5) * 10}.",
                          f"cat -n other{i}.py", file_view(f"other{i}", a, a + 40)))
    return session(steps)


def test_a_lossy_compaction_scores_below_refold_on_carriage() -> None:
    s = _referencing_session()
    pols = [policy("refold", adaptive=False),
            policy("compact", adaptive=False).with_(compact_threshold=15_000)]
    report = replay(s, pols)
    refold, compact = report.policies
    assert compact.carriage is not None and refold.carriage is not None
    assert refold.carriage >= 0.95 > compact.carriage


@pytest.mark.parametrize("n", [2, 5, 12])
def test_a_short_session_is_sent_as_received_and_never_costs_more_than_base(n: int) -> None:
    s = long_session(n, out_lines=30)
    report = replay(s, parse_policies("base,refold,epoch"))
    base, refold, epoch = report.policies
    for p in (refold, epoch):
        assert p.prompt_per_call == base.prompt_per_call and p.cost_usd <= base.cost_usd
        assert p.rewrites == 0 and p.removals == 0


def test_epoch_budget_comes_from_the_session_window() -> None:
    s = long_session(5)
    s.model = "claude-sonnet-4-5"
    assert effective_budget(policy("epoch"), s) == 40_000  # 0.2 x 200k
    s.model = "google/gemini-3-pro-preview"
    assert effective_budget(policy("epoch"), s) == int(0.2 * 1_048_576)
    assert effective_budget(policy("epoch", budget_tokens=6000), s) == 6000
    s.model = None
    s.compactions = session([], compactions=[3]).compactions
    s.compactions[0].pre_tokens = 167_000
    assert effective_budget(policy("epoch"), s) == int(0.2 * 167_000 / 0.835)


def test_probes_point_at_steps_after_the_recorded_compaction(transcripts_dir: Path) -> None:
    from contextfork.render.probes import probes_by_step
    from contextfork.transcript import load_session

    path = transcripts_dir / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    s = load_session(path)
    probes = probes_by_step(s, path, transcripts_dir.parent / "probes" / "dev-probes.json")
    assert sum(len(v) for v in probes.values()) == 16
    first = min(c.before_step for c in s.compactions)
    assert min(probes) >= first


def test_replay_of_a_real_claude_code_session_against_its_native_run(
    transcripts_dir: Path,
) -> None:
    from contextfork.transcript import load_session

    path = transcripts_dir / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    s = load_session(path)
    report = replay(s, parse_policies("native,base,epoch"))
    native, base, epoch = report.policies
    assert report.price_card.name == "claude-opus-4-6"
    assert 15_000 < report.harness["overhead_tokens"] < 40_000
    assert 1.1 < report.harness["scale"] < 1.5 and report.harness["mean_abs_error"] < 0.05
    assert native.prompt_tokens == sum(st.usage.context_tokens for st in s.steps if st.usage)
    assert report.native_recorded is not None
    assert report.native_recorded.prompt_tokens == native.prompt_tokens
    assert base.ratio_to_native is not None and base.ratio_to_native > 1.2  # no compaction
    assert epoch.ratio_to_native is not None and epoch.ratio_to_native <= 0.8
    # Priced at the 1-hour cache it recorded, epoch is about 0.80 x native's cost here (the
    # issue's 0.8 target sits right at it; see docs/NOTES-replay.md): never above it.
    assert epoch.cost_ratio_to_native is not None and epoch.cost_ratio_to_native < 0.85
    short = replay(s, parse_policies("native"), ttl=300).policies[0]
    assert short.cache_expiries >= 1  # the recorded gaps include idle periods over 5 min


def test_cli_replay_reports_against_native_with_a_chosen_ttl(tmp_path: Path) -> None:
    from tests.helpers import run_cli
    from tests.render.test_restore_replay import _write_session

    p = _write_session(tmp_path)
    r = run_cli("replay", "--transcript", str(p), "--ttl", "3600", "--json")
    assert r.returncode == 0, r.stderr
    data = r.json()["data"]
    assert [x["policy"] for x in data["policies"]][:2] == ["native", "base"]
    assert data["price_card"]["ttl_seconds"] == 3600
    assert data["price_card"]["cache_write_per_mtok"] == 6.0  # the 1-hour write price
    human = run_cli("replay", "--transcript", str(p), "--policy", "native,refold")
    assert human.returncode == 0 and "native as recorded" not in human.stdout  # no usage
    assert "harness" in human.stdout and "TTL 300" in " ".join(human.stdout.split())
    bad = run_cli("replay", "--transcript", str(p), "--ttl", "0")
    assert bad.returncode == 2 and "--ttl" in bad.stderr


def test_after_a_pure_append_the_whole_previous_prompt_is_read_as_recorded() -> None:
    # Recorded sizes differ from the fit by a little; those residuals must not turn into cache
    # writes of the native run (that would inflate native's bill and flatter every policy).
    card = PriceCard()
    harness = HarnessModel(overhead=1000, scale=1.0)
    bill = modelled_bill(harness, [100, 200, 300], [0, 100, 50], [None, 1.0, 1.0], card,
                         sizes=[1150, 1260, 1330])
    assert bill.reads == [0, 1150, 1050]  # append: all of call 1; rewrite: overhead + prefix
    assert bill.writes == [1150, 110, 280]


def test_the_ttl_is_the_one_the_recorded_usage_asked_for(transcripts_dir: Path) -> None:
    from contextfork.render.bill import recorded_ttl
    from contextfork.transcript import load_session
    from contextfork.transcript.model import RawLine

    s = long_session(3)
    assert recorded_ttl(s) is None
    s.steps[1].raw = [RawLine(offset=0, text='{"usage": {"cache_creation": '
                              '{"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 812}}}')]
    assert recorded_ttl(s) == 3600
    cc = load_session(transcripts_dir / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl")
    assert recorded_ttl(cc) == 3600  # Claude Code asks for the 1-hour cache
    report = replay(cc, parse_policies("native"))
    assert report.price_card.ttl_seconds == 3600 and report.price_card.cache_write_per_mtok == 10.0


def _unique_session(n: int) -> Session:
    """Every step shows new lines and every reply names what the step before showed."""
    steps = [step(1, "Start.", "cat -n a1.py", file_view("a1", 1, 60), prompt="Go")]
    for i in range(2, n + 1):
        steps.append(step(i, f"Next, after a{i - 1}_func_1.", f"cat -n a{i}.py",
                          file_view(f"a{i}", 1, 60)))
    return session(steps)


def test_refold_declines_a_boundary_move_that_would_not_pay_back_its_rewrite() -> None:
    s = _unique_session(30)  # nothing to stub, nothing stale: a move would only drop reminders
    gated = policy("refold")
    ungated = gated.with_(write_read_ratio=0.0)
    base, g = replay(s, [policy("base"), gated]).policies
    u = replay(s, [ungated]).policies[0]
    assert u.rewrites > 0 and g.rewrites == 0
    assert g.cost_usd < u.cost_usd and u.cost_usd > base.cost_usd
    # what it still adds to base is its three reminders, kept as sent rather than rewritten
    assert g.cost_usd <= base.cost_usd * 1.01
    worth = replay(long_session(60), [policy("refold")]).policies[0]  # repeated line ranges
    assert worth.rewrites > 0 and worth.removals > 0
