"""The training pool as the data commands see it (``python -m sqlscout.train.demos``,
``python -m sqlscout.train.states``): a preset run greedily on every pool question, the
episode summaries such runs write, and the commands' one-line errors."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

from sqlscout.errors import ConfigError
from sqlscout.train.questions import load_questions

__all__ = ["evaluate_pool", "greedy_on_pool", "outside_pool", "read_records", "run_command"]


def evaluate_pool(config: Any, backend: Any, out: Path, *, model: str) -> dict[str, Any]:
    """Greedy episodes of ``backend`` on every question of ``config``'s pool, as the held-out
    evaluation runs them (the rollout's episode settings at temperature 0): an evaluator run
    in ``out``, continued where it stopped; its ``eval/*`` metrics."""
    from sqlscout.train.evaluation import evaluate, greedy

    tasks = load_questions(config.data)
    return evaluate(backend, tasks, greedy(config.rollout.runner_config(config.seed)), out,
                    benchmark=config.data.benchmark, model=model, seed=config.seed, resume=True)  # fmt: skip


def read_records(path: Path) -> Iterable[dict[str, Any]]:
    """A run's episode summaries (``episodes.jsonl``, gzipped or not; a torn last line skipped)."""
    from sqlscout.evaluation.store import read_whole_lines

    if not path.is_file():
        raise ConfigError(f"no episode summaries at {path}: give a run's episodes.jsonl (or .jsonl.gz)")
    return (json.loads(text) for _, text in read_whole_lines(path))


def run_command(build: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """A command's ``build(args)``, a bad config, episodes file or pool reported in one line
    (exit status 2), not a traceback."""
    try:
        return build(args)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def greedy_on_pool(config: Any, model: str, out: Path | str) -> Path:
    """Run preset ``model`` greedily on every question of ``config``'s pool into ``out``
    (continued where it stopped; :func:`evaluate_pool`) and say how it did; returns its
    ``episodes.jsonl``."""
    from sqlscout.models import open_backend

    runner_config = config.rollout.runner_config(config.seed)
    backend = open_backend(model, None, episodes=config.rollout.max_batch, token_budget=runner_config.episode.token_budget)
    try:
        metrics = evaluate_pool(config, backend, Path(out), model=model)
    finally:
        backend.close()
    print(f"greedy on the pool: {metrics['eval/official']:.1%} of {metrics['eval/questions']} -> {out}")
    return Path(out) / "episodes.jsonl"


def outside_pool(question_ids: Iterable[str], pool_ids: Iterable[str]) -> list[str]:
    """The question ids (sorted, once each) that are not among the pool's."""
    known = set(pool_ids)
    return sorted({q for q in question_ids if q not in known})
