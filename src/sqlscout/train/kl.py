"""The KL coefficient: adaptive (held near a target KL), fixed, or off.

The adaptive rule is a proportional controller on the ratio of the measured KL per
token to the target, bounded so one noisy step moves the coefficient at most by
``rate`` (10 %):

    coef <- clamp(coef * (1 + rate * clip(kl / target - 1, -1, 1)), min_coef, max_coef)

>>> from sqlscout.train.config import KLConfig
>>> c = KLController(KLConfig(coef=0.1, target=0.005, rate=0.1))
>>> c.update(0.01); round(c.coef, 6)   # KL twice the target: +10 %
0.11
>>> c.update(0.0025); round(c.coef, 6)  # half the target: -5 %
0.1045
"""

from __future__ import annotations

from typing import Any

from sqlscout.train.config import KLConfig

__all__ = ["KLController"]


class KLController:
    def __init__(self, config: KLConfig) -> None:
        self.config = config
        self.coef = 0.0 if config.mode == "off" else config.coef

    @property
    def enabled(self) -> bool:
        """Whether the reference policy must be run at all."""
        return self.config.mode != "off"

    def update(self, kl: float) -> None:
        """Move the coefficient after a step that measured ``kl`` (mean k3 per token)."""
        if self.config.mode != "adaptive":
            return
        error = min(max(kl / self.config.target - 1.0, -1.0), 1.0)
        self.coef = min(max(self.coef * (1.0 + self.config.rate * error), self.config.min_coef), self.config.max_coef)

    def state_dict(self) -> dict[str, Any]:
        return {"coef": self.coef}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.coef = float(state["coef"])
