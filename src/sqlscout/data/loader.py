"""One entry point to every benchmark: :func:`load_tasks`. The CLI and the trainer use it.

Example (paths relative to a checkout beside the shared data)::

    tasks = load_tasks("spider", "../shared/data/spider", difficulty="easy", limit=3, missing_db="skip")
    [t.difficulty for t in tasks]
    # -> ['easy', 'easy', 'easy']
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from sqlscout.data.bird import BIRD_LEVELS, BIRD_SPLITS, load_bird
from sqlscout.data.databases import MissingDb
from sqlscout.data.jsonl import load_jsonl
from sqlscout.data.spider import SPIDER_SPLITS, load_spider
from sqlscout.data.spider_dk import load_spider_dk
from sqlscout.data.splits import NAMED_SPLITS, named_split
from sqlscout.data.spider_hardness import SPIDER_LEVELS
from sqlscout.data.sqale import SQALE_LEVELS, load_sqale
from sqlscout.errors import ConfigError
from sqlscout.env.task import Task

__all__ = ["BENCHMARKS", "DEFAULT_SPLITS", "LEVELS", "load_tasks"]

BENCHMARKS = ("spider", "spider-dk", "bird", "bird-mini", "sqale", "jsonl")
DEFAULT_SPLITS = {"spider": "dev", "spider-dk": "dev", "bird": "dev", "bird-mini": "mini-dev", "sqale": "test", "jsonl": None}
SPLITS: dict[str, tuple[str, ...]] = {
    "spider": (*SPIDER_SPLITS, *NAMED_SPLITS),
    "spider-dk": ("dev",),
    "bird": tuple(BIRD_SPLITS),
    "sqale": ("train", "test"),
}
# Difficulty levels each benchmark uses (the generic format takes whatever it holds).
LEVELS: dict[str, tuple[str, ...]] = {
    "spider": SPIDER_LEVELS,
    "spider-dk": SPIDER_LEVELS,
    "bird": BIRD_LEVELS,
    "sqale": SQALE_LEVELS,
}


def load_tasks(
    benchmark: str,
    path: str | Path | None,
    *,
    split: str | None = None,
    evidence: bool = True,
    phrasing: str | Sequence[str] | None = None,
    difficulty: str | Sequence[str] | None = None,
    limit: int | None = None,
    db_root: str | Path | None = None,
    cache_dir: str | Path | None = None,
    missing_db: MissingDb | str = MissingDb.ERROR,
) -> list[Task]:
    """Load a benchmark's questions as :class:`~sqlscout.env.task.Task` s, in file order.

    Args:
        benchmark: one of :data:`BENCHMARKS` (``bird-mini`` is ``bird`` with split ``mini-dev``).
        path: the benchmark's folder (or its questions file); for ``sqale`` a folder
            with ``queries/`` and ``schemas/``, or None for the hub.
        split: ``dev`` (default), ``train``...; for SQaLe ``test`` (default) or ``train``;
            for Spider also ``dev-tune`` and ``dev-report``, dev split by database
            (:mod:`sqlscout.data.splits`).
        evidence: show BIRD's evidence notes (and a JSONL file's) to the model.
        phrasing: SQaLe only: a phrasing, several, or ``"all"``; default ``verbose``.
        difficulty: keep only questions of this level (or these levels).
        limit: keep the first N questions after filtering.
        db_root: where the databases are, when not in the benchmark's own layout
            (Spider-DK: Spider's ``database/`` folder; JSONL: the root ``db_id`` s name).
        cache_dir: where SQaLe's databases are materialised (required for SQaLe); for
            Spider, where what its files hold is kept between runs (read again only
            when a file changes).
        missing_db: ``error`` (default), ``skip`` or ``keep`` questions whose database
            file is not there.
    """
    if benchmark not in BENCHMARKS:
        raise ConfigError(f"unknown benchmark {benchmark!r}; choose one of {', '.join(BENCHMARKS)}")
    if benchmark == "bird-mini":
        benchmark, split = "bird", split or "mini-dev"
    if limit is not None and limit < 1:
        raise ConfigError(f"limit must be >= 1, got {limit}")
    if phrasing is not None and benchmark != "sqale":
        raise ConfigError(f"--phrasing applies to SQaLe only; {benchmark} has one phrasing per question")
    split = split or DEFAULT_SPLITS[benchmark]
    if benchmark in SPLITS and split not in SPLITS[benchmark]:
        raise ConfigError(f"{benchmark} has no split {split!r}; choose one of {', '.join(SPLITS[benchmark])}")
    levels = _levels(benchmark, difficulty)
    MissingDb.of(missing_db)
    if benchmark == "sqale":
        if cache_dir is None:
            raise ConfigError("SQaLe needs a cache folder to materialise its databases in (cache_dir)")
        return load_sqale(path, cache_dir=cache_dir, split=split or "test", phrasing=phrasing, difficulty=levels, limit=limit)
    if path is None:
        raise ConfigError(f"{benchmark} needs the path of its folder or questions file")
    if benchmark == "spider":
        named = split in NAMED_SPLITS
        tasks = load_spider(path, split="dev" if named else split, db_root=db_root, missing_db=missing_db, cache_dir=cache_dir)
        tasks = named_split(tasks, split) if named else tasks
    elif benchmark == "spider-dk":
        tasks = load_spider_dk(path, db_root, missing_db=missing_db)
    elif benchmark == "bird":
        tasks = load_bird(path, split=split or "dev", evidence=evidence, db_root=db_root, missing_db=missing_db)
    else:
        tasks = load_jsonl(path, db_root=db_root, evidence=evidence, missing_db=missing_db)
    if levels is not None:
        tasks = [t for t in tasks if t.difficulty in levels]
    return tasks[:limit] if limit is not None else tasks


def _levels(benchmark: str, difficulty: str | Sequence[str] | None) -> list[str] | None:
    if difficulty is None:
        return None
    levels = [difficulty] if isinstance(difficulty, str) else list(difficulty)
    known = LEVELS.get(benchmark)
    for level in levels:
        if known is not None and level not in known:
            raise ConfigError(f"{benchmark} has no difficulty {level!r}; choose among {', '.join(known)}")
    return levels
