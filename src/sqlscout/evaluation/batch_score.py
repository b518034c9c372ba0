"""Scoring predicted SQL against gold SQL, in this process or in a pool, with a gold-result cache.

This is what ``sqlscout score`` runs. Every prediction is scored by
:func:`sqlscout.scoring.score_sql`, the function the reward and the evaluator use, under
the sandbox's scoring deadline and row cap. Around it:

- predictions are grouped by database; a database is opened once (one pooled
  connection, its schema read by SQLite once) and its questions scored one after another;
- gold results come from a :class:`~sqlscout.scoring.result_cache.ResultCache` when
  one is given, read as one file per database: scoring the same benchmark again runs
  only the predictions (and, with ``cache_predictions``, the predictions' results are
  kept too; with ``cache_prediction_cells``, the small ones). A gold query asked twice
  in a run is run once;
- where to score is decided as it goes (``workers=None``): a benchmark's queries are
  usually so small that a process pool costs more than it saves (starting workers,
  sending jobs and verdicts, reopening databases), so scoring starts in this process
  and hands what is left to a pool of one process per core only once the questions
  done say the rest are slow (over a millisecond each) and long (over a second);
  ``workers=1`` never starts a pool, ``workers=N`` scores in N processes from the start;
- each database's questions run in one read transaction (``Database.snapshot``), and
  sqlglot is asked only what a comparison needs, many questions at once;
- memory stays bounded: one database's gold results at a time, big ones only as long
  as their question needs them, and pool workers send back verdicts, never rows.

>>> from sqlscout.env.task import Task
>>> task = Task("0", "How many genres?", "src/sqlscout/data/chinook/Chinook_Sqlite.sqlite",
...             gold_sql="SELECT COUNT(*) FROM Genre", difficulty="simple")
>>> run = score_predictions([Prediction(task, "SELECT count(GenreId) FROM Genre")], ScoreConfig(workers=1))
>>> run.verdicts[0].official, run.summary().total.accuracy
(True, 1.0)
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

from sqlscout.errors import ConfigError, DataError
from sqlscout.scoring.result_cache import ResultBundle, ResultCache, cacheable
from sqlscout.env.sandbox import Database, SandboxConfig
from sqlscout.scoring import ExecResult, Semantics, Verdict, execute_for_scoring, has_top_level_order_by, score_sql
from sqlscout.scoring.gold import GoldResults
from sqlscout.scoring.compare import order_by_from_text
from sqlscout.scoring.parsing import parser_version
from sqlscout.scoring.verdict import SCORING_MAX_ROWS, SCORING_TIMEOUT_S, parsed_by_engine, parses
from sqlscout.evaluation.unparsed import MEMO_CELLS, STAGE_CELLS, Judged, Staged, Unparsed, result_cells
from sqlscout.env.task import Task

__all__ = ["SMALL_RESULT_CELLS", "Prediction", "ScoreConfig", "ScoreRun", "ScoreSummary", "Tally", "score_predictions"]

Progress = Callable[[int, int, int], None]  # (scored, total, correct so far)

_SLICE = 64  # questions scored between two looks at the clock (and progress reports)
_POOL_AFTER_S = 0.5  # in-process time before a pool is considered (workers=None)
_POOL_FOR_S = 1.0  # the remaining work, projected, that is worth starting a pool for
# A pool costs every question about 50 us more CPU (jobs and verdicts cross pipes, each
# worker opens the databases again and parses in smaller batches), so it pays only
# where questions are slower than this in this process (BIRD's take milliseconds;
# Spider's about 0.1 ms, where a pool of two was slower on a loaded 2-core machine).
_POOL_QUESTION_S = 1e-3
_OPEN_DATABASES = 8  # per pool worker
# Prediction results of at most this many cells are what `sqlscout score` caches by
# default (ScoreConfig.cache_prediction_cells): nearly every result of a benchmark's
# predictions, a few kilobytes at most each.
SMALL_RESULT_CELLS = 1_000


@dataclass(frozen=True)
class ScoreConfig:
    """How to score.

    Attributes:
        semantics: which match counts as correct in the summary (all three are computed).
        workers: processes to score in; None decides as it goes (this process first, a
            pool of one process per core once the work is seen to be long), 1 means
            this process only, N > 1 a pool of N from the start.
        timeout_s: deadline of each query, enforced inside SQLite (> 0).
        max_rows: a result with more rows counts as an error (the sandbox's row cap).
        cache_dir: where query results are cached; None turns the cache off.
        cache_prediction_cells: keep predicted queries' results of at most this many
            cells (rows times columns; an error has none) too: scoring the same
            predictions again then runs only the ones with larger results.
        cache_predictions: keep every predicted query's result too (by default only gold
            results are kept, so a second run still executes every prediction).
        timeout_rule: ``query`` (each query its own deadline) or ``pair`` (BIRD's rule).
        immutable: open the databases with SQLite's ``immutable=1`` (files that do not
            change: read-only media, WAL-mode copies).
        query_memory_mb: above 0, every query runs in a worker process under this memory
            cap and is killed at its deadline (:mod:`sqlscout.env.isolation`); 0 runs them
            in the scoring process.
    """

    semantics: Semantics = Semantics.OFFICIAL
    workers: int | None = None
    timeout_s: float = SCORING_TIMEOUT_S
    max_rows: int = SCORING_MAX_ROWS
    cache_dir: Path | None = None
    cache_predictions: bool = False
    cache_prediction_cells: int = 0
    timeout_rule: str = "query"  # "pair": BIRD's, one timeout for prediction and gold together
    immutable: bool = False
    query_memory_mb: int = 0

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
    gold_repeats: int = 0  # gold queries asked before in this run, on the same database
    gold_runs: int = 0  # gold queries executed
    pred_cache_hits: int = 0  # predictions' results read from the cache (cache_predictions)
    elapsed_s: float = 0.0
    workers: int = 1  # 1: scored in this process; N: some or all of it in a pool of N

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


Item = tuple[int, "str | None", str]  # (index in the predictions, predicted SQL, gold SQL)
_CACHED, _REPEATED, _RAN, _PRED_CACHED = "cache", "repeat", "ran", "pred-cache"
_GOLD_SOURCES = {"cached": _CACHED, "repeated": _REPEATED, "ran": _RAN}


def score_predictions(
    predictions: Sequence[Prediction], config: ScoreConfig | None = None, *, progress: Progress | None = None
) -> ScoreRun:
    """Score every prediction; see the module's docstring for how."""
    config = config or ScoreConfig()
    start = time.perf_counter()
    work = _group(predictions, config.semantics)
    cache = ResultCache(config.cache_dir, max_rows=config.max_rows) if config.cache_dir is not None else None
    paths = [path for path, _ in work if "://" not in str(path)]  # a server's database has no file to cache on
    hashes = dict(zip(paths, cache.database_hashes(paths))) if cache is not None else {}
    collect = _Collector(len(predictions), config.semantics, progress)
    workers = 1
    try:
        if config.workers is None or config.workers == 1:
            work = _score_here(work, config, cache, hashes, collect, start, may_hand_over=config.workers is None)
        if work:
            workers = config.pool_size()
            _score_in_pool(work, config, cache, hashes, collect, workers)
    finally:
        if cache is not None:
            cache.close()
    collect.report()
    assert all(v is not None for v in collect.verdicts)
    return ScoreRun(
        predictions,
        collect.verdicts,  # type: ignore[arg-type]
        config.semantics,
        gold_cache_hits=collect.sources[_CACHED],
        gold_repeats=collect.sources[_REPEATED],
        gold_runs=collect.sources[_RAN],
        pred_cache_hits=collect.sources[_PRED_CACHED],
        elapsed_s=time.perf_counter() - start,
        workers=workers,
    )


def _group(predictions: Sequence[Prediction], semantics: Semantics = Semantics.OFFICIAL) -> list[tuple[str, list[Item]]]:
    by_db: dict[Path, list[Item]] = defaultdict(list)
    for index, prediction in enumerate(predictions):
        task = prediction.task
        if not task.gold_sql:
            raise DataError(f"question {task.question_id} has no gold SQL to score against.")
        pred_sql, gold_sql = prediction.sql, task.gold_sql
        if semantics is Semantics.TEST_SUITE:  # run both as the official script rewrites them
            from sqlscout.scoring.testsuite import test_suite_sql

            gold_sql = test_suite_sql(gold_sql, prediction=False)
            pred_sql = test_suite_sql(pred_sql, prediction=True) if pred_sql is not None else None
        by_db[task.db_path].append((index, pred_sql, gold_sql))
    missing = sorted(str(p) for p in by_db if not isinstance(p, str) and not p.is_file())  # a URL is opened to be known
    if missing:
        raise DataError(f"databases not found: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    return [(str(path), items) for path, items in by_db.items()]


class _Collector:
    """Verdicts as they arrive, where each gold result came from, and progress."""

    def __init__(self, total: int, semantics: Semantics, progress: Progress | None) -> None:
        self.verdicts: list[Verdict | None] = [None] * total
        self.sources: Counter[str] = Counter()
        self.semantics = semantics
        self.progress = progress
        self.done = self.correct = 0

    def take(self, results: list[Judged]) -> None:
        verdicts, sources, semantics = self.verdicts, self.sources, self.semantics
        for index, verdict, source in results:
            verdicts[index] = verdict
            sources.update(source)
            self.correct += verdict.correct(semantics)
        self.done += len(results)
        self.report()

    def report(self) -> None:
        if self.progress is not None:
            self.progress(self.done, len(self.verdicts), self.correct)


def _score_here(
    work: list[tuple[str, list[Item]]],
    config: ScoreConfig,
    cache: ResultCache | None,
    hashes: dict[str, str],
    collect: _Collector,
    start: float,
    *,
    may_hand_over: bool,
) -> list[tuple[str, list[Item]]]:
    """Score in this process, database by database; returns what is left for a pool
    (nothing, unless ``may_hand_over`` and the work turns out to be long)."""
    total = sum(len(items) for _, items in work)
    hand_over = may_hand_over and config.pool_size() > 1
    unparsed = Unparsed(partial(_judge, config=config))
    try:
        for position, (path, items) in enumerate(work):
            scorer = _DatabaseScorer(path, cache.results(hashes[path]) if cache is not None and path in hashes else None, config, unparsed)
            try:
                for at in range(0, len(items), _SLICE):
                    collect.take(scorer.score(items[at : at + _SLICE]))
                    if hand_over and _worth_a_pool(time.perf_counter() - start, collect.done + len(unparsed), total):
                        collect.take(unparsed.drain())
                        rest = items[at + _SLICE :]
                        return ([(path, rest)] if rest else []) + work[position + 1 :]
            finally:
                scorer.close(flush=False)  # the cache writes its file once, as it lets go of it or at the end
        collect.take(unparsed.drain())
    finally:
        unparsed.close()
    return []


def _worth_a_pool(elapsed: float, done: int, total: int) -> bool:
    """Whether, judging by the questions done, the ones left are slow enough and would
    take long enough in this process that a pool's costs are worth paying."""
    left = total - done
    if elapsed <= _POOL_AFTER_S or left <= _SLICE or not done:
        return False
    per_question = elapsed / done
    return per_question > _POOL_QUESTION_S and per_question * left > _POOL_FOR_S


def _judge(entry: Staged, parsable: bool | None = None, *, config: ScoreConfig) -> Judged:
    index, pred_sql, gold_sql, gold, pred, source, top_level_order = entry
    # Both results are given, so score_sql runs no query and needs no database.
    scored = score_sql(
        None, pred_sql, gold_sql, gold=gold, pred=pred, top_level_order=top_level_order,  # type: ignore[arg-type]
        semantics=config.semantics, timeout_s=config.timeout_s, max_rows=config.max_rows,
        timeout_rule=config.timeout_rule, parsable=parsable,
    )
    return index, scored.verdict, source


class _OnDemand:
    """A scorer's database, opened by the first query that runs: where every result is
    cached, none is (opening one and reading its schema costs about a millisecond).
    One read transaction then holds for all its questions: every query sees the same
    bytes, and SQLite locks the file once, not per query (on Spider, half a query's cost)."""

    def __init__(self, path: str, config: ScoreConfig) -> None:
        # as the database names itself (GoldResults' key): a resolved path, or a URL without its password
        self.path: Path | str = path if "://" in str(path) else Path(path).expanduser().resolve()
        self.config = config
        self._db: Database | None = None
        self._snapshot: Any = None

    def execute(self, sql: str, **limits: Any) -> Any:
        return self._open().execute(sql, **limits)

    def _open(self) -> Database:
        if self._db is None:
            config = self.config
            from sqlscout.engines import open_database

            db = open_database(self.path, SandboxConfig(timeout_s=config.timeout_s, max_rows=config.max_rows,
                                                        immutable=config.immutable, query_memory_mb=config.query_memory_mb))
            self.path = db.path
            snapshot = db.snapshot()
            try:
                snapshot.__enter__()
            except BaseException:
                db.close()
                raise
            self._db, self._snapshot = db, snapshot
        return self._db

    def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            try:
                self._snapshot.__exit__(None, None, None)
            finally:
                db.close()


class _DatabaseScorer:
    """Scores questions on one database: opened once (if at all), its gold results remembered."""

    def __init__(self, path: str, bundle: ResultBundle | None, config: ScoreConfig, unparsed: Unparsed) -> None:
        self.db: Any = _OnDemand(path, config)  # what execute_for_scoring and GoldResults use of a Database
        self.bundle = bundle
        self.config = config
        self.unparsed = unparsed
        # Gold results asked for in this run, over this database's cached results; big
        # ones are not kept past their question.
        self.golds = GoldResults(lambda _path: bundle, max_entries=1 << 30, max_cells=MEMO_CELLS)
        # Whether a gold query has a top-level ORDER BY, once known.
        self.orders: dict[str, bool] = {}

    def score(self, items: Sequence[Item]) -> list[Judged]:
        """Verdicts of ``items``, except those left in ``unparsed``: the queries of a
        stage first, then its comparisons; a stage holds at most ``STAGE_CELLS``
        result cells, so memory stays bounded."""
        out: list[Judged] = []
        staged: list[Staged] = []
        cells = 0
        for index, pred_sql, gold_sql in items:
            gold, order, source = self._gold(gold_sql)
            if pred_sql == gold_sql and self._same_result(gold_sql, gold):
                pred, pred_source = gold, ()  # the very query, on the same snapshot: the same result
            else:
                pred, pred_source = self._pred(pred_sql)
            staged.append((index, pred_sql, gold_sql, gold, pred, source + pred_source, order))
            cells += result_cells(gold) + result_cells(pred)
            if cells > STAGE_CELLS:
                self._judge(staged, out)
                staged, cells = [], 0
        self._judge(staged, out)
        return out

    def _judge(self, staged: list[Staged], out: list[Judged]) -> None:
        unparsed, config = self.unparsed, self.config
        for entry in staged:
            pred, gold, order = entry[4], entry[3], entry[6]
            if not pred.ok:
                known = parsed_by_engine(pred)  # the database's own parser, when it says
                if known is None:
                    known = self._parsed(entry[1])
                if known is not None:  # the database's answer, or sqlglot's from the cache
                    out.append(_judge(entry, known, config=config))
                    continue
                if unparsed.add(entry, self.bundle):
                    continue
            elif order is None and gold.ok and len(pred.rows) == len(gold.rows) and pred.rows != gold.rows:  # type: ignore[arg-type]
                # The comparison will ask whether the gold query has a top-level ORDER
                # BY: answer it here from the text, or have it parsed with the others,
                # and keep the answer.
                order = self.orders.get(entry[2])
                if order is None:
                    order = order_by_from_text(entry[2])
                    if order is None and unparsed.add(entry, self.bundle, "o"):
                        continue
                    order = self._order(entry[2]) if order is None else self._keep_order(entry[2], order)
                entry = (*entry[:6], order)
            out.append(_judge(entry, config=config))
        if unparsed.full():
            out.extend(unparsed.drain())

    def _parsed(self, sql: str | None) -> bool | None:
        version = parser_version() if self.bundle is not None and sql else None
        return self.bundle.parsed(sql, version) if version is not None else None  # type: ignore[union-attr, arg-type]

    def _order(self, gold_sql: str) -> bool:
        return self._keep_order(gold_sql, has_top_level_order_by(gold_sql))

    def _keep_order(self, gold_sql: str, order: bool) -> bool:
        self.orders[gold_sql] = order
        if self.bundle is not None:
            self.bundle.put_order(gold_sql, order)
        return order

    def _gold(self, sql: str) -> tuple[ExecResult, bool | None, tuple[str, ...]]:
        gold, source = self.golds.get(self.db, sql, timeout_s=self.config.timeout_s, max_rows=self.config.max_rows)
        order = self.orders.get(sql)
        if order is None and source == "cached":
            order = self.bundle.top_level_order(sql)  # type: ignore[union-attr]
            if order is not None:
                self.orders[sql] = order
        return gold, order, (_GOLD_SOURCES[source],)

    def _same_result(self, sql: str, gold: ExecResult) -> bool:
        """Whether running ``sql`` again would give ``gold`` (its result, finished):
        not for BIRD's timeout rule, which needs the prediction's own running time, nor
        for a query whose result may change between runs (``random()``, ``'now'``...)."""
        return not gold.timed_out and self.config.timeout_rule == "query" and cacheable(sql)

    def _pred(self, sql: str | None) -> tuple[ExecResult, tuple[str, ...]]:
        config = self.config
        # Small results only under the per-query deadline: BIRD's rule needs each
        # prediction's running time, which the cache does not keep.
        small = config.cache_prediction_cells if config.timeout_rule == "query" else 0
        bundle = self.bundle if config.cache_predictions or small > 0 else None
        if bundle is not None and sql is not None:
            found = bundle.get(sql)
            if found is not None:
                return found, (_PRED_CACHED,)
        pred = execute_for_scoring(self.db, sql, timeout_s=config.timeout_s, max_rows=config.max_rows)
        if bundle is not None and sql is not None and sql.strip() and (config.cache_predictions or result_cells(pred) <= small):
            bundle.put(sql, pred)
        return pred, ()

    def flush(self) -> None:
        if self.bundle is not None:
            self.bundle.flush()

    def close(self, *, flush: bool = True) -> None:
        try:
            if flush:
                self.flush()
        finally:
            self.db.close()


# -- the pool --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Job:
    """Questions on one database, scored together in one worker."""

    db_path: str
    db_hash: str | None
    items: list[Item] = field(default_factory=list)
    cache: ResultCache | None = None
    config: ScoreConfig = field(default_factory=ScoreConfig)


def _score_in_pool(
    work: list[tuple[str, list[Item]]],
    config: ScoreConfig,
    cache: ResultCache | None,
    hashes: dict[str, str],
    collect: _Collector,
    workers: int,
) -> None:
    total = sum(len(items) for _, items in work)
    # Enough jobs to keep every worker busy to the end, few enough to share connections.
    size = max(1, min(64, math.ceil(total / (workers * 4))))
    if cache is not None:
        cache.flush()  # workers read the files this process may still hold changes for
    jobs = [
        _Job(path, hashes.get(path), items[at : at + size], cache, config)
        for path, items in sorted(work, key=lambda kv: -len(kv[1]))
        for at in range(0, len(items), size)
    ]
    context = _context()
    if context.get_start_method() == "fork":
        # Load sqlglot's parser once here; forked workers share it instead of each
        # spending a fifth of a second importing it.
        parses("SELECT 1")
    # A Pool queues every job at once, so a worker never waits for the parent to hand
    # it the next one (an executor feeds its workers one or two at a time).
    with context.Pool(min(workers, len(jobs)), initializer=_start_worker) as pool:
        for results in pool.imap_unordered(_score_job, jobs):
            collect.take(results)
        pool.close()
        pool.join()  # workers end cleanly, so each writes what it learnt once (_start_worker)


def _context() -> Any:
    # fork starts workers in milliseconds (with sqlglot already imported, above), but is
    # unsafe once other threads exist (a progress bar's refresher, say).
    import multiprocessing  # only a pool needs it

    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


# A worker's open databases and caches, kept from one job to the next.
_scorers: OrderedDict[tuple[str, ScoreConfig], _DatabaseScorer] = OrderedDict()
_caches: dict[tuple[Path, int], ResultCache] = {}


def _start_worker() -> None:
    # Cache files are written when a worker ends (a clean end: the pool is closed and
    # joined), not after every job: rewriting a database's file per job cost more than
    # scoring the job. A worker that dies loses only cache entries.
    from multiprocessing.util import Finalize

    Finalize(None, _close_scorers, exitpriority=10)


def _close_scorers() -> None:
    while _scorers:
        _scorers.popitem()[1].close()


def _score_job(job: _Job) -> list[Judged]:
    key = (job.db_path, job.config)
    scorer = _scorers.pop(key, None)
    if scorer is None:
        bundle = None
        if job.cache is not None and job.db_hash is not None:
            cache = _caches.setdefault((job.cache.folder, job.cache.max_rows), job.cache)
            bundle = cache.results(job.db_hash)
        scorer = _DatabaseScorer(job.db_path, bundle, job.config, Unparsed(partial(_judge, config=job.config), helper=False))
    _scorers[key] = scorer
    while len(_scorers) > _OPEN_DATABASES:
        _scorers.popitem(last=False)[1].close()
    return scorer.score(job.items) + scorer.unparsed.drain()
