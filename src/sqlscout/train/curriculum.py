"""The length curriculum (SPEC §8) and the order questions are drawn in.

Each training question has a length key: its gold SQL's length in the policy's tokens,
or its sqlglot AST size. Keys are standardised over the pool (``z``), and a question is
drawn with weight ``exp(beta(t) * z)``, ``beta`` moving linearly from ``beta_start`` to
``strength`` over ``ramp_steps``. Strength 0 turns the curriculum off: every question
weighs the same.

Draws are without replacement within an epoch: no question comes back before every
other one has been drawn, whatever the weights; the curriculum decides the *order*.
The sampler's whole state (its RNG, the epoch, what the epoch has used) is in
:meth:`LengthCurriculum.state_dict`, so a resumed run draws exactly what the
uninterrupted run would have.

>>> from sqlscout.train.config import CurriculumConfig
>>> cur = LengthCurriculum([1, 2, 3, 4], CurriculumConfig(strength=1.0, beta_start=-1.0, ramp_steps=10), seed=0)
>>> cur.beta(0), cur.beta(5), cur.beta(10), cur.beta(99)
(-1.0, 0.0, 1.0, 1.0)
>>> [round(float(w), 3) for w in cur.weights(0)]  # short questions first
[0.608, 0.249, 0.102, 0.042]
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from sqlscout.train.config import CurriculumConfig

__all__ = ["LengthCurriculum", "ast_size", "length_key"]


def ast_size(sql: str) -> int:
    """Nodes in the sqlglot AST of ``sql`` (0 when it does not parse).

    >>> ast_size("SELECT a FROM t") < ast_size("SELECT a, b FROM t JOIN u ON t.id = u.id WHERE b > 1")
    True
    """
    import sqlglot

    try:
        trees = sqlglot.parse(sql, read="sqlite")
    except Exception:  # noqa: BLE001 - an unparsable gold query just gets key 0
        return 0
    return sum(sum(1 for _ in tree.walk()) for tree in trees if tree is not None)


def length_key(sql: str | None, key: str, count_tokens: Any = None) -> float:
    """A question's length key: ``sql_tokens`` (needs ``count_tokens(text) -> int``) or ``ast_size``."""
    if not sql:
        return 0.0
    if key == "ast_size":
        return float(ast_size(sql))
    if key == "sql_tokens":
        if count_tokens is None:
            raise ValueError("the sql_tokens key needs a token counter")
        return float(count_tokens(sql))
    raise ValueError(f"unknown length key {key!r}")


class LengthCurriculum:
    """Draws question indices with the curriculum's weights, epoch by epoch."""

    def __init__(self, keys: Sequence[float], config: CurriculumConfig, seed: int) -> None:
        if not keys:
            raise ValueError("the curriculum needs at least one question")
        self.config = config
        self.keys = np.asarray(keys, dtype=np.float64)
        std = float(self.keys.std())
        self.z = (self.keys - self.keys.mean()) / std if std > 0 else np.zeros_like(self.keys)
        self.rng = np.random.default_rng(seed)
        self.epoch = 0
        self.used = np.zeros(len(self.keys), dtype=bool)

    def __len__(self) -> int:
        return len(self.keys)

    def beta(self, step: int) -> float:
        """The exponent at ``step``: linear from beta_start to strength, then flat; 0 when off."""
        cfg = self.config
        if cfg.strength == 0:
            return 0.0
        if cfg.ramp_steps == 0 or step >= cfg.ramp_steps:
            return float(cfg.strength)
        return float(cfg.beta_start + (cfg.strength - cfg.beta_start) * step / cfg.ramp_steps)

    def weights(self, step: int, candidates: np.ndarray | None = None) -> np.ndarray:
        """Normalised draw probabilities of ``candidates`` (default: every question)."""
        z = self.z if candidates is None else self.z[candidates]
        logits = self.beta(step) * z
        w = np.exp(logits - logits.max()) if len(z) else logits
        return w / w.sum()

    def draw(self, step: int, n: int) -> list[int]:
        """``n`` distinct question indices for ``step``."""
        if n > len(self.keys):
            raise ValueError(f"cannot draw {n} distinct questions from a pool of {len(self.keys)}")
        chosen: list[int] = []
        while len(chosen) < n:
            pool = np.flatnonzero(~self.used)
            if chosen:
                pool = pool[~np.isin(pool, chosen)]
            if len(pool) == 0:
                self.epoch += 1
                self.used[:] = False
                self.used[chosen] = True  # already drawn this step: they open the new epoch
                continue
            k = min(n - len(chosen), len(pool))
            picked = self.rng.choice(pool, size=k, replace=False, p=self.weights(step, pool))
            self.used[picked] = True
            chosen.extend(int(i) for i in picked)
        return chosen

    def mean_key(self, indices: Sequence[int]) -> float:
        return float(self.keys[list(indices)].mean()) if len(indices) else math.nan

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "epoch": self.epoch, "used": np.flatnonzero(self.used).tolist()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.epoch = int(state["epoch"])
        self.used[:] = False
        self.used[state["used"]] = True
