"""Query results kept on disk, keyed by (database content hash, SQL text, row cap).

``sqlscout score`` keeps every gold result here, so scoring the same benchmark again
runs only the predictions (and, when asked, keeps prediction results too). The store is
one SQLite file (WAL mode: many worker processes read while one writes, and a worker
writes a whole batch in one transaction). A result is stored with ``marshal``: SQLite's
values (None, int, float, str, bytes) round-trip exactly, loading is fast, and unlike
pickle nothing in an entry can run code. Marshal's format belongs to the Python version,
which is part of the file name.

Not cached: a query that timed out (a longer deadline may finish it), and a query whose
result may change between runs on the same bytes (``random()``, ``'now'``,
``CURRENT_TIMESTAMP``...). Content hashes of database files are remembered by (path,
size, mtime), so a large database is read through once, not on every run.

>>> import tempfile
>>> from sqlscout.scoring import ExecResult
>>> cache = ResultCache(tempfile.mkdtemp())
>>> cache.put_many([("abc", "SELECT 1", ExecResult(("1",), [(1,)]))])
>>> cache.get("abc", "SELECT 1").rows, cache.get("abc", "SELECT 2")
([(1,)], None)
"""

from __future__ import annotations

import hashlib
import marshal
import os
import re
import sqlite3
import sys
from pathlib import Path
from typing import Iterable

from sqlscout.data.conditions import content_hash
from sqlscout.scoring import ExecResult

__all__ = ["ResultCache", "cacheable"]

_FORMAT = 1
_VOLATILE = re.compile(r"\brandom(?:blob)?\s*\(|'now'|\bcurrent_(?:date|time|timestamp)\b|\bchanges\s*\(|\blast_insert_rowid\b", re.I)


def cacheable(sql: str) -> bool:
    """Whether a query's result depends only on the database's bytes.

    >>> cacheable("SELECT name FROM t"), cacheable("SELECT * FROM t ORDER BY random()"), cacheable("SELECT date('now')")
    (True, False, False)
    """
    return not _VOLATILE.search(sql)


class ResultCache:
    """Cached query results under ``root`` (``results-py3.11.sqlite``)."""

    def __init__(self, root: str | os.PathLike[str], *, max_rows: int = 1_000_000) -> None:
        self.root = Path(root).expanduser()
        self.max_rows = max_rows
        self.path = self.root / f"results-py{sys.version_info.major}.{sys.version_info.minor}.sqlite"
        self._conn: sqlite3.Connection | None = None

    def __getstate__(self) -> dict:
        # Sent to worker processes without its connection; each opens its own.
        return {**self.__dict__, "_conn": None}

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self.root.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            try:
                conn.execute("PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError:
                pass  # a file system without shared memory: plain journal, still correct
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("CREATE TABLE IF NOT EXISTS results (key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID")
            conn.execute("CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, stamp TEXT NOT NULL, digest TEXT NOT NULL)")
            self._conn = conn
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _key(self, db_hash: str, sql: str) -> bytes:
        return hashlib.sha256(f"{_FORMAT}\0{db_hash}\0{self.max_rows}\0{sql}".encode("utf-8", "surrogatepass")).digest()

    def get(self, db_hash: str, sql: str) -> ExecResult | None:
        row = self._connection().execute("SELECT value FROM results WHERE key = ?", (self._key(db_hash, sql),)).fetchone()
        if row is None:
            return None
        try:
            columns, rows, error = marshal.loads(row[0])
        except (ValueError, EOFError, TypeError):
            return None  # a damaged entry is recomputed and overwritten
        return ExecResult(tuple(columns), rows, error)

    def put_many(self, entries: Iterable[tuple[str, str, ExecResult]]) -> None:
        """Store (db hash, SQL, result) entries in one transaction, skipping what must not be cached."""
        values = []
        for db_hash, sql, result in entries:
            if result.timed_out or not cacheable(sql):
                continue
            try:
                blob = marshal.dumps((list(result.columns), result.rows, result.error))
            except ValueError:
                continue  # a value marshal cannot hold: leave it uncached
            values.append((self._key(db_hash, sql), blob))
        if not values:
            return
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR REPLACE INTO results (key, value) VALUES (?, ?)", values)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def database_hash(self, db_path: str | os.PathLike[str]) -> str:
        """The sha256 of a database file, remembered by (path, size, mtime)."""
        path = Path(db_path).resolve()
        stat = path.stat()
        stamp = f"{stat.st_size}:{stat.st_mtime_ns}"
        conn = self._connection()
        row = conn.execute("SELECT stamp, digest FROM files WHERE path = ?", (str(path),)).fetchone()
        if row is not None and row[0] == stamp:
            return str(row[1])
        digest = content_hash(path)
        conn.execute("INSERT OR REPLACE INTO files (path, stamp, digest) VALUES (?, ?, ?)", (str(path), stamp, digest))
        return digest
