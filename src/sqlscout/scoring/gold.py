"""Gold results, computed once: the one gold-result cache of the project.

A gold query's result is the same for every sample of a question, every GRPO group that
draws the question again, and every run on the same database bytes. :class:`GoldResults`
runs each (database file, gold SQL) once, keeps the result in memory (least recently
used evicted first; results too big to keep are recomputed when asked again), and reads
and writes a disk cache when given one — the :class:`~sqlscout.scoring.result_cache.ResultCache`
that ``sqlscout score`` and ``sqlscout eval`` share. The evaluator, the trainer's reward
and the batch scorer all get gold results here.

>>> from sqlscout.env.sandbox import Database
>>> golds = GoldResults()
>>> db = Database("src/sqlscout/data/chinook/Chinook_Sqlite.sqlite")
>>> result, source = golds.get(db, "SELECT COUNT(*) FROM Genre")
>>> result.rows, source
([(25,)], 'ran')
>>> golds.get(db, "SELECT COUNT(*) FROM Genre")[1]
'repeated'
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Callable, Literal, Protocol

from sqlscout.env.sandbox import Database
from sqlscout.scoring.result_cache import ResultCache
from sqlscout.scoring.verdict import ExecResult, execute_for_scoring

__all__ = ["GoldResults", "GoldSource", "GoldStore"]

# Where a gold result came from: run now, read from the disk cache, or already in memory.
GoldSource = Literal["ran", "cached", "repeated"]


class GoldStore(Protocol):
    """The disk results of one database (a :class:`~sqlscout.scoring.result_cache.ResultBundle`)."""

    def get(self, sql: str) -> ExecResult | None: ...

    def put(self, sql: str, result: ExecResult) -> None: ...

    def flush(self) -> None: ...


class GoldResults:
    """Gold results by (database file, SQL), over an optional disk store.

    Args:
        store: the disk results of a database file, or None to keep results in memory
            only (see :meth:`over_cache` for the shared on-disk cache).
        max_entries: results kept in memory; the least recently used goes first.
        max_cells: a result of more cells than this is not kept in memory.
        write_through: write each new result to disk at once (a long run that may be
            killed), instead of when :meth:`flush` is called.
    """

    def __init__(
        self,
        store: Callable[[Path], GoldStore | None] | None = None,
        *,
        max_entries: int = 4096,
        max_cells: int = 50_000,
        write_through: bool = False,
    ) -> None:
        self._store = store
        self.max_entries = max_entries
        self.max_cells = max_cells
        self.write_through = write_through
        self._memo: OrderedDict[tuple[Path, str], ExecResult] = OrderedDict()
        self._stores: dict[Path, GoldStore | None] = {}

    @classmethod
    def over_cache(
        cls, cache: ResultCache, *, max_entries: int = 4096, max_cells: int = 50_000, write_through: bool = False
    ) -> GoldResults:
        """Gold results kept in ``cache``, by each database's content hash."""

        def store(path: Path) -> GoldStore:
            return cache.results(cache.database_hash(path))

        return cls(store, max_entries=max_entries, max_cells=max_cells, write_through=write_through)

    def get(
        self, db: Database, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None
    ) -> tuple[ExecResult, GoldSource]:
        """The result of gold query ``sql`` on ``db``, and where it came from."""
        key = (db.path, sql)
        known = self._memo.get(key)
        if known is not None:
            self._memo.move_to_end(key)
            return known, "repeated"
        store = self._store_for(db.path)
        result = store.get(sql) if store is not None else None
        source: GoldSource = "cached"
        if result is None:
            result = execute_for_scoring(db, sql, timeout_s=timeout_s, max_rows=max_rows)
            source = "ran"
            if store is not None:
                store.put(sql, result)
                if self.write_through:
                    store.flush()
        if _cells(result) <= self.max_cells:
            self._memo[key] = result
            while len(self._memo) > self.max_entries:
                self._memo.popitem(last=False)
        return result, source

    def flush(self) -> None:
        """Write what is pending to the disk store."""
        for store in self._stores.values():
            if store is not None:
                store.flush()

    def _store_for(self, path: Path) -> GoldStore | None:
        if self._store is None or (isinstance(path, str) and "://" in path):
            return None  # a server's database has no file to key a disk cache on
        if path not in self._stores:
            self._stores[path] = self._store(path)
        return self._stores[path]


def _cells(result: ExecResult) -> int:
    rows = result.rows or ()
    return len(rows) * len(rows[0]) if rows else 0
