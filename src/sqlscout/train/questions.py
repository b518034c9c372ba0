"""Training questions: loaded through the evaluator's loaders, filtered, split.

The pool is fixed at the start of a run (same config, same pool, same order), which is
what makes "data position" in a checkpoint meaningful.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any, Sequence

from sqlscout.errors import ConfigError
from sqlscout.env.sandbox import Database
from sqlscout.scoring import execute_for_scoring
from sqlscout.env.task import Task
from sqlscout.train.config import DataConfig
from sqlscout.train.curriculum import length_key

__all__ = ["data_sources", "length_keys", "load_questions", "split_held_out"]


def data_sources(data: DataConfig) -> list[DataConfig]:
    """``data`` and its ``also`` sources (theirs included), in the order the pool reads them."""
    return [data, *(source for more in data.also for source in data_sources(more))]


def load_questions(data: DataConfig) -> list[Task]:
    """The questions of each of ``data``'s sources (:func:`data_sources`, each filtered by
    its own settings), in the loaders' order; the k-th ``also`` source's ids get the
    prefix ``k:`` (from 1) so that no two questions share one."""
    tasks: list[Task] = []
    for k, source in enumerate(data_sources(data)):
        loaded = _load_source(source)
        tasks += [dataclasses.replace(t, question_id=f"{k}:{t.question_id}") for t in loaded] if k else loaded
    return tasks


def _load_source(data: DataConfig) -> list[Task]:
    from sqlscout.data import load_tasks
    from sqlscout.evaluation.run import select_tasks

    def where(path: str | None) -> Path | None:
        return Path(path).expanduser() if path else None

    tasks = load_tasks(
        data.benchmark,
        where(data.path),
        split=data.split,
        evidence=data.evidence,
        phrasing=list(data.phrasings) or None,
        difficulty=list(data.difficulties) or None,
        db_root=where(data.db_root),
        cache_dir=where(data.cache_dir),
        missing_db="skip",
    )
    if data.db_ids:
        tasks = [t for t in tasks if t.db_id in data.db_ids]
    tasks = [t for t in tasks if t.gold_sql]
    if data.require_gold_rows:
        tasks = _with_gold_rows(tasks)
    tasks = select_tasks(tasks, data.limit, data.select, data.select_seed)
    if not tasks:
        raise ConfigError(f"data: no questions left after filtering {data.benchmark} at {data.path}")
    return tasks


def _with_gold_rows(tasks: Sequence[Task]) -> list[Task]:
    """Keep the questions whose gold SQL runs (a reward needs a gold result)."""
    databases: dict[Path, Database] = {}
    kept = []
    try:
        for task in tasks:
            db = databases.get(task.db_path) or databases.setdefault(task.db_path, Database(task.db_path))
            if execute_for_scoring(db, task.gold_sql, timeout_s=5.0).ok:
                kept.append(task)
    finally:
        for db in databases.values():
            db.close()
    return kept


def split_held_out(tasks: Sequence[Task], n: int, seed: int) -> tuple[list[Task], list[Task]]:
    """(training pool, held-out) with ``n`` questions held out, chosen by ``seed``."""
    if n == 0:
        return list(tasks), []
    if n >= len(tasks):
        raise ConfigError(f"eval.held_out ({n}) must leave training questions; the pool has {len(tasks)}")
    held = set(random.Random(seed).sample(range(len(tasks)), n))
    return [t for i, t in enumerate(tasks) if i not in held], [t for i, t in enumerate(tasks) if i in held]


def length_keys(tasks: Sequence[Task], key: str, tokenizer: Any) -> list[float]:
    """Each question's curriculum key (gold SQL tokens in the policy's tokenizer, or AST size)."""

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False))

    return [length_key(t.gold_sql, key, count) for t in tasks]
