"""The ReFold boundary: operators act only on steps at or behind b_t.

b_t = max(0, k·⌊(t−k)/k⌋) moves only every k steps, so between moves every call's prompt is the
previous prompt plus new messages at its end: the provider's prefix cache keeps hitting.
"""

from __future__ import annotations


def boundary(t: int, k: int = 3) -> int:
    if k <= 0:
        raise ValueError("k must be positive")
    return max(0, k * ((t - k) // k))
