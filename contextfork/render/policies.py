"""Named render policies: which operators run, with which knobs (each switchable on its own)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from contextfork.errors import UsageError

PolicyKind = Literal["base", "refold", "epoch", "mask", "compact"]
POLICY_NAMES: tuple[PolicyKind, ...] = ("base", "refold", "epoch", "mask", "compact")

# pi-fold budget in (estimated) prompt tokens. Small enough that the recorded sessions here reach
# it, large enough that epochs stay rare (a commit is the only scheduled prefix rewrite).
DEFAULT_BUDGET = 32_000
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
    commit_at: float = 0.8
    fold_down_to: float = 0.4
    mask_keep: int = 10
    compact_threshold: int = DEFAULT_COMPACT_THRESHOLD
    min_run_lines: int = 3
    min_run_chars: int = 160
    min_line_chars: int = 4
    signature_min_lines: int = 12
    note_cap: int = 2000

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
            "commit_at": self.commit_at,
            "fold_down_to": self.fold_down_to,
            "mask_keep": self.mask_keep,
            "compact_threshold": self.compact_threshold,
        }


def policy(name: str, *, k: int = 3, budget_tokens: int | None = None) -> Policy:
    """The named policy with its defaults; ``epoch`` is ReFold plus the pi-fold epoch policy."""
    budget = DEFAULT_BUDGET if budget_tokens is None else budget_tokens
    if k <= 0:
        raise UsageError(f"--k must be a positive integer, got {k}")
    if name == "base":
        return Policy("base", k=k)
    if name == "refold":
        return Policy("refold", k=k, dedupe=True, fold_stale=True, reminder=True, auto_stale=True)
    if name == "epoch":
        return Policy(
            "epoch", k=k, dedupe=True, fold_stale=True, reminder=True, epoch=True,
            budget_tokens=budget, rich_factor=1.0,
        )
    if name == "mask":
        return Policy("mask", k=k)
    if name == "compact":
        return Policy("compact", k=k)
    raise UsageError(
        f"unknown policy {name!r}", hint=f"choose from {', '.join(POLICY_NAMES)}"
    )


def parse_policies(spec: str, *, k: int = 3, budget_tokens: int | None = None) -> list[Policy]:
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if not names:
        raise UsageError("--policy is empty", hint=f"choose from {', '.join(POLICY_NAMES)}")
    seen: list[str] = []
    for n in names:
        if n not in seen:
            seen.append(n)
    return [policy(n, k=k, budget_tokens=budget_tokens) for n in seen]
