"""Query results kept on disk: one file per database content hash.

``sqlscout score`` keeps every gold result here, so scoring the same benchmark again
runs only the predictions (it keeps their small results too, and all of them when
asked). All results
on one database's bytes live in one file, ``results-py3.11/<sha256>-<row cap>.marshal``,
read once per run: a cached gold result then costs a dict lookup, not a query, a file
or a key hash. A result of more than ``SPILL_CELLS`` cells is written to its own file
beside it and read only when asked, so a database's file stays small and a run's memory
bounded.

Files hold ``marshal`` data: SQLite's values (None, int, float, str, bytes) round-trip
exactly, loading is fast, and unlike pickle nothing in an entry can run code. Marshal's
format belongs to the Python version, which is part of the folder name. A file is
replaced atomically (written beside, then renamed) under a lock, merged with what other
processes wrote meanwhile, so concurrent runs and worker processes never tear it; a
damaged file reads as empty and is rebuilt.

Beside each database's results: whether a cached gold query has a top-level ORDER BY,
and whether SQL that did not run parses (the *parsable* tier, kept by sqlglot's
version): both are sqlglot's answers, and asking sqlglot means importing it (a sixth
of a second), so a run whose answers are all here never loads it.

Not cached: a query that timed out (a longer deadline may finish it), one that passed a
cap on result size or memory (caps are settings), and a query whose
result may change between runs on the same bytes (``random()``, ``'now'``,
``CURRENT_TIMESTAMP``...). Content hashes of database files are remembered by (path,
size, mtime), so a large database is read through once, not on every run.

>>> import tempfile
>>> from sqlscout.scoring import ExecResult
>>> cache = ResultCache(tempfile.mkdtemp())
>>> cache.put_many([("abc", "SELECT 1", ExecResult(("1",), [(1,)]))])
>>> ResultCache(cache.root).get("abc", "SELECT 1").rows, cache.get("abc", "SELECT 2")
([(1,)], None)
"""

from __future__ import annotations

import hashlib
import marshal
import os
import re
import sys
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from sqlscout.env.dbfile import file_sha256
from sqlscout.scoring.verdict import ExecResult

__all__ = ["SPILL_CELLS", "ResultBundle", "ResultCache", "cacheable"]

_FORMAT = 4  # 4: gold results under the scoring row cap (3 held some under the sandbox's 10,000)
# A result with more cells gets a file of its own. It bounds what a database's file
# holds per query, so the file stays quick to read and to rewrite (sqlscout eval adds
# gold results one by one, rewriting it each time).
SPILL_CELLS = 5_000
_OPEN_BUNDLES = 4  # databases' results held in memory at once, per process
_PARSED_MAX = 20_000  # parse verdicts kept per database (they are a few bytes each)
_VOLATILE_WORDS = ("random", "now", "current_", "changes", "last_insert_rowid")  # what _VOLATILE needs
_VOLATILE = re.compile(r"\brandom(?:blob)?\s*\(|'now'|\bcurrent_(?:date|time|timestamp)\b|\bchanges\s*\(|\blast_insert_rowid\b", re.I)

# An entry: (columns, rows, error) of a result held in the bundle, or (name,) of a
# result spilled to its own file.
_Entry = tuple[Any, ...]


def cacheable(sql: str) -> bool:
    """Whether a query's result depends only on the database's bytes.

    >>> cacheable("SELECT name FROM t"), cacheable("SELECT * FROM t ORDER BY random()"), cacheable("SELECT date('now')")
    (True, False, False)
    """
    lowered = sql.lower()
    if not any(word in lowered for word in _VOLATILE_WORDS):  # the usual case, in a fraction of the regex's time
        return True
    return not _VOLATILE.search(sql)


class ResultCache:
    """Cached query results under ``root`` (``results-py3.11/``), by database hash."""

    def __init__(self, root: str | os.PathLike[str], *, max_rows: int = 1_000_000) -> None:
        self.root = Path(root).expanduser()
        self.max_rows = max_rows
        self.folder = self.root / f"results-py{sys.version_info.major}.{sys.version_info.minor}"
        self._bundles: OrderedDict[str, ResultBundle] = OrderedDict()
        self._hashes: dict[str, tuple[str, str]] | None = None  # path -> (stamp, digest)

    def __getstate__(self) -> dict:
        # Sent to worker processes without what this process has loaded.
        return {**self.__dict__, "_bundles": OrderedDict(), "_hashes": None}

    def results(self, db_hash: str) -> ResultBundle:
        """The results kept for the database with content hash ``db_hash`` (read once)."""
        bundle = self._bundles.pop(db_hash, None)
        if bundle is None:
            bundle = ResultBundle(self, db_hash)
        self._bundles[db_hash] = bundle
        while len(self._bundles) > _OPEN_BUNDLES:
            self._bundles.popitem(last=False)[1].flush()
        return bundle

    def get(self, db_hash: str, sql: str) -> ExecResult | None:
        return self.results(db_hash).get(sql)

    def put_many(self, entries: Iterable[tuple[str, str, ExecResult]]) -> None:
        """Store (db hash, SQL, result) entries now, skipping what must not be cached."""
        touched = []
        for db_hash, sql, result in entries:
            bundle = self.results(db_hash)
            bundle.put(sql, result)
            touched.append(bundle)
        for bundle in dict.fromkeys(touched):
            bundle.flush()

    def flush(self) -> None:
        for bundle in self._bundles.values():
            bundle.flush()

    def close(self) -> None:
        """Write what is pending and forget what was loaded."""
        self.flush()
        self._bundles.clear()

    def database_hash(self, db_path: str | os.PathLike[str]) -> str:
        """The sha256 of a database file, remembered by (path, size, mtime)."""
        return self.database_hashes([db_path])[0]

    def database_hashes(self, db_paths: Sequence[str | os.PathLike[str]]) -> list[str]:
        """:meth:`database_hash` of each file; what was new is written down once."""
        if self._hashes is None:
            self._hashes = _read(self._hash_file) or {}
        digests, learnt = [], {}
        for db_path in db_paths:
            path = str(Path(db_path).resolve())
            stat = os.stat(path)
            stamp = f"{stat.st_size}:{stat.st_mtime_ns}"
            known = self._hashes.get(path)
            if known is None or known[0] != stamp:
                known = self._hashes[path] = learnt[path] = (stamp, file_sha256(path))
            digests.append(known[1])
        if learnt:
            with self._locked():
                on_disk = _read(self._hash_file) or {}
                on_disk.update(learnt)
                _write(self._hash_file, on_disk)
        return digests

    @property
    def _hash_file(self) -> Path:
        return self.folder / "files.marshal"

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialise writers of this cache across processes (reads need no lock)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / ".lock", "ab") as handle:
            try:
                import fcntl
            except ImportError:  # no flock here: renames stay atomic, a lost entry is recomputed
                yield
                return
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


class ResultBundle:
    """The cached results on one database's bytes: read from disk once, changes
    written back by :meth:`flush` (merged with what other processes wrote meanwhile)."""

    def __init__(self, cache: ResultCache, db_hash: str) -> None:
        self.cache = cache
        self.db_hash = db_hash
        self.path = cache.folder / f"{db_hash}-{cache.max_rows}.marshal"
        loaded = _read(self.path)
        self._entries: dict[str, _Entry] = loaded[1] if _valid(loaded) else {}
        # Whether a cached query has a top-level ORDER BY (what strict comparison asks
        # of a gold query), kept beside its result: working it out may mean parsing.
        self._orders: dict[str, bool] = loaded[2] if _valid(loaded) else {}
        # Whether SQL that did not run parses (the parsable tier), by sqlglot's version:
        # asking sqlglot means importing it, a sixth of a second.
        self._parsed_version: str | None = loaded[3] if _valid(loaded) else None
        self._parsed: dict[str, bool] = loaded[4] if _valid(loaded) else {}
        self._pending: dict[str, _Entry] = {}
        self._pending_orders: dict[str, bool] = {}
        self._pending_parsed: dict[str, bool] = {}
        self._spills: dict[str, bytes] = {}  # name -> marshalled result, not yet written

    def __len__(self) -> int:
        return len(self._entries)

    def held(self) -> bool:
        """Whether its cache still holds it, and so writes what it is told at the
        cache's next :meth:`ResultCache.flush` or :meth:`ResultCache.close` (a bundle
        the cache let go of was written then, and must write what it learns since)."""
        return self.cache._bundles.get(self.db_hash) is self

    def get(self, sql: str) -> ExecResult | None:
        entry = self._entries.get(sql)
        if entry is None:
            return None
        if len(entry) == 1:  # spilled to its own file
            spilled = self._spills.get(entry[0])
            entry = marshal.loads(spilled) if spilled is not None else _read(self._spill_path(entry[0]))
        if not (isinstance(entry, tuple) and len(entry) == 3):
            self._entries.pop(sql, None)  # gone or damaged: recompute
            return None
        columns, rows, error = entry
        return ExecResult(columns, rows, error)

    def top_level_order(self, sql: str) -> bool | None:
        """Whether ``sql`` has a top-level ORDER BY, if :meth:`put_order` was told."""
        return self._orders.get(sql)

    def put_order(self, sql: str, top_level_order: bool) -> None:
        """Keep whether a cached query has a top-level ORDER BY (written at the next :meth:`flush`)."""
        if sql in self._entries and self._orders.get(sql) is not top_level_order:
            self._orders[sql] = self._pending_orders[sql] = top_level_order

    def parsed(self, sql: str, version: str) -> bool | None:
        """Whether ``sql`` parses, if :meth:`put_parsed` was told under sqlglot ``version``."""
        return self._parsed.get(sql) if version == self._parsed_version else None

    def put_parsed(self, sql: str, version: str, parses: bool) -> None:
        """Keep whether ``sql`` parses under sqlglot ``version`` (written at the next
        :meth:`flush`); answers of another version are dropped."""
        if version != self._parsed_version:
            self._parsed_version, self._parsed, self._pending_parsed = version, {}, {}
        if len(self._parsed) < _PARSED_MAX and self._parsed.get(sql) is not parses:
            self._parsed[sql] = self._pending_parsed[sql] = parses

    def put(self, sql: str, result: ExecResult) -> None:
        """Keep ``result`` (written at the next :meth:`flush`), unless it must not be cached."""
        if result.timed_out or result.resource_limit or not cacheable(sql):
            return
        entry: _Entry = (tuple(result.columns), result.rows, result.error)
        rows = result.rows or ()
        if rows and len(rows) * len(rows[0]) > SPILL_CELLS:
            name = hashlib.sha256(sql.encode("utf-8", "surrogatepass")).hexdigest()[:32]
            try:
                self._spills[name] = marshal.dumps(entry)
            except ValueError:
                return  # a value marshal cannot hold: leave it uncached
            entry = (name,)
        self._entries[sql] = self._pending[sql] = entry

    def flush(self) -> None:
        """Write pending results: spilled files first, then this database's file."""
        if not self._pending and not self._pending_orders and not self._pending_parsed:
            return
        cache = self.cache
        with cache._locked():
            for name, blob in self._spills.items():
                _write_bytes(self._spill_path(name), blob)
            on_disk = _read(self.path)
            merged, orders = (on_disk[1], on_disk[2]) if _valid(on_disk) else ({}, {})
            if self._parsed_version is None and _valid(on_disk):  # nothing parsed here: keep theirs
                self._parsed_version = on_disk[3]
            version = self._parsed_version
            parsed = on_disk[4] if _valid(on_disk) and on_disk[3] == version else {}
            merged.update(self._pending)
            orders.update(self._pending_orders)
            parsed.update(self._pending_parsed)
            try:
                blob = marshal.dumps((_FORMAT, merged, orders, version, parsed))
            except ValueError:  # a value marshal cannot hold: keep the entries it can
                merged = {k: v for k, v in merged.items() if _marshals(v)}
                blob = marshal.dumps((_FORMAT, merged, orders, version, parsed))
            _write_bytes(self.path, blob)
        self._entries = {**merged, **self._entries}
        self._orders = {**orders, **self._orders}
        self._parsed = {**parsed, **self._parsed}
        self._pending.clear()
        self._pending_orders.clear()
        self._pending_parsed.clear()
        self._spills.clear()

    def _spill_path(self, name: str) -> Path:
        return self.path.with_suffix("") / f"{name}.marshal"


def _valid(loaded: Any) -> bool:
    return (
        isinstance(loaded, tuple) and len(loaded) == 5 and loaded[0] == _FORMAT
        and isinstance(loaded[1], dict) and isinstance(loaded[2], dict) and isinstance(loaded[4], dict)
    )


def _marshals(value: Any) -> bool:
    try:
        marshal.dumps(value)
    except ValueError:
        return False
    return True


def _read(path: Path) -> Any:
    """A marshalled file's value, or None when it is missing or damaged."""
    try:
        with open(path, "rb") as handle:
            return marshal.loads(handle.read())  # 2-3x faster than marshal.load(handle)
    except (OSError, ValueError, EOFError, TypeError):
        return None


def _write(path: Path, value: Any) -> None:
    _write_bytes(path, marshal.dumps(value))


def _write_bytes(path: Path, blob: bytes) -> None:
    """Write beside, then rename: a reader sees the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "wb") as handle:
        handle.write(blob)
    os.replace(temporary, path)
