"""Running an evaluation: episodes in, scored records streamed to the run directory.

:func:`run_eval` plans one job per (question, sample), skips the jobs a previous
session already finished (``resume``), takes finished episodes from an
:data:`EpisodeSource` as they come, scores each against its gold query, and appends
the record to ``episodes.jsonl`` before taking the next. Where episodes come from is
the source's business: the runner over a model backend in ``sqlscout eval``, over
the scripted backend in tests.

>>> import tempfile
>>> from sqlscout.env.task import Task
>>> task = Task("0", "How many genres?", "src/sqlscout/data/chinook/Chinook_Sqlite.sqlite",
...             gold_sql="SELECT COUNT(*) FROM Genre")
>>> submit = '{"tool": "submit_sql", "args": {"sql": "SELECT count(*) FROM genre"}}'
>>> source = scripted_source(lambda job, turn: submit)
>>> outcome = run_eval([task], EvalConfig("custom", "scripted"), source, tempfile.mkdtemp())
>>> outcome.written, outcome.records[0].verdict.outcome.value
(1, 'equivalent')
"""

from __future__ import annotations

import hashlib
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from sqlscout.assist.profile import PROFILES
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.trace import EpisodeResult, StopReason
from sqlscout.errors import BackendError, ConfigError, DataError
from sqlscout.evaluation.config import EvalConfig, config_mismatch
from sqlscout.evaluation.record import EpisodeRecord, ResultPreview, task_key
from sqlscout.scoring.result_cache import ResultCache
from sqlscout.evaluation.sources import EpisodeSource, Job, runner_source, scripted_source
from sqlscout.evaluation.store import RunDir
from sqlscout.env.sandbox import Database, SandboxConfig
from sqlscout.scoring import ExecResult, Verdict, execute_for_scoring, score_sql
from sqlscout.scoring.gold import GoldResults
from sqlscout.env.task import Task

__all__ = [
    "EpisodeSource",
    "Job",
    "GoldScorer",
    "Progress",
    "RunOutcome",
    "resumable",
    "describe_environment",
    "plan_jobs",
    "run_eval",
    "runner_source",
    "scripted_source",
    "select_tasks",
    "tasks_identity",
]


@dataclass
class Progress:
    """Running totals shown while a run goes (resumed episodes included)."""

    total: int
    done: int = 0
    scored: int = 0
    correct: int = 0

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.scored if self.scored else None

    def add(self, record: EpisodeRecord) -> None:
        self.done += 1
        if record.verdict is not None:
            self.scored += 1
            self.correct += bool(record.verdict.official)


@dataclass
class RunOutcome:
    run_dir: RunDir
    written: int  # episodes run and written in this session
    resumed: int  # episodes found already done
    records: list[EpisodeRecord] = field(default_factory=list)  # all of the run's episodes


def plan_jobs(tasks: Sequence[Task], samples: int) -> list[Job]:
    """Every (question, sample) of a run, question-major. Question keys must be unique."""
    keys = [task_key(t) for t in tasks]
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise DataError(f"question '{key}' appears twice in the selected data; question ids must be unique")
        seen.add(key)
    return [Job(i, s, task, key) for i, (task, key) in enumerate(zip(tasks, keys)) for s in range(samples)]


def select_tasks(tasks: Sequence[Task], limit: int | None, select: str = "first", seed: int = 0) -> list[Task]:
    """``limit`` questions: the first ones, or a sample drawn with ``seed`` (kept in file order).

    >>> tasks = [Task(str(i), "q", "x.sqlite") for i in range(10)]
    >>> [t.question_id for t in select_tasks(tasks, 3)]
    ['0', '1', '2']
    >>> select_tasks(tasks, 3, "random", seed=1) == select_tasks(tasks, 3, "random", seed=1)
    True
    """
    if limit is None or limit >= len(tasks):
        return list(tasks)
    if select == "first":
        return list(tasks[:limit])
    import random

    chosen = sorted(random.Random(seed).sample(range(len(tasks)), limit))
    return [tasks[i] for i in chosen]


def tasks_identity(tasks: Sequence[Task]) -> dict[str, Any]:
    """How many questions a run has and a digest of which ones (ids, databases, gold SQL),
    so a resume over different data is refused."""
    digest = hashlib.sha256()
    for task in tasks:
        digest.update(f"{task_key(task)}\t{task.db_id}\t{task.gold_sql or ''}\t{task.condition}\n".encode())
    return {"count": len(tasks), "digest": digest.hexdigest()[:20]}


def describe_environment() -> dict[str, Any]:
    """Provenance of this invocation: time, sqlscout version, git commit of the code."""
    from sqlscout import __version__

    return {
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "sqlscout_version": __version__,
        "git_commit": _git_commit(Path(__file__).resolve().parent),
    }


def _git_commit(where: Path) -> str | None:
    try:
        head = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("-dirty" if dirty else "") if head else None


class GoldScorer:
    """Scores finished episodes against their gold query. Gold results come from the
    project's one gold-result cache (:class:`~sqlscout.scoring.gold.GoldResults`): each
    is computed once per (database, gold SQL) and shared by every sample of the
    question; with a :class:`ResultCache` it is also kept on disk at once (the cache
    ``sqlscout score`` uses), so a later run on the same benchmark never runs a gold
    query again."""

    def __init__(self, cache: ResultCache | None = None, sandbox: SandboxConfig | None = None) -> None:
        self.cache = cache
        self.sandbox = sandbox
        self._dbs: dict[Path, Database] = {}
        self._golds = GoldResults.over_cache(cache, write_through=True) if cache is not None else GoldResults()

    def database(self, path: Path) -> Database:
        if path not in self._dbs:
            from sqlscout.engines import open_database

            self._dbs[path] = open_database(path, self.sandbox)
        return self._dbs[path]

    def gold(self, path: Path, sql: str) -> ExecResult:
        return self._golds.get(self.database(path), sql)[0]

    def score(self, result: EpisodeResult) -> tuple[Verdict | None, ResultPreview | None, ResultPreview | None]:
        """(verdict, predicted-result preview, gold-result preview); no verdict without gold."""
        task = result.task
        db = self.database(task.db_path)
        if not task.gold_sql:
            pred = execute_for_scoring(db, result.final_sql)
            return None, ResultPreview.of(pred), None
        scored = score_sql(db, result.final_sql, task.gold_sql, gold=self.gold(task.db_path, task.gold_sql))
        return scored.verdict, ResultPreview.of(scored.pred), ResultPreview.of(scored.gold)

    def close(self) -> None:
        for db in self._dbs.values():
            db.close()
        self._dbs.clear()
        if self.cache is not None:
            self.cache.close()


# The switches of help an episode config had before help was a layer (sqlscout.assist),
# at their defaults then: a stored run with them so ran the plain protocol.
_RETIRED = {
    **dict.fromkeys(
        "constrain defer_mixed_submit worked_example end_on_repeat submit_hint guided_start submit_tested "
        "query_hints draft_first rerun_submits focus_after_rows query_after_survey restate_question fresh_start".split(),
        False,
    ),
    "example_values": 0,
    "reasoning_lines": 3,
}


def _with_new_options(settings: dict[str, Any]) -> dict[str, Any]:
    """Stored settings read as today's: episode options added since at their defaults
    (every option is off by default, as the run was before it existed); a run stored
    before help was a layer of its own ran the plain protocol where none of its old
    switches was on (they are dropped), and a switch that was on stays, so that a resume
    under other help is refused."""
    episode = settings.get("episode")
    if not isinstance(episode, dict):
        return settings
    known = EpisodeConfig().to_dict()
    kept = {k: v for k, v in episode.items() if k in known or _RETIRED.get(k, object()) != v}
    upgraded = {**settings, "episode": {**known, **kept}}
    if "assist" not in settings:
        upgraded["assist"] = PROFILES["none"].to_dict()
    return upgraded


def _differences(stored: dict[str, Any], settings: dict[str, Any], identity: dict[str, Any]) -> list[str]:
    differences = config_mismatch(_with_new_options(stored.get("settings", {})), settings)
    return differences + [f"tasks.{d}" for d in config_mismatch(stored.get("tasks", {}), identity)]


def resumable(out: str | Path | RunDir, config: EvalConfig, tasks: Sequence[Task]) -> bool:
    """Whether ``out`` holds a run that :func:`run_eval` would continue with ``resume``
    under ``config`` on ``tasks`` (the same settings and questions)."""
    run = out if isinstance(out, RunDir) else RunDir(out)
    return run.exists() and not _differences(run.read_config(), config.to_dict(), tasks_identity(tasks))


def _prepare(run: RunDir, settings: dict[str, Any], identity: dict[str, Any], environment: dict[str, Any], resume: bool) -> int:
    """Write or check ``config.json``; the session number of this invocation."""
    if not run.exists():
        if run.episodes_path.is_file() and run.episodes_path.stat().st_size:
            raise DataError(f"{run.path} holds episodes but no config.json; use a fresh --out")
        run.write_config({"settings": settings, "tasks": identity, "sessions": [environment]})
        return 1
    if not resume:
        raise ConfigError(f"{run.path} already holds a run; pass --resume to continue it, or choose another --out")
    stored = run.read_config()
    differences = _differences(stored, settings, identity)
    if differences:
        raise ConfigError(
            f"cannot resume {run.path}: this invocation differs from the stored run in "
            + "; ".join(differences)
            + ". Re-run with the stored settings, or choose another --out"
        )
    sessions = stored.get("sessions", [])
    stored["sessions"] = sessions + [environment]
    run.write_config(stored)
    return len(sessions) + 1


def run_eval(
    tasks: Sequence[Task],
    config: EvalConfig,
    source: EpisodeSource,
    out: str | Path | RunDir,
    *,
    resume: bool = False,
    environment: dict[str, Any] | None = None,
    on_start: Callable[[Progress], None] | None = None,
    on_record: Callable[[EpisodeRecord, Progress], None] | None = None,
    max_backend_errors: int = 32,
    result_cache: ResultCache | None = None,
    sandbox: SandboxConfig | None = None,
) -> RunOutcome:
    """Run (or continue) an evaluation and stream every scored episode to ``out``.

    With ``resume``, episodes already in ``out/episodes.jsonl`` are kept and not run
    again — except those that ended in a backend error, which are retried — and the
    stored settings must equal ``config`` (else :class:`ConfigError` lists the
    differences). ``environment`` is this invocation's provenance (default:
    :func:`describe_environment`). After ``max_backend_errors`` backend failures in a
    row the run stops with :class:`BackendError` (what ran is kept). ``result_cache``
    keeps gold results on disk between runs; ``sandbox`` is how scoring opens the
    databases (as the runner does).
    """
    run = out if isinstance(out, RunDir) else RunDir(out)
    jobs = plan_jobs(tasks, config.samples)
    # Lock the directory before reading or writing anything in it: one writer per run.
    writer = run.open_for_append()
    scorer = GoldScorer(result_cache, sandbox)
    try:
        session = _prepare(run, config.to_dict(), tasks_identity(tasks), environment or describe_environment(), resume)
        kept = {r.identity: r for r in run.iter_records() if r.result.stop_reason is not StopReason.BACKEND_ERROR}
        todo = [j for j in jobs if (j.key, j.sample) not in kept]
        progress = Progress(total=len(jobs))
        for record in kept.values():
            progress.add(record)
        if on_start is not None:
            on_start(progress)
        written: list[EpisodeRecord] = []
        failing = 0
        started = time.perf_counter()
        for job, result in source(todo):
            verdict, pred, gold = scorer.score(result)
            record = EpisodeRecord(
                key=job.key,
                index=job.index,
                sample=job.sample,
                mode=config.mode.value,
                result=result,
                verdict=verdict,
                pred=pred,
                gold=gold,
                session=session,
                finished_s=time.perf_counter() - started,
            )
            writer.write(record)
            written.append(record)
            progress.add(record)
            if on_record is not None:
                on_record(record, progress)
            failing = failing + 1 if result.stop_reason is StopReason.BACKEND_ERROR else 0
            if failing >= max_backend_errors:
                raise BackendError(
                    f"the backend failed {failing} episodes in a row ({result.error}); "
                    "fix it and continue with --resume (failed episodes are run again)"
                )
    finally:
        scorer.close()
        writer.close()
    records = sorted([*kept.values(), *written], key=lambda r: (r.index, r.sample))
    return RunOutcome(run, len(written), len(kept), records)
