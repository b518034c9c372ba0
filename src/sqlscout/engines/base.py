"""What every engine other than SQLite shares: the interface of the sandbox's
:class:`~sqlscout.env.sandbox.Database` (``execute``, ``compile``, ``schema``,
``time_limit``, ``snapshot``, ``content_hash``, ``close``), with its deadlines and result
caps, over one engine's connections.

An engine subclass opens read-only connections, runs one statement with a deadline
(cancelled by the engine itself, and from this side when the deadline passes), reads its
catalogue and sorts its errors. Everything the episode, the tools, the scoring and the
help read goes through this interface, so they work unchanged on every engine.
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import queue
import threading
import time
from abc import ABC, abstractmethod
from contextlib import contextmanager
from typing import Any, Iterator

from sqlscout.engines.url import DatabaseURL
from sqlscout.env.readonly import WRITE_VERBS, leading_verb
from sqlscout.env.sandbox import QueryResult, SandboxConfig, TurnClock
from sqlscout.env.schema import Column, ForeignKey, Schema, Table, quote_identifier
from sqlscout.errors import QueryError, QueryRefused, QueryTimeout

__all__ = ["EngineDatabase"]

log = logging.getLogger("sqlscout.engines")


class _Held(threading.local):
    ends: float | None = None


class EngineDatabase(TurnClock, ABC):
    """A database served by an engine, read-only, shared safely between threads.

    Attributes:
        engine: ``duckdb``, ``postgresql`` or ``mysql``.
        dialect: sqlglot's name for the engine's SQL.
        label: the engine's name as a prompt says it ("PostgreSQL").
        path: the database's URL without a password (what runs and logs record).
        warnings: what the connection check found unsafe (a role that could write).
    """

    engine: str
    dialect: str
    label: str

    def __init__(self, url: DatabaseURL, config: SandboxConfig | None = None) -> None:
        self.url = url
        self.config = config or SandboxConfig()
        self.path = url.redacted()
        self.warnings: list[str] = []
        self._pool: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._all: list[Any] = []
        self._lock = threading.Lock()
        self._held = _Held()
        self._schema: Schema | None = None
        self._hash: str | None = None
        first = self._borrow()  # a bad URL, a refused login or a missing file fails here
        self._pool.put(first)
        self.warnings = self._check(first)
        for warning in self.warnings:
            log.warning("warning: %s: %s", self.path, warning)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r})"

    @property
    def name(self) -> str:
        return self.url.database

    @property
    def schema(self) -> Schema:
        if self._schema is None:
            self._schema = self._catalogue()
        return self._schema

    @property
    def content_hash(self) -> str:
        """A digest of the catalogue and each table's row count: what a cache of gold
        results keys on (a server's data can change between runs; a change in any table's
        rows or columns makes a new key)."""
        if self._hash is None:
            digest = hashlib.sha256(f"{self.engine}\x00{self.path}".encode())
            for table in self.schema.tables:
                digest.update(table.create_sql.encode())
                try:
                    count = self.execute(f"SELECT COUNT(*) FROM {quote_identifier(table.name)}", max_rows=1).rows[0][0]
                except QueryError:
                    count = -1
                digest.update(f"\x00{count}".encode())
            self._hash = digest.hexdigest()
        return self._hash

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Statements run each in their own read-only transaction; nothing to hold."""
        yield

    def execute(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None) -> QueryResult:
        """Run one read-only statement under the deadline and return its first rows.

        Raises QueryRefused (a write, several statements), QueryTimeout (past the
        deadline), QueryError (anything else the engine says).
        """
        if not sql or not sql.strip():
            raise QueryError("Empty query: pass one SQL SELECT statement.")
        if "\x00" in sql:
            raise QueryRefused("Refused: the query holds a NUL character; send one SQL statement as plain text.")
        verb = leading_verb(sql)
        if verb in WRITE_VERBS:
            # The engine refuses it too (a read-only transaction, a read-only file); saying
            # so by its verb gives the same one-line answer on every engine.
            raise QueryRefused(f"Refused: the database is read-only; only SELECT queries are allowed ({verb} is not).")
        timeout = self.config.timeout_s if timeout_s is None else timeout_s
        left = self.time_left()
        turn_bound = left is not None and left < timeout
        if turn_bound:
            timeout = max(left or 0.0, 0.001)
        cap = self.config.max_rows if max_rows is None else max_rows
        conn = self._borrow()
        start = time.perf_counter()
        healthy = True
        try:
            columns, rows = self._run(conn, sql, timeout, cap)
        except QueryTimeout:
            healthy = self._reusable(conn)
            if not turn_bound:
                raise
            raise QueryTimeout(
                f"Query stopped after {timeout:.1f} s: the time for this turn's tool calls ran out; "
                "send fewer or simpler queries."
            ) from None
        except QueryError:
            healthy = self._reusable(conn)
            raise
        finally:
            if healthy:
                self._pool.put(conn)
            else:
                self._discard(conn)
        truncated = len(rows) > cap
        if truncated:
            del rows[cap:]
        return QueryResult(tuple(columns), rows, truncated, time.perf_counter() - start)

    def compile(self, sql: str) -> None:
        """Plan ``sql`` without running it (``EXPLAIN``), raising as :meth:`execute` does."""
        verb = leading_verb(sql)
        if verb in WRITE_VERBS:
            raise QueryRefused(f"Refused: the database is read-only; only SELECT queries are allowed ({verb} is not).")
        self.execute("EXPLAIN " + sql.strip().rstrip(";"), max_rows=1)

    def close(self) -> None:
        """Close every connection; a later statement opens a new one."""
        with self._lock:
            while True:
                try:
                    self._pool.get_nowait()
                except queue.Empty:
                    break
            for conn in self._all:
                try:
                    self._close(conn)
                except Exception:  # noqa: BLE001 - closing a dead connection says nothing useful
                    pass
            self._all.clear()

    # -- what an engine provides ----------------------------------------------------------

    @abstractmethod
    def _connect(self) -> Any:
        """A new read-only connection."""

    @abstractmethod
    def _run(self, conn: Any, sql: str, timeout: float, cap: int) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Run one statement on ``conn``: its column names and up to ``cap + 1`` rows
        (fetched with :meth:`_fetch`); raise QueryTimeout, QueryRefused or QueryError."""

    @abstractmethod
    def _catalogue(self) -> Schema:
        """The database's tables, columns, keys and foreign keys."""

    def _check(self, conn: Any) -> list[str]:
        """What about this connection is unsafe (checked once, at connect)."""
        return []

    def _reusable(self, conn: Any) -> bool:
        """Whether ``conn`` may serve the next statement after one failed."""
        return True

    def _close(self, conn: Any) -> None:
        conn.close()

    # -- shared helpers -----------------------------------------------------------------

    def _borrow(self) -> Any:
        try:
            return self._pool.get_nowait()
        except queue.Empty:
            conn = self._connect()
            with self._lock:
                self._all.append(conn)
            return conn

    def _discard(self, conn: Any) -> None:
        with self._lock:
            if conn in self._all:
                self._all.remove(conn)
        try:
            self._close(conn)
        except Exception:  # noqa: BLE001
            pass

    def _fetch(self, cursor: Any, cap: int) -> list[tuple[Any, ...]]:
        """Up to ``cap + 1`` rows whose values take at most ``max_result_bytes``, counted as
        they arrive in batches (the sandbox's rule, on every engine)."""
        budget = self.config.max_result_bytes
        width = max(1, len(cursor.description or ()))
        widest_row = width * self.config.max_value_bytes
        rows: list[tuple[Any, ...]] = []
        while True:
            wanted = max(1, min(1_024, budget // widest_row, cap + 1 - len(rows)))
            batch = [tuple(r) for r in cursor.fetchmany(wanted)]
            budget -= _size(batch)
            if budget < 0:
                raise QueryError(
                    f"SQL error: the result is larger than {self.config.max_result_bytes:,} bytes; "
                    "select fewer rows or smaller values."
                )
            rows += batch
            if len(batch) < wanted or len(rows) > cap:
                return rows

    def _watch(self, timeout: float, cancel: Any) -> threading.Timer:
        """A timer that cancels the statement from this side when its deadline passes
        (the engine's own deadline, where it has one, comes first); its ``cancel()``
        returns once the timer's thread has ended."""
        timer = _Deadline(timeout + 0.05, cancel)
        timer.daemon = True
        timer.start()
        return timer


class _Deadline(threading.Timer):
    """A timer whose ``cancel()`` waits for its thread to end. The thread holds the
    statement's cancel function, and with it the connection: left to end on its own, it
    could drop the last reference while the interpreter exits, and DuckDB's destructor,
    run in a thread being torn down, aborted the process (exit 134)."""

    def cancel(self) -> None:
        super().cancel()
        if self is not threading.current_thread():
            self.join()


def _size(batch: list[tuple[Any, ...]]) -> int:
    try:
        return len(marshal.dumps(batch))
    except ValueError:  # Decimal, dates, UUIDs: measured by their text
        return sum(len(str(v)) + 8 for row in batch for v in row)


def table_from_columns(name: str, columns: list[tuple[str, str, bool, bool]], create_sql: str | None = None) -> Table:
    """A catalogue table from ``(name, type, primary key, not null)`` rows, with a
    ``CREATE TABLE`` written from them when the engine keeps none."""
    cols = tuple(Column(c, t, pk, nn) for c, t, pk, nn in columns)
    if create_sql is None:
        lines = [f"  {quote_identifier(c.name)} {c.type}{' NOT NULL' if c.not_null else ''}" for c in cols]
        keys = [quote_identifier(c.name) for c in cols if c.primary_key]
        if keys:
            lines.append(f"  PRIMARY KEY ({', '.join(keys)})")
        create_sql = f"CREATE TABLE {quote_identifier(name)} (\n" + ",\n".join(lines) + "\n)"
    return Table(name, create_sql, cols)


def schema_from(tables: list[Table], keys: list[tuple[str, str, str, str]]) -> Schema:
    """A :class:`Schema` from catalogue tables and ``(from table, from column, to table,
    to column)`` foreign keys (dangling ones dropped, as SQLite's are)."""
    names = {t.name for t in tables}
    seen: list[ForeignKey] = []
    for key in keys:
        fk = ForeignKey(*key)
        if fk.from_table in names and fk.to_table in names and fk not in seen:
            seen.append(fk)
    return Schema(tuple(tables), tuple(seen))
