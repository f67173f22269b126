"""Named render policies: which operators run, with which knobs (each switchable on its own)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from contextfork.errors import UsageError

PolicyKind = Literal["native", "base", "refold", "epoch", "mask", "compact", "live"]
POLICY_NAMES: tuple[PolicyKind, ...] = ("native", "base", "refold", "epoch", "mask", "compact")

# pi-fold budget in (estimated) prompt tokens when none is derived from the session's window.
DEFAULT_BUDGET = 32_000
# Share of the session's context window (see contextfork.render.window) an epoch budget takes,
# in estimated tokens: 0.2 x 200k = 40k for Claude models, never reached on a 1M-window model.
BUDGET_SHARE = 0.2
# refold's own safety budget: a loose one (0.4 x the window: 80k estimated tokens on Claude
# models) so a long session commits a rare lossless epoch instead of growing until the harness
# compacts it lossily. Chosen on the dev set: on the Claude Code session with a native
# compaction 0.5 / 0.4 / 0.3 give 1.07 / 0.96 / 0.83 x native cost (0.5 never commits there);
# below 0.4 refold turns into epoch. See docs/render-replay.md.
REFOLD_BUDGET_SHARE = 0.4
# live (the model-API proxy's policy, `contextfork run`): epoch with a tighter band, 0.1 x the
# window (20k estimated message tokens on a 200k window). Everything it folds stays one tool
# call away, so it can fold harder than a policy that must carry the history itself. Measured:
# on the dev Claude Code session (152 calls, one native compaction) replay prices epoch's
# budget 40k / 30k / 20k / 15k at 0.804 / 0.801 / 0.760 / 0.763 x native; with the real Claude
# Code on bench/proxy_bench.py (160 calls) 0.2 / 0.15 / 0.1 of the window cost 0.55 / 0.49 /
# 0.46 x the run without the proxy. Not in the default replay set: `--policy native,live`.
LIVE_BUDGET_SHARE = 0.1
# Below this many estimated prompt tokens refold/epoch send the history as received: a stub,
# a note or a reminder costs more than it can save on a prompt this small.
MIN_PROMPT_TOKENS = 6_000
# ... and before this many calls: a boundary move re-sends the last k steps uncached (a cache
# write costs about 11 cache reads), and what it saves is paid back only over the calls still
# to come; a session that ran t calls is expected to run about t more, so a move made before
# about this many calls is a bet the session is unlikely to repay.
MIN_CALLS = 20
# An agent that ignored this many reminders will not write the lines: each further reminder
# costs tokens and, once it is dropped behind the boundary, a prefix rewrite.
REMIND_LIMIT = 3
# A cache write in cache reads on Anthropic's default 5-minute cache (1.25 / 0.1); the replay
# sets the session's own ratio from its price card and TTL. refold declines a boundary move
# that would not pay back its rewrite; epoch does not: a declined move leaves raw tokens that
# bring its next commit (a deep rewrite) closer, which this accounting cannot see (measured on
# the dev set: gating epoch lowers its total but raises its worst session from 0.80 to 0.88 x
# native cost).
WRITE_READ_RATIO = 12.5
# Claude Code auto-compacts at about 167k of a 200k window (measured on real sessions).
DEFAULT_COMPACT_THRESHOLD = 167_000


@dataclass(frozen=True)
class Policy:
    name: PolicyKind
    k: int = 3
    dedupe: bool = False
    fold_stale: bool = False
    reminder: bool = False
    auto_stale: bool = False
    rich_factor: float | None = None
    epoch: bool = False
    budget_tokens: int = DEFAULT_BUDGET
    budget_share: float | None = None  # when set: budget = share x the session's window
    min_prompt_tokens: int = 0
    min_calls: int = 0
    remind_limit: int | None = None  # stop reminding an agent that ignored this many
    # > 0: a boundary move that would not pay back its rewrite is declined (the crossing steps
    # stay as sent); the price of a cache write in cache reads (12.5 on Anthropic's 5-minute
    # cache, 20 on the 1-hour one, 10 where uncached input is plain input).
    write_read_ratio: float = 0.0
    commit_at: float = 0.8
    fold_down_to: float = 0.4
    mask_keep: int = 10
    compact_threshold: int = DEFAULT_COMPACT_THRESHOLD
    min_run_lines: int = 3
    min_run_chars: int = 160
    min_line_chars: int = 4
    signature_min_lines: int = 12
    note_cap: int = 2000
    # How a fold note tells the model to get a step back, in the verbs its harness offers
    # (mini-swe-agent answers `restore N`; pi's model has the contextfork_context tool).
    restore_hint: str = "`restore N` gives any back exactly"
    restore_verb: str = "restore"

    def with_(self, **changes: object) -> Policy:
        return replace(self, **changes)  # type: ignore[arg-type]

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "k": self.k,
            "dedupe": self.dedupe,
            "fold_stale": self.fold_stale,
            "reminder": self.reminder,
            "auto_stale": self.auto_stale,
            "epoch": self.epoch,
            "budget_tokens": self.budget_tokens,
            "budget_share": self.budget_share,
            "min_prompt_tokens": self.min_prompt_tokens,
            "min_calls": self.min_calls,
            "remind_limit": self.remind_limit,
            "write_read_ratio": self.write_read_ratio,
            "commit_at": self.commit_at,
            "fold_down_to": self.fold_down_to,
            "mask_keep": self.mask_keep,
            "compact_threshold": self.compact_threshold,
        }


def policy(
    name: str, *, k: int = 3, budget_tokens: int | None = None, adaptive: bool = True
) -> Policy:
    """The named policy with its defaults; ``epoch`` is ReFold plus the pi-fold epoch policy.

    Without ``budget_tokens`` the epoch budget is a share of the session's context window
    (resolved by the renderer from the recorded model or compaction), not one fixed number.
    ``adaptive=False`` drops the warm-up gates and the reminder limit (operators act from the
    first boundary move), which small hand-built sessions in tests rely on.
    """
    budget = DEFAULT_BUDGET if budget_tokens is None else budget_tokens
    share = BUDGET_SHARE if budget_tokens is None else None
    if k <= 0:
        raise UsageError(f"--k must be a positive integer, got {k}")
    if name == "base":
        return Policy("base", k=k)
    if name == "native":
        return Policy("native", k=k)
    gates: dict[str, float | None] = {
        "min_prompt_tokens": MIN_PROMPT_TOKENS, "min_calls": MIN_CALLS,
        "remind_limit": REMIND_LIMIT} if adaptive else {}
    if name == "refold":
        return Policy("refold", k=k, dedupe=True, fold_stale=True, reminder=True, auto_stale=True,
                      epoch=True, budget_share=REFOLD_BUDGET_SHARE,
                      write_read_ratio=WRITE_READ_RATIO if adaptive else 0.0,
                      **gates)  # type: ignore[arg-type]
    if name == "epoch":
        return Policy(
            "epoch", k=k, dedupe=True, fold_stale=True, reminder=True, epoch=True,
            auto_stale=True, budget_tokens=budget, budget_share=share, rich_factor=1.0,
            **gates,  # type: ignore[arg-type]
        )
    if name == "live":
        return Policy(
            "live", k=k, dedupe=True, fold_stale=True, reminder=False, epoch=True,
            auto_stale=True, budget_tokens=budget,
            budget_share=LIVE_BUDGET_SHARE if budget_tokens is None else None, rich_factor=1.0,
            **gates,  # type: ignore[arg-type]
        )
    if name == "mask":
        return Policy("mask", k=k)
    if name == "compact":
        return Policy("compact", k=k)
    raise UsageError(
        f"unknown policy {name!r}", hint=f"choose from {', '.join(POLICY_NAMES)}"
    )


def parse_policies(
    spec: str, *, k: int = 3, budget_tokens: int | None = None, adaptive: bool = True
) -> list[Policy]:
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if not names:
        raise UsageError("--policy is empty", hint=f"choose from {', '.join(POLICY_NAMES)}")
    seen: list[str] = []
    for n in names:
        if n not in seen:
            seen.append(n)
    return [policy(n, k=k, budget_tokens=budget_tokens, adaptive=adaptive) for n in seen]
