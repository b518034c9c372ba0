"""A step's experience: a group of episodes per question, scored and rewarded.

Rewards come from :mod:`sqlscout.scoring` — :func:`score_sql` and
:func:`group_rewards`, the very functions the evaluator scores with — so what the
policy is rewarded for and what it is evaluated on can never drift apart. Each
question's gold result is executed once and reused for its whole group, and across
steps: :func:`gold_result` is the one place that asks for it.

An episode that ended for a reason that is not the model's doing — the backend failed,
or any stop reason outside :data:`MODEL_STOPS` — is not scored into its group: it
would teach the policy about an accident. It is kept aside (``Group.dropped``), left
out of the update and counted in telemetry (``episodes/dropped``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

from sqlscout.runner import Rollout, Runner
from sqlscout.scoring import ExecResult, RewardConfig, Scored, group_rewards, score_sql
from sqlscout.scoring.gold import GoldResults
from sqlscout.env.task import Task
from sqlscout.env.trace import AnswerSource, EpisodeResult, StopReason
from sqlscout.train.advantages import group_advantages, is_uniform
from sqlscout.train.states import PreludeBackend, untrained_replies

__all__ = ["MODEL_STOPS", "Group", "collect_groups", "gold_result", "model_ended", "score_group"]

# The ways an episode ends that the model chose (it answered, or spent its rounds, its
# failed queries or its budget, looped on calls it had made, or ran a tested query again). Anything else — a backend failure, or a stop reason
# added later that is not listed here — is not the model's doing.
MODEL_STOPS = frozenset(
    {StopReason.SUBMITTED, StopReason.ANSWERED, StopReason.ROUND_LIMIT, StopReason.FAILED_QUERY_LIMIT,
     StopReason.BUDGET_EXHAUSTED, StopReason.REPEATED_CALLS, StopReason.RERUN}
)  # fmt: skip


def model_ended(result: EpisodeResult) -> bool:
    """Whether the episode ended by the model's doing (and so may be trained on)."""
    return result.stop_reason in MODEL_STOPS and result.error is None


@dataclass
class Group:
    """The episodes of one question that the model ended, in sample order, with their
    scores; ``dropped`` holds the ones it did not end (not scored, never trained)."""

    task: Task
    pool_index: int  # the question's index in the training pool
    rollouts: list[Rollout]
    scored: list[Scored]
    rewards: list[float]
    advantages: list[float]
    dropped: list[Rollout] = dataclasses.field(default_factory=list)
    demonstration: bool = False  # written, not sampled (sqlscout.train.demos): imitated, advantage 1
    prelude: int = 0  # replies every episode replayed from a failure state (sqlscout.train.states), untrained

    @property
    def uniform(self) -> bool:
        """No signal: fewer than two scored episodes, or all rewarded alike (a group of
        demonstrations always carries its signal)."""
        return not self.demonstration and (len(self.rewards) < 2 or is_uniform(self.rewards))


def gold_result(gold: GoldResults, runner: Runner, task: Task) -> ExecResult:
    """The result of ``task``'s gold query on its database, from the project's one
    gold-result cache: executed once, shared by every group that draws the question."""
    return gold.get(runner.database(task.db_path), task.gold_sql or "")[0]


def score_group(runner: Runner, task: Task, rollouts: Sequence[Rollout], reward: RewardConfig,
                gold: GoldResults) -> tuple[list[Scored], list[float]]:  # fmt: skip
    """The verdicts and rewards of ``rollouts``, episodes of ``task`` played as one group."""
    db = runner.database(task.db_path)
    expected = gold_result(gold, runner, task)
    scored = [score_sql(db, r.result.final_sql, task.gold_sql or "", gold=expected, semantics=reward.semantics) for r in rollouts]
    rewards = group_rewards(
        [(s, r.result.final_sql) for s, r in zip(scored, rollouts)], task.gold_sql or "", reward,
        submitted=[r.result.answer_source is AnswerSource.SUBMIT_SQL for r in rollouts],
        tested=[r.result.answer_tested for r in rollouts],
        unread_error=[r.result.answer_unread_error for r in rollouts],
        known_error=[r.result.answer_known_error(s.pred.error) for s, r in zip(scored, rollouts)],
        rerun_failed=[r.result.reran_failed_query for r in rollouts],
    )
    return scored, rewards


def collect_groups(
    runner: Runner,
    tasks: Sequence[Task],
    pool_indices: Sequence[int],
    *,
    group_size: int,
    seed: int,
    reward: RewardConfig,
    scale_by_std: bool,
    gold: GoldResults,
    preludes: Sequence[Sequence[str]] | None = None,
    tokenizer: Any = None,
) -> list[Group]:
    """Roll out ``group_size`` episodes of every task, score them, and compute advantages.

    ``seed`` seeds this batch's sampling (the loop passes one per step, so two steps
    never replay the same random numbers). ``preludes[i]``, when given, are replies every
    episode of task ``i`` replays first (a failure state, :mod:`sqlscout.train.states`, in
    ``tokenizer``'s ids), kept as context and not trained.
    """
    runner.config = dataclasses.replace(runner.config, seed=seed)
    by_task: list[list[Rollout | None]] = [[None] * group_size for _ in tasks]
    backend = runner.backend
    given = [list(p) for p in preludes] if preludes is not None else [[] for _ in tasks]
    if any(given):
        runner.backend = PreludeBackend(backend, dict(enumerate(given)), tokenizer)
    try:
        for rollout in runner.run(list(tasks), samples=group_size):
            by_task[rollout.index][rollout.sample] = rollout
    finally:
        runner.backend = backend
    groups = []
    for task, pool_index, rollouts, prelude in zip(tasks, pool_indices, by_task, given):
        finished = [untrained_replies(r, len(prelude)) if prelude else r for r in rollouts if r is not None]
        assert len(finished) == group_size, "the runner must finish every episode it starts"
        done = [r for r in finished if model_ended(r.result)]
        dropped = [r for r in finished if not model_ended(r.result)]
        scored, rewards = score_group(runner, task, done, reward, gold)
        advantages = group_advantages(rewards, scale_by_std=scale_by_std) if len(done) >= 2 else [0.0] * len(done)
        groups.append(Group(task, pool_index, done, scored, rewards, advantages, dropped, prelude=len(prelude)))
    return groups
