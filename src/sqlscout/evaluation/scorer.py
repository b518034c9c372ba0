"""Scoring predicted SQL against gold SQL in parallel processes, with a gold-result cache.

This is what ``sqlscout score`` runs. Every prediction is scored by
:func:`sqlscout.scoring.score_sql`, the function the reward and the evaluator use, under
the sandbox's scoring deadline and row cap. Around it:

- predictions are grouped by database, and each worker keeps its databases open, so a
  question costs its queries, not a connection and a schema load;
- gold results come from a :class:`~sqlscout.evaluation.result_cache.ResultCache` when
  one is given: scoring the same benchmark again runs only the predictions (and, with
  ``cache_predictions``, the predictions' results are kept too);
- a worker sends back verdicts only, never result rows, and holds one question's
  results at a time, so memory stays bounded by the row cap;
- a handful of predictions are scored in this process (a pool costs more than it saves).

>>> from sqlscout.task import Task
>>> task = Task("0", "How many genres?", "../shared/data/chinook/Chinook_Sqlite.sqlite",
...             gold_sql="SELECT COUNT(*) FROM Genre", difficulty="simple")
>>> run = score_predictions([Prediction(task, "SELECT count(GenreId) FROM Genre")], ScoreConfig(workers=1))
>>> run.verdicts[0].official, run.summary().total.accuracy
(True, 1.0)
"""

from __future__ import annotations

import math
import multiprocessing
import os
import threading
import time
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from sqlscout.errors import ConfigError, DataError
from sqlscout.evaluation.result_cache import ResultCache
from sqlscout.sandbox import Database, SandboxConfig
from sqlscout.scoring import ExecResult, Semantics, Verdict, execute_for_scoring, score_sql
from sqlscout.scoring.verdict import SCORING_MAX_ROWS, SCORING_TIMEOUT_S, parses
from sqlscout.task import Task

__all__ = ["Prediction", "ScoreConfig", "ScoreRun", "ScoreSummary", "Tally", "score_predictions"]

Progress = Callable[[int, int, int], None]  # (scored, total, correct so far)

_IN_PROCESS_BELOW = 48  # predictions; fewer are scored without a pool
_OPEN_DATABASES = 8  # per worker


@dataclass(frozen=True)
class ScoreConfig:
    """How to score.

    Attributes:
        semantics: which match counts as correct in the summary (all three are computed).
        workers: processes to score in; None means one per CPU core, 1 means no pool.
        timeout_s: deadline of each query, enforced inside SQLite (> 0).
        max_rows: a result with more rows counts as an error (the sandbox's row cap).
        cache_dir: where query results are cached; None turns the cache off.
        cache_predictions: keep predicted queries' results too (by default only gold
            results are kept, so a second run still executes every prediction).
    """

    semantics: Semantics = Semantics.OFFICIAL
    workers: int | None = None
    timeout_s: float = SCORING_TIMEOUT_S
    max_rows: int = SCORING_MAX_ROWS
    cache_dir: Path | None = None
    cache_predictions: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "semantics", Semantics(self.semantics))
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"workers must be >= 1, got {self.workers}")
        if not self.timeout_s > 0:
            raise ConfigError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.max_rows < 1:
            raise ConfigError(f"max_rows must be >= 1, got {self.max_rows}")
        if self.cache_dir is not None:
            object.__setattr__(self, "cache_dir", Path(self.cache_dir).expanduser())
        elif self.cache_predictions:
            raise ConfigError("cache_predictions needs a cache_dir")

    def pool_size(self) -> int:
        return self.workers if self.workers is not None else (os.cpu_count() or 1)


@dataclass(frozen=True)
class Prediction:
    """A predicted query for a task; ``sql`` None means no prediction was made."""

    task: Task
    sql: str | None


@dataclass
class Tally:
    count: int = 0
    correct: int = 0

    @property
    def accuracy(self) -> float:
        return self.correct / self.count if self.count else 0.0


@dataclass
class ScoreSummary:
    """Accuracy by difficulty (in first-seen order) and in total, plus the outcome mix."""

    semantics: Semantics
    by_difficulty: dict[str, Tally]
    total: Tally
    outcomes: dict[str, int]

    def to_dict(self) -> dict:
        def tally(t: Tally) -> dict:
            return {"count": t.count, "correct": t.correct, "accuracy": round(t.accuracy, 6)}

        return {
            "semantics": self.semantics.value,
            "by_difficulty": {k: tally(v) for k, v in self.by_difficulty.items()},
            "total": tally(self.total),
            "outcomes": self.outcomes,
        }


@dataclass
class ScoreRun:
    """Verdicts in the order of the predictions, and how the run went."""

    predictions: Sequence[Prediction]
    verdicts: list[Verdict]
    semantics: Semantics
    gold_cache_hits: int = 0  # gold results read from the cache
    gold_repeats: int = 0  # the same gold query as the question before, on the same database
    gold_runs: int = 0  # gold queries executed
    elapsed_s: float = 0.0
    workers: int = 1

    def summary(self, levels: Sequence[str] = ()) -> ScoreSummary:
        """Tallies per difficulty: ``levels`` first in that order, then any others seen."""
        by: dict[str, Tally] = {level: Tally() for level in levels}
        total = Tally()
        outcomes: dict[str, int] = defaultdict(int)
        for prediction, verdict in zip(self.predictions, self.verdicts):
            correct = verdict.correct(self.semantics)
            tally = by.setdefault(prediction.task.difficulty or "unknown", Tally())
            for t in (tally, total):
                t.count += 1
                t.correct += correct
            outcomes[verdict.outcome.value] += 1
        return ScoreSummary(self.semantics, {k: v for k, v in by.items() if v.count}, total, dict(outcomes))


def score_predictions(
    predictions: Sequence[Prediction], config: ScoreConfig | None = None, *, progress: Progress | None = None
) -> ScoreRun:
    """Score every prediction; see the module's docstring for how."""
    config = config or ScoreConfig()
    start = time.perf_counter()
    cache = ResultCache(config.cache_dir, max_rows=config.max_rows) if config.cache_dir is not None else None
    jobs = _plan(predictions, config, cache)
    if cache is not None:
        cache.close()  # workers open their own connections
    verdicts: list[Verdict | None] = [None] * len(predictions)
    gold_sources: Counter[str] = Counter()
    done = correct = 0

    def take(results: list[tuple[int, Verdict, str]]) -> None:
        nonlocal done, correct
        for index, verdict, source in results:
            verdicts[index] = verdict
            gold_sources[source] += 1
            correct += verdict.correct(config.semantics)
        done += len(results)
        if progress is not None:
            progress(done, len(predictions), correct)

    workers = min(config.pool_size(), len(jobs))
    if workers <= 1 or len(predictions) < _IN_PROCESS_BELOW:
        workers = 1
        try:
            for job in jobs:
                take(_score_job(job))
        finally:
            _release()  # this process keeps running: close what the jobs opened
    else:
        context = _context()
        if context.get_start_method() == "fork":
            # Load sqlglot's parser once here; forked workers share it instead of each
            # spending a fifth of a second importing it.
            parses("SELECT 1")
        # A Pool queues every job at once, so a worker never waits for the parent to
        # hand it the next one (an executor feeds its workers one or two at a time).
        with context.Pool(workers) as pool:
            for results in pool.imap_unordered(_score_job, jobs):
                take(results)
    assert all(v is not None for v in verdicts)
    return ScoreRun(
        predictions,
        verdicts,  # type: ignore[arg-type]
        config.semantics,
        gold_cache_hits=gold_sources[_CACHED],
        gold_repeats=gold_sources[_REPEATED],
        gold_runs=gold_sources[_RAN],
        elapsed_s=time.perf_counter() - start,
        workers=workers,
    )


@dataclass(frozen=True)
class _Job:
    """Predictions on one database, scored together in one worker."""

    db_path: str
    db_hash: str | None
    items: list[tuple[int, str | None, str]] = field(default_factory=list)  # (index, pred, gold)
    cache: ResultCache | None = None
    cache_predictions: bool = False
    timeout_s: float = SCORING_TIMEOUT_S
    max_rows: int = SCORING_MAX_ROWS


def _plan(predictions: Sequence[Prediction], config: ScoreConfig, cache: ResultCache | None) -> list[_Job]:
    by_db: dict[Path, list[tuple[int, str | None, str]]] = defaultdict(list)
    for index, prediction in enumerate(predictions):
        task = prediction.task
        if not task.gold_sql:
            raise DataError(f"question {task.question_id} has no gold SQL to score against.")
        by_db[task.db_path].append((index, prediction.sql, task.gold_sql))
    missing = sorted(str(p) for p in by_db if not p.is_file())
    if missing:
        raise DataError(f"databases not found: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    # Enough chunks to keep every worker busy to the end, few enough to share connections.
    size = max(1, min(64, math.ceil(len(predictions) / (config.pool_size() * 4))))
    jobs = []
    for db_path, items in sorted(by_db.items(), key=lambda kv: -len(kv[1])):
        db_hash = cache.database_hash(db_path) if cache is not None else None
        for start in range(0, len(items), size):
            chunk = items[start : start + size]
            jobs.append(_Job(str(db_path), db_hash, chunk, cache, config.cache_predictions, config.timeout_s, config.max_rows))
    return jobs


def _context() -> multiprocessing.context.BaseContext:
    # fork starts workers in milliseconds (with sqlglot already imported, below), but is
    # unsafe once other threads exist (a progress bar's refresher, say).
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


_databases: OrderedDict[str, Database] = OrderedDict()  # this worker's open databases
_caches: dict[Path, ResultCache] = {}  # this worker's cache connections

# Buffered cache writes are flushed past this many result cells, to bound memory.
_FLUSH_CELLS = 2_000_000


def _database(path: str, config: SandboxConfig) -> Database:
    db = _databases.pop(path, None)
    if db is None or db.config != config:
        db = Database(path, config)
    _databases[path] = db
    while len(_databases) > _OPEN_DATABASES:
        _databases.popitem(last=False)[1].close()
    return db


_CACHED, _REPEATED, _RAN = "cache", "repeat", "ran"


def _release() -> None:
    while _databases:
        _databases.popitem()[1].close()
    while _caches:
        _caches.popitem()[1].close()


def _score_job(job: _Job) -> list[tuple[int, Verdict, str]]:
    db = _database(job.db_path, SandboxConfig(timeout_s=job.timeout_s, max_rows=job.max_rows))
    cache = None
    if job.cache is not None and job.db_hash is not None:
        cache = _caches.setdefault(job.cache.path, job.cache)
    pending: list[tuple[str, str, ExecResult]] = []
    pending_cells = 0
    last: tuple[str, ExecResult] | None = None  # benchmarks often ask the same gold twice in a row
    out = []

    def lookup(sql: str | None, use_cache: bool) -> tuple[ExecResult | None, bool]:
        nonlocal pending_cells
        if sql is None or not sql.strip():
            return None, False
        found = cache.get(job.db_hash, sql) if cache is not None and use_cache else None  # type: ignore[arg-type]
        if found is not None:
            return found, True
        result = execute_for_scoring(db, sql, timeout_s=job.timeout_s, max_rows=job.max_rows)
        if cache is not None and use_cache:
            pending.append((job.db_hash, sql, result))  # type: ignore[arg-type]
            pending_cells += sum(len(r) for r in result.rows or ())
            if pending_cells > _FLUSH_CELLS:
                flush()
        return result, False

    def flush() -> None:
        nonlocal pending_cells
        if cache is not None and pending:
            cache.put_many(pending)
        pending.clear()
        pending_cells = 0

    for index, pred_sql, gold_sql in job.items:
        if last is not None and last[0] == gold_sql:
            gold, source = last[1], _REPEATED
        else:
            found, cached = lookup(gold_sql, True)
            assert found is not None
            gold, source = found, _CACHED if cached else _RAN
            last = (gold_sql, gold)
        pred, _ = lookup(pred_sql, job.cache_predictions)
        scored = score_sql(db, pred_sql, gold_sql, gold=gold, pred=pred, timeout_s=job.timeout_s, max_rows=job.max_rows)
        out.append((index, scored.verdict, source))
    flush()
    return out
