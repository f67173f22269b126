"""Limits a user can raise through the environment, read one way everywhere."""

from __future__ import annotations

import os


def positive_int(name: str, default: int) -> int:
    """``$name`` as a positive integer; ``default`` when it is unset, not a number, or not
    above zero (a typo must never turn a size limit off)."""
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default
