"""Rewards for GRPO (SPEC §5): tiered, with partial credit that can never lift a wrong
answer above a right one.

Default preset ``sqale-dense``: 3.0 when equivalent; otherwise, for a query that runs,
0.1 + 0.9 × F1 between predicted and gold rows, +0.1 when it touches the same set of
(more than one) tables as the gold query, +0.1 when its result agrees with the
plurality result of its GRPO group; 0.05 when it only parses; 0 when invalid. The
``tiered`` preset is the plain 1 / 0.1 / 0.

``unsubmitted`` (1.0 in both presets) scales the reward of an answer the model did not
give through ``submit_sql`` (the forced final turn's, the fallback's, SQL in a plain
reply): below 1 it pays for the protocol as well as the answer, while a right answer
the environment had to ask for still outranks every wrong one.

``tested`` (0 in both presets) is added to a right answer that the model had run with
``run_query`` in an earlier round before answering with it itself (``EpisodeResult.answer_tested``;
not the round limit's fallback, which answers for a model that never did):
it pays for the habit of reading a result before submitting, in the groups where every
answer is right and nothing else would differ. Wrong answers never get it, so it cannot
lift one.

``unread_error`` (0 in both presets) is taken from a wrong answer the model submitted in
the same reply as a ``run_query`` of it that failed (``EpisodeResult.answer_unread_error``):
the error came back after the episode had ended. A trained policy that runs and submits
in one reply loses every question whose query fails there, a fix away (the error names
the column it meant); the penalty makes that reply worse than any other wrong one, so
the policy learns to stop after ``run_query`` and read. Right answers never pay it.

``known_error`` (0 in both presets) is taken from a wrong answer whose ``run_query`` had
failed in an earlier round, or that fails with the error such a run had shown
(``EpisodeResult.answer_known_error``): the model read the error and submitted the query
anyway, or changed it where the error was not. Without it, ``unread_error`` is dodged
rather than learnt from: the policy runs the query in one reply and submits it unchanged
in the next.

``rerun_failed`` (0 in both presets) is taken from a wrong answer whose episode sent a
``run_query`` again, as written, after it had failed in an earlier round
(``EpisodeResult.reran_failed_query``). Without it a rerun that ends in the failed-query
limit costs no more than a changed query that fails as well, so nothing pays a policy for
changing a query after its error; with it, trying something else is worth more than
repeating, which is where a fix can first be sampled.

>>> row_f1([(1,), (2,)], [(2,), (3,)])
0.5
>>> cfg = REWARD_PRESETS["sqale-dense"]
>>> cfg.max_wrong() < cfg.equivalent
True
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from sqlscout.errors import ConfigError
from sqlscout.scoring.compare import Row, Semantics
from sqlscout.scoring.verdict import Outcome, Scored

__all__ = ["REWARD_PRESETS", "RewardConfig", "group_rewards", "reward", "row_f1", "tables_used"]


@dataclass(frozen=True)
class RewardConfig:
    """Reward values per tier and the partial-credit terms for executable answers.

    The constructor refuses any setting where a wrong answer could outrank a right one
    (``equivalent`` must exceed ``max_wrong()``) or a lower tier outrank a higher one.
    """

    equivalent: float = 3.0
    executable: float = 0.1
    f1_weight: float = 0.9
    same_tables: float = 0.1
    plurality: float = 0.1
    parsable: float = 0.05
    invalid: float = 0.0
    semantics: Semantics = Semantics.OFFICIAL
    unsubmitted: float = 1.0
    tested: float = 0.0
    unread_error: float = 0.0
    known_error: float = 0.0
    rerun_failed: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "semantics", Semantics(self.semantics))
        for name in ("f1_weight", "same_tables", "plurality", "tested", "unread_error", "known_error", "rerun_failed"):
            if getattr(self, name) < 0:
                raise ConfigError(f"reward.{name} must be >= 0, got {getattr(self, name)}")
        if not self.equivalent > self.max_wrong():
            raise ConfigError(
                f"reward.equivalent ({self.equivalent}) must exceed the best wrong answer's reward "
                f"({self.max_wrong()}): a wrong answer may never outrank a right one"
            )
        if not 0 < self.unsubmitted <= 1:
            raise ConfigError(f"reward.unsubmitted scales a reward: it must lie in (0, 1], got {self.unsubmitted}")
        if not self.equivalent * self.unsubmitted > self.max_wrong():
            raise ConfigError(
                f"reward.equivalent x unsubmitted ({self.equivalent * self.unsubmitted:g}) must exceed the best wrong "
                f"answer's reward ({self.max_wrong()}): a right answer the environment asked for still outranks a wrong one"
            )
        if not self.executable >= self.parsable >= self.invalid:
            raise ConfigError("rewards must not increase down the tiers: executable >= parsable >= invalid")

    def max_wrong(self) -> float:
        return self.executable + self.f1_weight + self.same_tables + self.plurality

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "semantics": self.semantics.value}


REWARD_PRESETS: dict[str, RewardConfig] = {
    "sqale-dense": RewardConfig(),
    "tiered": RewardConfig(
        equivalent=1.0, executable=0.1, f1_weight=0.0, same_tables=0.0, plurality=0.0, parsable=0.0, invalid=0.0
    ),
}


def row_f1(pred: Sequence[Row], gold: Sequence[Row]) -> float:
    """F1 between two results as multisets of rows (0 when either is empty, unless both are)."""
    if not pred and not gold:
        return 1.0
    if not pred or not gold:
        return 0.0
    overlap = sum((Counter(pred) & Counter(gold)).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(pred), overlap / len(gold)
    return 2 * precision * recall / (precision + recall)


def tables_used(sql: str | None) -> frozenset[str]:
    """Lower-cased names of the tables a query reads (CTE names excluded).

    >>> sorted(tables_used("WITH x AS (SELECT * FROM a) SELECT * FROM x JOIN B ON 1"))
    ['a', 'b']
    """
    if not sql:
        return frozenset()
    import sqlglot
    from sqlglot import exp

    try:
        trees = sqlglot.parse(sql, read="sqlite")
    except Exception:  # noqa: BLE001 - any parse failure means "unknown"
        return frozenset()
    names: set[str] = set()
    ctes: set[str] = set()
    for tree in trees:
        if tree is None:
            continue
        ctes |= {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        names |= {t.name.lower() for t in tree.find_all(exp.Table) if t.name}
    return frozenset(names - ctes)


def _result_key(scored: Scored) -> frozenset[Row] | None:
    return frozenset(scored.pred.rows) if scored.pred.rows is not None else None


def reward(
    scored: Scored,
    config: RewardConfig,
    *,
    pred_sql: str | None = None,
    gold_sql: str | None = None,
    agrees_with_plurality: bool = False,
    submitted: bool = True,
    tested: bool = False,
    unread_error: bool = False,
    known_error: bool = False,
    rerun_failed: bool = False,
) -> float:
    """The reward of one scored answer (the plurality bonus is decided by the caller;
    ``submitted``: the model gave it through ``submit_sql``; ``tested``: it had run it
    in an earlier round; ``unread_error``: it submitted it in the reply whose run of it
    failed; ``known_error``: a run of it had failed in an earlier round; ``rerun_failed``:
    the episode ran a failed query again unchanged)."""
    outcome = _outcome_under(scored, config)
    value = _tier_reward(
        scored, outcome, config, pred_sql=pred_sql, gold_sql=gold_sql, agrees_with_plurality=agrees_with_plurality
    )
    # The protocol's habits: a bonus only a right answer can earn, a penalty only a wrong one can pay.
    if outcome is Outcome.EQUIVALENT:
        value += config.tested if tested else 0.0
    else:
        value -= sum(cost for cost, paid in ((config.unread_error, unread_error), (config.known_error, known_error),
                                             (config.rerun_failed, rerun_failed)) if paid)
    return value if submitted else value * config.unsubmitted


def _tier_reward(
    scored: Scored, outcome: Outcome, config: RewardConfig, *, pred_sql: str | None, gold_sql: str | None,
    agrees_with_plurality: bool,
) -> float:
    if outcome is Outcome.EQUIVALENT:
        return config.equivalent
    if outcome is Outcome.EXECUTABLE:
        assert scored.pred.rows is not None
        value = config.executable
        if scored.gold.rows is not None:
            value += config.f1_weight * row_f1(scored.pred.rows, scored.gold.rows)
        gold_tables = tables_used(gold_sql)
        if len(gold_tables) > 1 and tables_used(pred_sql) == gold_tables:
            value += config.same_tables
        if agrees_with_plurality:
            value += config.plurality
        return value
    return config.parsable if outcome is Outcome.PARSABLE else config.invalid


def _outcome_under(scored: Scored, config: RewardConfig) -> Outcome:
    if scored.pred.ok:
        return Outcome.EQUIVALENT if scored.verdict.correct(config.semantics) else Outcome.EXECUTABLE
    return scored.verdict.outcome


def group_rewards(
    group: Sequence[tuple[Scored, str | None]], gold_sql: str, config: RewardConfig,
    submitted: Sequence[bool] | None = None, tested: Sequence[bool] | None = None,
    unread_error: Sequence[bool] | None = None, known_error: Sequence[bool] | None = None,
    rerun_failed: Sequence[bool] | None = None,
) -> list[float]:
    """Rewards for a GRPO group of (scored answer, predicted SQL), with the plurality bonus;
    ``submitted`` says which answers came through ``submit_sql`` (all, when not given),
    ``tested`` which ones the model had run in an earlier round, ``unread_error`` which
    ones it submitted in the reply whose run of them failed, ``known_error`` which ones
    a run of had failed in an earlier round, ``rerun_failed`` which episodes ran a failed
    query again unchanged (none, when not given).

    The plurality result is the most common result (as a set of rows) among the group's
    answers that ran; it exists only when one result is strictly the most common and
    was reached by at least two answers.
    """
    keys = [_result_key(s) for s, _ in group]
    counts = Counter(k for k in keys if k is not None)
    plurality = None
    if counts:
        (top, n), *rest = counts.most_common(2) + [(None, 0)]
        if n >= 2 and n > rest[0][1]:
            plurality = top
    given = {"submitted": submitted, "tested": tested, "unread_error": unread_error, "known_error": known_error,
             "rerun_failed": rerun_failed}
    # Not given: every answer submitted, none flagged otherwise.
    flags = {name: [name == "submitted"] * len(group) if values is None else list(values) for name, values in given.items()}
    for name, values in flags.items():
        if len(values) != len(group):
            raise ValueError(f"{name} has {len(values)} flags for a group of {len(group)}")
    return [
        reward(s, config, pred_sql=sql, gold_sql=gold_sql, agrees_with_plurality=plurality is not None and k == plurality,
               **{name: values[i] for name, values in flags.items()})
        for i, ((s, sql), k) in enumerate(zip(group, keys))
    ]
