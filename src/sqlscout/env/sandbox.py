"""A read-only SQLite sandbox (SPEC §2).

Read-only by construction, four times over: the file is opened with a ``mode=ro`` URI,
``PRAGMA query_only`` is on, extension loading stays off, and an authorizer admits only
reads (no write, schema change, ATTACH/DETACH, transaction, state-changing PRAGMA or
``load_extension``). Every statement runs under a deadline enforced inside SQLite by a
progress handler; the few built-in functions whose one call could outrun it are bounded
(:mod:`sqlscout.env.bounded_functions`), as are the length of any value and of a LIKE
pattern. Rows are fetched with a cap on their count and on their size, and text that is not UTF-8 is decoded with replacement characters instead of failing.

Nothing is ever written beside the user's file: a WAL-mode database (which SQLite reads
through ``-wal`` and ``-shm`` files it creates or updates) is opened only with
``immutable=1``, when the user says the file does not change.

A :class:`Database` is safe to share between threads: each statement borrows a
connection from a small pool, so many episodes can read one file at once.

>>> import sqlite3, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "t.sqlite")
>>> with sqlite3.connect(path) as c:
...     _ = c.execute("CREATE TABLE t (x INTEGER)")
...     _ = c.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
>>> db = Database(path)
>>> db.execute("SELECT x FROM t ORDER BY x", max_rows=2).rows
[(1,), (2,)]
>>> db.execute("DELETE FROM t")
Traceback (most recent call last):
...
sqlscout.errors.QueryRefused: Refused: the database is read-only; only SELECT queries are allowed (DELETE is not).
>>> db.close()
"""

from __future__ import annotations

import marshal
import os
import queue
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from sqlscout.env.bounded_functions import BoundedFunctions, pattern_calls, several_pattern_calls
from sqlscout.env.dbfile import check_sqlite_file, file_sha256
from sqlscout.env.escaped_names import escaped_image
from sqlscout.env.readonly import SKIPPABLE, WRITE_VERBS, authorize, describe_error, leading_verb, refusal
from sqlscout.env.schema import Schema, quote_identifier, read_schema
from sqlscout.errors import DatabaseError, QueryError, QueryRefused, QueryTimeout, QueryTooLarge

__all__ = ["Database", "QueryResult", "SandboxConfig", "TurnClock"]

class _ThreadState(threading.local):
    """Per thread: the connection of its :meth:`Database.snapshot` and the end of its
    :meth:`Database.time_limit` (class defaults make a read cheap: no AttributeError)."""

    conn: sqlite3.Connection | None = None
    ends: float | None = None


class _Watchdog:
    """Interrupts statements that run past their deadline, from one background thread.

    The progress handler only runs every ``progress_interval`` VM instructions; when each
    instruction moves a large value (sorting rows of 1 MB blobs) that is seconds.
    ``sqlite3_interrupt`` is checked at every loop jump and inside sorts and counts, so
    it stops such a statement within one row. The thread wakes every ``TICK_S`` and only
    while a statement is running; watching one costs a lock and a dict entry.
    """

    TICK_S = 0.02

    def __init__(self) -> None:
        self._reset()
        # A child forked while the thread held the lock would inherit it locked, and the
        # thread itself does not survive a fork: start afresh in the child.
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._running: dict[sqlite3.Connection, float] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def watch(self, conn: sqlite3.Connection, deadline: float) -> None:
        with self._lock:
            self._running[conn] = deadline
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="sqlscout-watchdog", daemon=True)
                self._thread.start()

    def done(self, conn: sqlite3.Connection) -> None:
        # Under the lock: once this returns, no interrupt meant for the statement can land.
        with self._lock:
            self._running.pop(conn, None)

    def _loop(self) -> None:
        while True:
            time.sleep(self.TICK_S)
            now = time.monotonic()
            with self._lock:
                for conn, deadline in list(self._running.items()):
                    if now > deadline:
                        conn.interrupt()
                        del self._running[conn]
                if not self._running:
                    self._thread = None
                    return


_WATCHDOG = _Watchdog()


def _decode_lossy(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class SandboxConfig:
    """Limits of the sandbox.

    Attributes:
        timeout_s: deadline of one statement, enforced inside SQLite (must be > 0).
        max_rows: rows fetched at most from one statement; more are never read.
        max_value_bytes: largest string, blob or stored row a statement may read or build
            (SQLITE_LIMIT_LENGTH); with ``max_like_pattern_bytes`` it bounds the work of one
            LIKE or GLOB call (the largest Spider value is 213 bytes).
        max_like_pattern_bytes: longest LIKE or GLOB pattern (SQLITE_LIMIT_LIKE_PATTERN_LENGTH;
            the longest in Spider and BIRD dev gold SQL is 53).
        max_result_bytes: bytes one statement's fetched rows may take (their values as
            serialised by ``marshal``: text and blob bytes plus a few bytes a value); a
            larger result is an error, so memory stays bounded (scoring fetches up to a
            million rows).
        progress_interval: SQLite VM instructions between two deadline checks.
        immutable: the file does not change while it is open (read-only media, a benchmark
            copy): open it with SQLite's ``immutable=1``, which takes no locks and is the
            only way to read a WAL-mode database without writing ``-wal``/``-shm`` beside it.
        live_wal: the file is a WAL-mode database that another program is writing: read it
            through its ``-wal`` and ``-shm`` files as any reader does (SQLite creates them
            if missing and updates ``-shm``). Off by default, and a WAL-mode database is
            refused with a message that says what to do, so nothing is written beside a file.
        query_memory_mb: above 0, :func:`sqlscout.engines.open_database` runs the
            statements in worker processes with this memory cap, killed at their deadline
            (:mod:`sqlscout.env.isolation`); 0 runs them in this process. ``serve``, ``mcp``
            and ``eval`` use 1,024; the trainer and ``score`` 0 (speed).
    """

    timeout_s: float = 5.0
    max_rows: int = 10_000
    max_value_bytes: int = 1_000_000
    max_like_pattern_bytes: int = 64
    max_result_bytes: int = 100_000_000
    progress_interval: int = 2_000
    immutable: bool = False
    live_wal: bool = False
    query_memory_mb: int = 0

    def __post_init__(self) -> None:
        from sqlscout.errors import ConfigError

        if not self.timeout_s > 0:
            raise ConfigError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.max_rows < 1:
            raise ConfigError(f"max_rows must be >= 1, got {self.max_rows}")
        if self.max_value_bytes < 1_000:
            raise ConfigError(f"max_value_bytes must be >= 1000, got {self.max_value_bytes}")
        if self.max_like_pattern_bytes < 1:
            raise ConfigError(f"max_like_pattern_bytes must be >= 1, got {self.max_like_pattern_bytes}")
        if self.max_result_bytes < self.max_value_bytes:
            raise ConfigError(
                f"max_result_bytes ({self.max_result_bytes}) must be >= max_value_bytes ({self.max_value_bytes})"
            )
        if self.immutable and self.live_wal:
            raise ConfigError("immutable and live_wal exclude each other: a live database changes")
        if self.query_memory_mb < 0 or 0 < self.query_memory_mb < 128:
            raise ConfigError(f"query_memory_mb must be 0 (in process) or at least 128 (Python itself needs about 60), got {self.query_memory_mb}")
        if self.progress_interval < 1:
            raise ConfigError(f"progress_interval must be >= 1, got {self.progress_interval}")


@dataclass(frozen=True)
class QueryResult:
    """What one statement returned.

    ``truncated`` is true when more rows existed than were fetched.
    """

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    truncated: bool
    elapsed_s: float = field(compare=False, default=0.0)


class TurnClock:
    """What every database shares (the sandbox, and each engine's): a ``with`` block that
    closes it, and a per-thread time limit its statements keep. The class using it keeps
    the thread's state in ``self._held`` (an ``ends`` attribute) and defines ``close``."""

    _held: Any

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()  # type: ignore[attr-defined]

    @contextmanager
    def time_limit(self, seconds: float) -> Iterator[None]:
        """Give this thread's statements inside the block ``seconds`` in all.

        Each still has its own deadline; none runs past the block's. An episode wraps one
        model turn in it, so a reply full of runaway queries ends in bounded time.
        Nested blocks keep the earlier end.
        """
        outer = self._held.ends
        ends = time.monotonic() + seconds
        self._held.ends = ends if outer is None else min(outer, ends)
        try:
            yield
        finally:
            self._held.ends = outer

    def time_left(self) -> float | None:
        """Seconds left in this thread's :meth:`time_limit` block (None outside one)."""
        ends = self._held.ends
        return None if ends is None else ends - time.monotonic()



class Database(TurnClock):
    """A SQLite file opened read-only, shared safely between threads.

    Args:
        path: the SQLite file. It must exist and be a SQLite database.
        config: deadline and caps; see :class:`SandboxConfig`.
    """

    def __init__(self, path: str | os.PathLike[str], config: SandboxConfig | None = None) -> None:
        self.path = Path(path).expanduser().resolve()
        self.config = config or SandboxConfig()
        check_sqlite_file(self.path, immutable=self.config.immutable, live_wal=self.config.live_wal)
        self._pool: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        # Connections whose like()/glob() check the deadline before each call, for the
        # statements that can make several in one row (bounded_functions.pattern_calls).
        self._pattern_pool: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._view_patterns: int | None = None  # LIKE/GLOB words in the database's views
        self._all: dict[sqlite3.Connection, BoundedFunctions] = {}
        self._lock = threading.Lock()
        self._schema: Schema | None = None
        self._hash: tuple[tuple[int, int], str] | None = None
        self._held = _ThreadState()
        # The file's bytes with every name that is not UTF-8 escaped (None: none such,
        # connections read the file itself); decided by the first connection.
        self._image: bytes | None = None
        self._names_checked = False
        # Fail now, with a clear message, if the file cannot be read at all.
        with self.connection() as conn:
            try:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.DatabaseError as exc:
                raise DatabaseError(f"{self.path}: not a readable SQLite database ({exc})") from None

    def __repr__(self) -> str:
        return f"Database({str(self.path)!r})"

    @property
    def name(self) -> str:
        """The file's stem, e.g. ``concert_singer``."""
        return self.path.stem

    @property
    def schema(self) -> Schema:
        """The database's tables, columns and foreign keys, read once."""
        if self._schema is None:
            schema = read_schema(self)
            with self._lock:
                self._schema = self._schema or schema
        return self._schema

    def content_hash(self) -> str:
        """The sha256 of the file's bytes (cached while size and mtime are unchanged)."""
        stat = self.path.stat()
        key = (stat.st_size, stat.st_mtime_ns)
        if self._hash is None or self._hash[0] != key:
            self._hash = (key, file_sha256(self.path))
        return self._hash[1]

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """Borrow a read-only connection for the duration of the block (inside
        :meth:`snapshot`, that snapshot's connection)."""
        held = self._held.conn
        if held is not None:
            yield held
            return
        conn = self._borrow()
        try:
            yield conn
        finally:
            self._pool.put(conn)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Run this thread's statements inside the block in one read transaction.

        They all see the file as the first of them found it, and SQLite takes and checks
        its file lock once instead of once per statement, which on a benchmark's small
        queries costs more than the query (``sqlscout score`` scores each database's
        questions inside one). Statements stay read-only: transaction verbs are refused
        as always, so none can end the snapshot early. Nested calls share the outer one.

        >>> with Database("src/sqlscout/data/chinook/Chinook_Sqlite.sqlite") as db, db.snapshot():
        ...     db.execute("SELECT count(*) FROM Genre").rows
        [(25,)]
        """
        if self._held.conn is not None:
            yield
            return
        conn = self._borrow()
        try:
            self._unguarded(conn, "BEGIN")  # deferred: the read lock comes with the first read
            self._held.conn = conn
            try:
                yield
            finally:
                self._held.conn = None
                if conn.in_transaction:
                    self._unguarded(conn, "COMMIT")
        finally:
            self._pool.put(conn)

    def _unguarded(self, conn: sqlite3.Connection, statement: str) -> None:
        # The authorizer refuses transaction statements to queries; these come from here.
        conn.set_authorizer(None)
        try:
            conn.execute(statement)
        finally:
            conn.set_authorizer(authorize)

    def _borrow(self, patterns: bool = False) -> sqlite3.Connection:
        try:
            return (self._pattern_pool if patterns else self._pool).get_nowait()
        except queue.Empty:
            return self._open(patterns=patterns)

    def _many_pattern_calls(self, sql: str) -> bool:
        """Whether one row of ``sql`` may call LIKE or GLOB more than once (the views it
        may read counted too): each call may take ~0.2 s with no deadline check between."""
        if self._view_patterns is None:
            with self.connection() as conn:
                views = conn.execute("SELECT sql FROM sqlite_schema WHERE type = 'view'").fetchall()
            self._view_patterns = sum(pattern_calls(text or "") for (text,) in views)
        return several_pattern_calls(sql, self._view_patterns)

    def execute(
        self,
        sql: str,
        *,
        timeout_s: float | None = None,
        max_rows: int | None = None,
        params: tuple[Any, ...] = (),
    ) -> QueryResult:
        """Run one read-only statement under the deadline and return its first rows.

        Raises:
            QueryRefused: the statement writes, changes state, or is several statements.
            QueryTimeout: it ran past ``timeout_s``.
            QueryError: any other SQLite error (syntax, unknown column, ...).
        """
        if not sql or not sql.strip():
            raise QueryError("Empty query: pass one SQL SELECT statement.")
        if "\x00" in sql:
            # SQLite stops reading at a NUL, so what follows it would pass every check unseen.
            raise QueryRefused("Refused: the query holds a NUL character; send one SQL statement as plain text.")
        if leading_verb(sql) in WRITE_VERBS:
            # The authorizer cannot see statements that touch nothing (DROP ... IF EXISTS
            # of a missing object) or that only compile (EXPLAIN VACUUM); refuse them by
            # their verb so a write never passes as a harmless no-op or as an answer.
            raise QueryRefused(refusal(sql, ""))
        timeout = self.config.timeout_s if timeout_s is None else timeout_s
        left = self.time_left()
        turn_bound = left is not None and left < timeout
        if turn_bound:
            timeout = max(left or 0.0, 0.0)
        cap = self.config.max_rows if max_rows is None else max_rows
        try:
            return self._execute_checked(sql, params, timeout, cap)
        except QueryTimeout:
            if not turn_bound:
                raise
            raise QueryTimeout(
                f"Query stopped after {timeout:.1f} s: the time for this turn's tool calls ran out; "
                "send fewer or simpler queries."
            ) from None

    def _execute_checked(self, sql: str, params: tuple[Any, ...], timeout: float, cap: int) -> QueryResult:
        """Run a statement :meth:`execute` has checked, on a pooled connection (in this
        process; :class:`~sqlscout.env.isolation.IsolatedDatabase` runs it in a worker)."""
        patterns = self._many_pattern_calls(sql)
        held = self._held.conn
        # A statement with several LIKE/GLOB runs on a guarded connection, outside a
        # snapshot if one is held (a read-only file: it sees the same rows).
        conn = held if held is not None and not patterns else self._borrow(patterns)
        try:
            try:
                return self._run(conn, sql, params, timeout, cap, lossy=False)
            except _NeedsLossyDecoding:
                return self._run(conn, sql, params, timeout, cap, lossy=True)
        finally:
            if conn is not held:
                (self._pattern_pool if patterns else self._pool).put(conn)

    def compile(self, sql: str) -> None:
        """Compile ``sql`` without running it (``EXPLAIN``), so that every check sees it.

        Raises like :meth:`execute`: QueryRefused for a write or several statements,
        QueryError for a statement that does not compile.
        """
        # "EXPLAIN ;DELETE ..." would explain the empty statement before the ";".
        self.execute("EXPLAIN " + SKIPPABLE.sub("", sql), max_rows=1)

    def close(self) -> None:
        """Close every pooled connection. The object must not be used afterwards."""
        with self._lock:
            for conn, bounded in self._all.items():
                conn.close()
                bounded.close()
            self._all.clear()

    # -- internals ---------------------------------------------------------------

    def _open(self, *, patterns: bool = False) -> sqlite3.Connection:
        uri = self.path.as_uri() + ("?mode=ro&immutable=1" if self.config.immutable else "?mode=ro")
        try:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
            if not self._names_checked:
                with self._lock:
                    if not self._names_checked:
                        self._image = escaped_image(conn, self.path)
                        self._names_checked = True
            if self._image is not None:
                conn.close()
                conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
                conn.deserialize(self._image)
        except sqlite3.Error as exc:
            raise DatabaseError(f"{self.path}: cannot open read-only ({exc})") from None
        conn.execute("PRAGMA query_only = ON")
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, self.config.max_value_bytes)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, self.config.max_like_pattern_bytes)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        bounded = BoundedFunctions(
            conn,
            max_value_bytes=self.config.max_value_bytes,
            patterns=patterns,
            max_pattern_bytes=self.config.max_like_pattern_bytes,
        )
        _connect_virtual_tables(conn)
        conn.set_authorizer(authorize)
        with self._lock:
            self._all[conn] = bounded
        return conn

    def _run(
        self,
        conn: sqlite3.Connection,
        sql: str,
        params: tuple[Any, ...],
        timeout: float,
        cap: int,
        *,
        lossy: bool,
    ) -> QueryResult:
        start = time.perf_counter()
        deadline = time.monotonic() + timeout
        monotonic = time.monotonic
        conn.set_progress_handler(lambda: monotonic() > deadline, self.config.progress_interval)
        conn.text_factory = _decode_lossy if lossy else str
        bounded = self._all[conn]
        bounded.deadline, bounded.failure = deadline, None
        cursor = None
        _WATCHDOG.watch(conn, deadline)
        try:
            cursor = conn.execute(sql, params)
            columns = tuple(d[0] for d in cursor.description or ())
            rows = self._fetch(cursor, len(columns), cap)
        except sqlite3.OperationalError as exc:
            message = str(exc)
            if "user-defined function raised exception" in message and bounded.failure:
                message = bounded.failure
            if "authoriz" in message:
                raise QueryRefused(refusal(sql, message)) from None
            if message == "interrupted" or monotonic() > deadline:
                raise QueryTimeout(
                    f"Query timed out after {timeout:g} s and was stopped; "
                    "simplify it (add LIMIT, avoid cross joins)."
                ) from None
            if "decode" in message and not lossy:
                raise _NeedsLossyDecoding from None
            raise QueryError(describe_error(message)) from None
        except UnicodeEncodeError:
            # A lone surrogate (a JSON "\ud800" escape, an undecodable shell argument)
            # cannot be encoded for SQLite; that is the query's fault, not ours.
            raise QueryError("SQL error: the query holds characters that are not valid text; rewrite it.") from None
        except sqlite3.ProgrammingError as exc:
            if "one statement at a time" in str(exc):
                raise QueryRefused("Refused: send exactly one SQL statement per call.") from None
            raise QueryError(str(exc)) from None
        except sqlite3.DatabaseError as exc:
            message = str(exc)
            if "authoriz" in message or "readonly" in message or "read-only" in message:
                raise QueryRefused(refusal(sql, message)) from None
            raise QueryError(describe_error(message)) from None
        finally:
            if cursor is not None:
                cursor.close()
            _WATCHDOG.done(conn)
            conn.set_progress_handler(None, 0)
            conn.text_factory = str
            bounded.deadline = None
        truncated = len(rows) > cap
        if truncated:
            del rows[cap:]
        return QueryResult(columns, rows, truncated, time.perf_counter() - start)


    def _fetch(self, cursor: sqlite3.Cursor, width: int, cap: int) -> list[tuple[Any, ...]]:
        """Up to ``cap + 1`` rows, whose values take at most ``max_result_bytes``.

        Rows come in batches no larger than what the remaining budget could hold were
        every value as long as SQLite allows, so memory never passes twice the budget
        (plus one row) before the check refuses the result.
        """
        budget = self.config.max_result_bytes
        widest_row = max(1, width) * self.config.max_value_bytes
        rows: list[tuple[Any, ...]] = []
        while True:
            wanted = max(1, min(1_024, budget // widest_row, cap + 1 - len(rows)))
            batch = cursor.fetchmany(wanted)
            # The values' serialised size, measured in C (a third of a Python loop's cost).
            budget -= len(marshal.dumps(batch))
            if budget < 0:
                raise QueryTooLarge(
                    f"SQL error: the result is larger than {self.config.max_result_bytes:,} bytes; "
                    "select fewer rows or smaller values."
                )
            rows += batch
            if len(batch) < wanted or len(rows) > cap:
                return rows


class _NeedsLossyDecoding(Exception):
    """Internal: the fast path met text that is not UTF-8."""


# Table-valued functions that only read; connected up front (see below).
_READING_TABLE_FUNCTIONS = ("json_each('[]')", "json_tree('[]')", "dbstat")


def _connect_virtual_tables(conn: sqlite3.Connection) -> None:
    """Connect the reading table-valued functions and the file's own virtual tables
    before the authorizer is set.

    SQLite declares a virtual table's columns by compiling a ``CREATE TABLE`` as it
    first connects it, which the authorizer sees as a write to ``sqlite_master`` and
    refuses ("vtable constructor failed"). Connected once, the table stays connected for
    the connection's life. These statements are ours, on a connection that is already
    ``mode=ro`` and ``query_only``; a module SQLite lacks is left to fail when used.
    """
    try:
        rows = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'"
        ).fetchall()
    except sqlite3.DatabaseError:
        rows = []  # not a database: Database() says so with a clear message
    for source in (*_READING_TABLE_FUNCTIONS, *(quote_identifier(str(name)) for (name,) in rows)):
        try:
            conn.execute(f"SELECT 1 FROM {source} LIMIT 0").fetchall()
        except sqlite3.Error:
            continue
