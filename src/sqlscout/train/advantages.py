"""Group-relative advantages (GRPO): each episode's reward minus its group's mean.

No division by the group's standard deviation unless asked (SPEC §8: it over-weights
groups whose rewards barely differ). A group whose rewards are all equal carries no
signal: its advantages are exactly zero, so it contributes nothing to the gradient
(the loop may instead drop it and draw fresh questions).

>>> group_advantages([3.0, 0.1, 0.1, 0.0])
[2.2, -0.7, -0.7, -0.8]
>>> group_advantages([0.1, 0.1, 0.1])
[0.0, 0.0, 0.0]
"""

from __future__ import annotations

import math
from typing import Sequence

__all__ = ["group_advantages", "is_uniform"]


def is_uniform(rewards: Sequence[float], tol: float = 1e-9) -> bool:
    """Whether every reward in the group is the same (the group carries no signal)."""
    return max(rewards) - min(rewards) <= tol


def group_advantages(rewards: Sequence[float], *, scale_by_std: bool = False, eps: float = 1e-4) -> list[float]:
    """``r_i - mean(r)``, optionally divided by the group's (sample) standard deviation + eps.

    Rounded to 12 decimals so that hand-computed values compare exactly.
    """
    if len(rewards) < 2:
        raise ValueError("a GRPO group needs at least two episodes")
    if is_uniform(rewards):
        return [0.0] * len(rewards)
    mean = sum(rewards) / len(rewards)
    centred = [r - mean for r in rewards]
    if scale_by_std:
        std = math.sqrt(sum(c * c for c in centred) / (len(rewards) - 1))
        centred = [c / (std + eps) for c in centred]
    return [round(c, 12) for c in centred]
