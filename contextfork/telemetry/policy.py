"""The context policy (IPSF defaults) and the risk it assigns — stdlib only.

The statusline evaluates the policy after every assistant message, so this module must not
import pydantic; strict validation with field-named errors lives in ``telemetry.models`` and is
used by ``status`` and ``policy show``. Here a broken file simply falls back to the defaults.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextfork.errors import ContextforkError
from contextfork.layout import policy_file

POLICY_VERSION = "1"

DEFAULT_POLICY: dict[str, Any] = {
    "policy_version": POLICY_VERSION,
    "tokens": {"warning": 50_000, "fork": 80_000, "hard_limit": None},
    "steps": {"warning": 75, "fork": 120},
}

# level -> (color, recommendation, badge label, badge emoji)
LEVELS: dict[str, tuple[str, str, str, str]] = {
    "optimal": ("green", "continue", "Normal", "🟢"),
    "caution": ("amber", "wrap_milestone", "Caution", "🟡"),
    "critical": ("red", "fork_recommended", "Critical", "🔴"),
}


def default_policy() -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(DEFAULT_POLICY))
    return copy


def read_policy_lenient(root: Path | None) -> dict[str, Any]:
    """The policy for the statusline: the file when it is sane, else the defaults."""
    if root is None:
        return default_policy()
    try:
        with open(policy_file(root), encoding="utf-8") as fh:
            data = json.load(fh)
        tokens, steps = data["tokens"], data["steps"]
        values = (tokens["warning"], tokens["fork"], steps["warning"], steps["fork"])
        hard = tokens.get("hard_limit")
    except (OSError, ValueError, KeyError, TypeError, ContextforkError):
        return default_policy()
    if not all(_positive_int(v) for v in values) or not (hard is None or _positive_int(hard)):
        return default_policy()
    return {"policy_version": POLICY_VERSION, "tokens": dict(tokens), "steps": dict(steps)}


def _positive_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def evaluate(tokens: int | None, steps: int, policy: dict[str, Any]) -> dict[str, Any]:
    """Risk level, colour, recommendation and the reasons behind them."""
    t, s = policy["tokens"], policy["steps"]
    reasons: list[str] = []
    level = "optimal"
    hard = t.get("hard_limit")
    if tokens is not None and hard is not None and tokens >= hard:
        level = "critical"
        reasons.append(f"tokens {tokens} >= hard_limit {hard}")
    if tokens is not None and tokens >= t["fork"]:
        level = "critical"
        reasons.append(f"tokens {tokens} >= fork {t['fork']}")
    elif tokens is not None and tokens >= t["warning"]:
        level = "caution" if level == "optimal" else level
        reasons.append(f"tokens {tokens} >= warning {t['warning']}")
    if steps >= s["fork"]:
        level = "critical"
        reasons.append(f"steps {steps} >= fork {s['fork']}")
    elif steps >= s["warning"]:
        level = "caution" if level == "optimal" else level
        reasons.append(f"steps {steps} >= warning {s['warning']}")
    color, recommendation, label, _emoji = LEVELS[level]
    return {
        "level": level,
        "color": color,
        "recommendation": recommendation,
        "label": label,
        "reasons": reasons,
    }


def format_tokens(n: int | None) -> str:
    """34,200 → ``34.2k``; 1,250,000 → ``1.25M``."""
    if n is None:
        return "?"
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n // 1000}k" if n % 1000 == 0 else f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.2f}M"


def badge(
    tokens: int | None,
    steps: int,
    risk: dict[str, Any],
    *,
    chain: int | None = None,
    source: str | None = None,
    messages_only: bool = False,
) -> str:
    """``[ 🟢 34.2k tokens | Step 28 | Normal ]``.

    A figure that is not the harness's recorded usage says so (``19.9k tokens (counted)``,
    with the harness overhead fitted on recorded usage; ``(counted, messages only)`` without);
    a fork shows its own steps beside the chain total (``Step 2 · chain 154``).
    """
    emoji = LEVELS[risk["level"]][3]
    how = f" ({source})" if source in ("counted", "estimated") and tokens is not None else ""
    if how and messages_only:  # no recorded usage told the harness's own share
        how = f" ({source}, messages only)"
    step = f"Step {steps}" + (f" · chain {chain}" if chain is not None else "")
    return f"[ {emoji} {format_tokens(tokens)} tokens{how} | {step} | {risk['label']} ]"
