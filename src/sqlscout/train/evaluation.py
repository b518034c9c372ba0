"""Periodic evaluation on held-out questions, through the evaluator.

Each evaluation is an ordinary evaluator run directory (``OUT/eval/step-NNNNNN``:
``config.json`` + ``episodes.jsonl``), so ``sqlscout report`` reads it like any other
run, and its metrics come from the evaluator's own :func:`compute_metrics`.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any, Sequence

from sqlscout.backends.base import Backend
from sqlscout.evaluation import EvalConfig as EvaluatorConfig
from sqlscout.evaluation import compute_metrics, run_eval
from sqlscout.evaluation.run import resumable, runner_source
from sqlscout.runner import Runner, RunnerConfig
from sqlscout.env.task import Task

__all__ = ["evaluate", "greedy"]


def greedy(runner_config: RunnerConfig, temperature: float = 0.0) -> RunnerConfig:
    """``runner_config`` as the held-out evaluation decodes: every episode at ``temperature``
    (a training run's ``greedy_per_group`` members are a rollout setting, not an evaluation one)."""
    return dataclasses.replace(runner_config, sampling=dataclasses.replace(runner_config.sampling, temperature=temperature),
                               greedy_samples=0)  # fmt: skip


def evaluate(
    backend: Backend,
    tasks: Sequence[Task],
    runner_config: RunnerConfig,
    out: Path,
    *,
    benchmark: str,
    model: str,
    seed: int,
    resume: bool = False,
) -> dict[str, Any]:
    """Run one episode per held-out question and return the ``eval/*`` telemetry keys.

    With ``resume``, an evaluation already in ``out`` under the same settings and
    questions is continued (its finished episodes kept); the caller vouches that the
    weights are the ones it was started with. Otherwise, or when the settings differ, it
    starts from scratch."""
    config = dataclasses.replace(runner_config, seed=seed)
    settings = EvaluatorConfig(
        benchmark=benchmark, model=model, backend=backend.name, episode=config.episode,
        sampling=config.sampling, seed=seed, extra={"during": "training"},
    )  # fmt: skip
    resume = resume and resumable(out, settings, tasks)
    if out.exists() and not resume:
        shutil.rmtree(out)
    with Runner(backend, config) as runner:
        outcome = run_eval(list(tasks), settings, runner_source(runner, list(tasks), 1), out, resume=resume)
    m = compute_metrics(outcome.records)
    return {
        "eval/official": m.accuracy.official,
        "eval/strict": m.accuracy.strict,
        "eval/executable": m.executes_rate,
        "eval/submitted": m.submit_rate,
        "eval/rounds": m.rounds_mean,
        "eval/tool_calls": m.tool_calls_mean,
        "eval/questions": m.n_questions,
    }
