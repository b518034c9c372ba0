"""Two runs on the same questions, question by question: what one answers right that the
other does not, and whether the difference is more than chance (an exact sign test).

Accuracy alone hides how two settings differ: 55 % against 50 % may be 5 questions
gained and none lost, or 20 gained and 15 lost. Each question counts once, by its first
sample (``sample == 0``), under BIRD's official semantics.

>>> sign_test(12, 1) < 0.01, sign_test(5, 5)
(True, 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb
from typing import Iterable

from sqlscout.evaluation.metrics import latest_records
from sqlscout.evaluation.record import EpisodeRecord

__all__ = ["Paired", "paired", "sign_test"]


@dataclass(frozen=True)
class Paired:
    """``other`` against ``base`` on the questions both answered."""

    n: int
    base_correct: int
    other_correct: int
    gained: int  # right in other, wrong in base
    lost: int  # right in base, wrong in other

    @property
    def p_value(self) -> float:
        return sign_test(self.gained, self.lost)

    @property
    def difference(self) -> float:
        """Points of accuracy ``other`` adds (negative: loses)."""
        return 100.0 * (self.other_correct - self.base_correct) / self.n if self.n else 0.0


def sign_test(gained: int, lost: int) -> float:
    """The two-sided exact sign test's p-value for ``gained`` against ``lost`` discordant
    questions (ties, the questions both settings agree on, carry no information)."""
    n = gained + lost
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(gained, lost) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _first_samples(records: Iterable[EpisodeRecord]) -> dict[str, bool]:
    return {r.key: bool(r.verdict is not None and r.verdict.official) for r in latest_records(records) if r.sample == 0}


def paired(base: Iterable[EpisodeRecord], other: Iterable[EpisodeRecord]) -> Paired:
    """``other`` against ``base``, on the questions both runs hold."""
    a, b = _first_samples(base), _first_samples(other)
    keys = a.keys() & b.keys()
    return Paired(
        n=len(keys),
        base_correct=sum(a[k] for k in keys),
        other_correct=sum(b[k] for k in keys),
        gained=sum(b[k] and not a[k] for k in keys),
        lost=sum(a[k] and not b[k] for k in keys),
    )
