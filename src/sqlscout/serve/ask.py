"""``ask``: the agent answers a question over a served database, round by round.

Every request runs its episode through :class:`~sqlscout.runner.Runner` — the driver
that evaluation and training use — over the one shared model (see
:mod:`sqlscout.serve.batching`), on the served databases, under the request's deadline
and within the cap on concurrent episodes. After each round the caller gets the
round's record (what the model wrote, each call and its output, the observation); at
the end, the answer: the final SQL, its result and the whole trace.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable

from sqlscout.backends.base import Backend
from sqlscout.env.render import render_table
from sqlscout.env.sandbox import Database
from sqlscout.env.task import Task
from sqlscout.env.trace import EpisodeResult, RoundRecord
from sqlscout.errors import ConfigError, QueryError
from sqlscout.runner import Runner, RunnerConfig, Turn
from sqlscout.serve.batching import BatchingBackend, RequestBackend
from sqlscout.serve.catalog import Catalog
from sqlscout.serve.config import ServeConfig
from sqlscout.serve.errors import Busy

__all__ = ["AskRequest", "AskService", "RoundCallback", "answer_text", "json_value"]

RoundCallback = Callable[[dict[str, Any]], None]
MAX_QUESTION_CHARS = 4_000


@dataclass(frozen=True)
class AskRequest:
    """A question about one served database (``db`` may be None when only one is served)."""

    db: str | None
    question: str
    evidence: str | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        if not self.question.strip():
            raise ConfigError("the question is empty; ask something about the database")
        if len(self.question) > MAX_QUESTION_CHARS:
            raise ConfigError(f"the question is longer than {MAX_QUESTION_CHARS} characters; shorten it")


class _RequestRunner(Runner):
    """The runner of one request, over the served databases (opened once, at start)."""

    def __init__(self, backend: Backend, config: RunnerConfig, catalog: Catalog) -> None:
        super().__init__(backend, config)
        self._catalog = catalog

    def database(self, path: Path) -> Database:
        return self._catalog.by_path(path)


class AskService:
    """Answers questions with one shared model.

    Args:
        backend: the model, loaded once; every request shares it.
        catalog: the served databases.
        runner: the episode and sampling settings (the model preset's); a request's
            ``seed`` replaces ``runner.seed``.
        config: deadlines and the cap on concurrent episodes.
    """

    def __init__(self, backend: Backend, catalog: Catalog, runner: RunnerConfig, config: ServeConfig) -> None:
        self.model = BatchingBackend(backend, max_batch=runner.max_batch)
        self.catalog = catalog
        self.runner = runner
        self.config = config
        self._slots = threading.BoundedSemaphore(config.max_episodes)
        self._pool = ThreadPoolExecutor(config.max_episodes, thread_name_prefix="sqlscout-ask")
        self._ids = itertools.count(1)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.model.close()

    def answer(
        self, request: AskRequest, *, on_round: RoundCallback | None = None, cancelled: threading.Event | None = None
    ) -> dict[str, Any]:
        """Run one episode in this thread (no cap) and return the answer."""
        db = self.catalog.get(request.db)
        name = self.catalog.name_of(db)
        timeout = self.config.ask_timeout_s
        view = RequestBackend(self.model, time.monotonic() + timeout, cancelled or threading.Event(), timeout)
        config = self.runner if request.seed is None else replace(self.runner, seed=request.seed)
        task = Task(f"ask-{next(self._ids)}", request.question, db.path, evidence=request.evidence, db_id=name)
        def on_turn(turn: Turn) -> None:
            if on_round is not None and turn.episode.rounds:
                on_round(round_event(turn.episode.rounds[-1]))

        with _RequestRunner(view, config, self.catalog) as runner:
            rollout = next(iter(runner.run([task], on_turn=on_turn)))
        return answer_payload(name, rollout.result, db, self.config.answer_rows)

    def submit(
        self, request: AskRequest, on_round: RoundCallback | None = None
    ) -> tuple[asyncio.Future[dict[str, Any]], threading.Event]:
        """Start an episode on the pool; its future and the event that cancels it.

        Raises:
            UnknownDatabase: before any episode starts.
            Busy: ``max_episodes`` episodes are running.
        """
        self.catalog.get(request.db)
        if not self._slots.acquire(blocking=False):
            raise Busy(f"{self.config.max_episodes} questions are being answered already; retry in a moment")
        cancelled = threading.Event()

        def work() -> dict[str, Any]:
            try:
                return self.answer(request, on_round=on_round, cancelled=cancelled)
            finally:
                self._slots.release()

        try:
            future = asyncio.get_running_loop().run_in_executor(self._pool, work)
        except BaseException:
            self._slots.release()
            raise
        return future, cancelled

    async def ask(self, request: AskRequest, on_round: RoundCallback | None = None) -> dict[str, Any]:
        """:meth:`submit` and wait; cancelling the wait cancels the episode."""
        future, cancelled = self.submit(request, on_round)
        try:
            return await future
        except asyncio.CancelledError:
            cancelled.set()
            raise


def round_event(record: RoundRecord) -> dict[str, Any]:
    """One round as JSON: the model's text, each call with its output, the observation."""
    return asdict(record)


def answer_payload(db_name: str, result: EpisodeResult, db: Database, rows: int) -> dict[str, Any]:
    """The answer as JSON: final SQL, its result (first ``rows`` rows), how it ended, the trace.

    Paths are left out: a client knows databases by name only.
    """
    return {
        "db": db_name,
        "question": result.task.question,
        "sql": result.final_sql,
        "result": _result_of(db, result.final_sql, rows),
        "answer_source": result.answer_source.value,
        "stop_reason": result.stop_reason.value,
        "error": result.error,
        "rounds": result.tool_rounds,
        "tool_calls": result.tool_calls,
        "tokens": result.total_tokens,
        "wall_time_s": round(result.wall_time_s, 3),
        "trace": [round_event(r) for r in result.rounds],
    }


def _result_of(db: Database, sql: str | None, rows: int) -> dict[str, Any] | None:
    if sql is None:
        return None
    try:
        result = db.execute(sql, max_rows=rows)
    except QueryError as exc:
        return {"error": str(exc)}
    return {
        "columns": list(result.columns),
        "rows": [[json_value(v) for v in row] for row in result.rows],
        "truncated": result.truncated,
    }


def json_value(value: Any) -> Any:
    """A SQLite value as JSON can hold it: blobs by size, infinities as text.

    >>> json_value(b"abc"), json_value(float("inf")), json_value(3)
    ('<blob 3 bytes>', 'inf', 3)
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<blob {len(bytes(value))} bytes>"
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def answer_text(payload: dict[str, Any]) -> str:
    """The answer as a person (or an assistant) reads it: the SQL, its rows, how it ended."""
    lines = [f"SQL: {payload['sql']}" if payload["sql"] else "No answer."]
    result = payload["result"]
    if result is not None and "error" in result:
        lines.append(f"Error: {result['error']}")
    elif result is not None:
        lines.append(render_table(result["columns"], result["rows"], more_rows=result["truncated"]))
    ending = f"({payload['stop_reason']} after {payload['rounds']} tool rounds"
    lines.append(ending + (f"; {payload['error']})" if payload["error"] else ")"))
    return "\n\n".join(lines)
