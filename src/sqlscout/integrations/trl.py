"""sqlscout's environment in TRL's ``GRPOTrainer`` (trl 1.x, its ``rollout_func``).

TRL samples one completion per prompt and scores it; a text-to-SQL agent needs many turns
against a database. :class:`SqlscoutRollout` is a ``rollout_func``: TRL hands it the
prompts of a batch, and it plays each as a whole sqlscout episode through
:class:`sqlscout.runner.Runner` with the trainer's own model (the transformers backend),
so the tools, the protocol, the budgets and the transcript are sqlscout's, unchanged. It
returns what TRL trains on: each episode's prompt ids, its continuation (every model
turn and every tool result, in the ids the model saw), the sampler's log-probabilities,
and ``env_mask`` (1 on the tokens the model wrote, 0 on the environment's), so TRL's loss
covers only model tokens, as sqlscout's own trainer does (:mod:`sqlscout.train.mask`).
The reward is sqlscout's reward preset over sqlscout's scoring (:func:`sqlscout_reward`
reads it from the rollout), the one the evaluator and sqlscout's trainer use.

A dataset row is ``{"prompt": key}`` with the key of a :class:`~sqlscout.env.task.Task`
(:meth:`SqlscoutRollout.dataset`); the task's question, database and gold SQL come
from sqlscout.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from sqlscout.backends.base import SamplingParams
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.task import Task
from sqlscout.env.trace import AnswerSource
from sqlscout.evaluation.record import task_key
from sqlscout.runner import Runner, RunnerConfig
from sqlscout.scoring import REWARD_PRESETS, score_sql
from sqlscout.scoring.gold import GoldResults
from sqlscout.scoring.reward import group_rewards
from sqlscout.train.mask import trainable_mask

__all__ = ["SqlscoutRollout", "sqlscout_reward"]


class SqlscoutRollout:
    """A ``rollout_func`` for ``GRPOTrainer`` over ``tasks``.

    Args:
        tasks: the training questions (gold SQL required).
        episode: the episode's limits and schema regime (SPEC §4).
        sampling: temperature, top-p, top-k (the seed card's by default).
        reward: a reward preset of :data:`sqlscout.scoring.REWARD_PRESETS`.
        max_batch: episodes generated together.
        backend: what samples the episodes, from the trainer (default: the transformers
            backend over the trainer's own model); a test passes a scripted one.
    """

    def __init__(
        self,
        tasks: Sequence[Task],
        *,
        episode: EpisodeConfig | None = None,
        sampling: SamplingParams | None = None,
        reward: str = "sqale-dense",
        max_batch: int = 16,
        backend: Any = None,
    ) -> None:
        self.tasks = {task_key(t): t for t in tasks if t.gold_sql}
        self.episode = episode or EpisodeConfig()
        self.sampling = replace(sampling or SamplingParams(), logprobs=True)
        self.reward = REWARD_PRESETS[reward]
        self.max_batch = max_batch
        self.backend = backend or self._policy_backend
        self.gold = GoldResults()
        self.calls = 0
        self.last_results: list[Any] = []  # the episodes of the latest call (for logging and tests)

    def dataset(self) -> list[dict[str, str]]:
        """The rows of a training dataset: one prompt (a task's key) per question."""
        return [{"prompt": key} for key in self.tasks]

    def _policy_backend(self, trainer: Any) -> Any:
        from sqlscout.backends.hf import HFBackend, HFConfig

        model = trainer.accelerator.unwrap_model(trainer.model) if hasattr(trainer, "accelerator") else trainer.model
        return HFBackend(model, trainer.processing_class, HFConfig(max_batch=self.max_batch, seed=self.calls))

    def __call__(self, prompts: Sequence[Any], trainer: Any) -> dict[str, list[Any]]:
        backend = self.backend(trainer)
        model = getattr(backend, "model", None)
        tasks = [self.tasks[str(p)] for p in prompts]  # TRL repeats each prompt once per generation
        config = RunnerConfig(episode=self.episode, sampling=self.sampling, max_batch=self.max_batch, seed=self.calls)
        self.calls += 1
        was_training = bool(getattr(model, "training", False))
        if model is not None and hasattr(model, "eval"):
            model.eval()
        try:
            with Runner(backend, config) as runner:
                rollouts = sorted(runner.run(tasks), key=lambda r: r.index)
                scored = [
                    score_sql(runner.database(t.db_path), r.result.final_sql, t.gold_sql or "",
                              gold=self.gold.get(runner.database(t.db_path), t.gold_sql or "")[0],
                              semantics=self.reward.semantics)
                    for t, r in zip(tasks, rollouts)
                ]  # fmt: skip
        finally:
            if model is not None and hasattr(model, "train"):
                model.train(was_training)
        rewards = _rewards(tasks, rollouts, scored, self.reward)
        out: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [], "sqlscout_reward": rewards}
        for rollout in rollouts:
            prompt_end = rollout.segments[0][2] if rollout.segments else 0  # no ids from a backend without a tokenizer
            ids = rollout.token_ids
            mask = trainable_mask(rollout.segments, len(ids))
            out["prompt_ids"].append(list(ids[:prompt_end]))
            out["completion_ids"].append(list(ids[prompt_end:]))
            out["logprobs"].append([float(lp) if lp is not None else 0.0 for lp in rollout.logprobs[prompt_end:]])
            out["env_mask"].append([int(m) for m in mask[prompt_end:]])
        self.last_results = [r.result for r in rollouts]
        return out


def _rewards(tasks: Sequence[Task], rollouts: Sequence[Any], scored: Sequence[Any], config: Any) -> list[float]:
    """sqlscout's rewards, each question's repeats scored as one group (its plurality bonus)."""
    rewards = [0.0] * len(tasks)
    groups: dict[str, list[int]] = {}
    for i, task in enumerate(tasks):
        groups.setdefault(task_key(task), []).append(i)
    for members in groups.values():
        gold_sql = tasks[members[0]].gold_sql or ""
        values = group_rewards(
            [(scored[i], rollouts[i].result.final_sql) for i in members], gold_sql, config,
            submitted=[rollouts[i].result.answer_source is AnswerSource.SUBMIT_SQL for i in members],
            tested=[rollouts[i].result.answer_tested for i in members],
        )
        for i, value in zip(members, values):
            rewards[i] = value
    return rewards


def sqlscout_reward(prompts: Sequence[Any], completions: Sequence[Any], sqlscout_reward: Sequence[float], **kwargs: Any) -> list[float]:
    """TRL's reward function: the reward each episode earned, computed by the rollout."""
    return [float(r) for r in sqlscout_reward]
