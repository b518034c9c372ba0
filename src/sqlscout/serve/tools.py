"""The eight exploration tools as a service: definitions, calls under a deadline, scoring.

Definitions come from the tools' own specs (:func:`sqlscout.env.tools.tool_specs`), the
same ones the episode's prompt is built from; when a server holds several databases each
tool takes one more argument, ``db``. A call's output is the observation text a model
sees in an episode (errors as ``Error: ...``), produced by :func:`call_tool` itself.
"""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Mapping, TypeVar

from sqlscout.env.tools import TOOLS, Tool, ToolOutcome, call_tool, tool_specs
from sqlscout.scoring import Semantics, Verdict, score_sql
from sqlscout.serve.catalog import Catalog
from sqlscout.serve.config import ServeConfig
from sqlscout.serve.errors import Busy, DeadlinePassed, UnknownTool

__all__ = ["DB_ARGUMENT", "ToolDefinition", "ToolService", "tool_definitions"]

DB_ARGUMENT = "db"
QUEUE_PER_WORKER = 4  # requests admitted per tool thread (running or waiting) before 429
_T = TypeVar("_T")


@dataclass(frozen=True)
class ToolDefinition:
    """A tool as a protocol lists it: name, description, JSON schema of the arguments."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None


# What the tools that show rows return besides their text (ToolOutcome.data).
TABLE_TOOLS = ("sample_rows", "distinct_values", "run_query")
TABLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "columns": {"type": "array", "items": {"type": "string"}},
        "rows": {"type": "array", "items": {"type": "array"}, "description": "the rows shown (cells as the text shows them; blobs by size)"},
        "truncated": {"type": "boolean", "description": "more rows exist than are shown"},
        "row_count": {"type": ["integer", "null"], "description": "how many rows the result has; null when truncated"},
    },
    "required": ["columns", "rows", "truncated", "row_count"],
}


def tool_definitions(databases: list[str]) -> list[ToolDefinition]:
    """The eight tools, with a required ``db`` argument when more than one database is served.

    >>> [d.name for d in tool_definitions(["a"])][:2]
    ['list_tables', 'describe_table']
    >>> tool_definitions(["a", "b"])[0].input_schema["required"]
    ['db']
    """
    definitions = []
    for spec in tool_specs():
        function = spec["function"]
        schema = copy.deepcopy(function["parameters"])
        if len(databases) > 1:
            schema["properties"] = {DB_ARGUMENT: db_property(databases), **schema["properties"]}
            schema["required"] = [DB_ARGUMENT, *schema["required"]]
        output = copy.deepcopy(TABLE_SCHEMA) if function["name"] in TABLE_TOOLS else None
        definitions.append(ToolDefinition(function["name"], function["description"], schema, output))
    return definitions


def db_property(databases: list[str]) -> dict[str, Any]:
    """The JSON schema of the ``db`` argument: one of the served names."""
    return {"type": "string", "enum": list(databases), "description": "the database to use."}


class ToolService:
    """Runs tool calls and scoring on a thread pool, each under the request deadline.

    SQLite releases the GIL while it works, so calls on the pool run side by side; each
    statement is also bound by the sandbox's own per-query deadline.
    """

    def __init__(self, catalog: Catalog, config: ServeConfig) -> None:
        self.catalog = catalog
        self.config = config
        self._pool = ThreadPoolExecutor(config.tool_workers, thread_name_prefix="sqlscout-serve")
        # Requests running or waiting for a thread; past the bound a request is refused
        # at once as busy (HTTP 429 with Retry-After) instead of queueing without end.
        self._admitted = threading.BoundedSemaphore(config.tool_workers * QUEUE_PER_WORKER)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def call_now(self, tool: str, args: Mapping[str, Any], db: str | None) -> ToolOutcome:
        """One call in this thread: what :meth:`call` runs on the pool.

        Raises:
            UnknownTool, UnknownDatabase: the request names neither.
        """
        self.tool(tool)
        return call_tool(self.catalog.get(db), tool, args)

    def tool(self, name: str) -> Tool:
        """The tool called ``name``, or :class:`UnknownTool` naming the eight."""
        found = TOOLS.get(name)
        if found is None:
            raise UnknownTool(f"no tool named {name!r}; the tools are {', '.join(TOOLS)}")
        return found

    async def call(self, tool: str, args: Mapping[str, Any], db: str | None) -> ToolOutcome:
        """:meth:`call_now` on the pool under the request deadline."""
        return await self._bounded(lambda: self.call_now(tool, args, db))

    async def score(self, db: str, sql: str | None, gold_sql: str, semantics: Semantics) -> Verdict:
        """Execute ``sql`` and ``gold_sql`` on ``db`` and compare them (as the evaluator does)."""
        database = self.catalog.get(db)
        timeout = self.config.sandbox.timeout_s
        return await self._bounded(
            lambda: score_sql(database, sql, gold_sql, semantics=semantics, timeout_s=timeout).verdict
        )

    async def _bounded(self, work: Callable[[], _T]) -> _T:
        if not self._admitted.acquire(blocking=False):
            raise Busy(
                f"{self.config.tool_workers * QUEUE_PER_WORKER} requests are running or waiting already; retry in a moment"
            )
        started = time.monotonic()

        def run() -> _T:
            if time.monotonic() - started > self.config.request_timeout_s:  # its client has had its 504
                raise DeadlinePassed("the request waited past its deadline for a worker; retry")
            return work()

        job = self._pool.submit(run)
        job.add_done_callback(lambda _: self._admitted.release())  # run, failed or cancelled before it ran
        future = asyncio.wrap_future(job)
        try:
            return await asyncio.wait_for(future, self.config.request_timeout_s)
        except asyncio.TimeoutError:
            raise DeadlinePassed(
                f"the request ran past its deadline of {self.config.request_timeout_s:g} s; simplify it"
            ) from None
