"""A copy of a SQLite database holding only some of its tables.

Each kept table is created with its own ``CREATE TABLE`` text (foreign keys to dropped
tables cut out, see :mod:`sqlscout.data.ddl`) and filled with all its rows; indexes on
kept tables and views over kept tables come along; triggers do not. The result is
checked against the source before it is used: same columns (name, declared type,
nullability, default, key), same row counts, and exactly the source's foreign keys
among kept tables.

>>> import sqlite3, tempfile, os
>>> folder = tempfile.mkdtemp()
>>> src = os.path.join(folder, "src.sqlite")
>>> with sqlite3.connect(src) as c:
...     _ = c.executescript('''CREATE TABLE a (id INT PRIMARY KEY);
...         CREATE TABLE b (id INT, a_id INT REFERENCES a(id), c_id INT REFERENCES c(id));
...         CREATE TABLE c (id INT PRIMARY KEY); INSERT INTO b VALUES (1, 2, 3);''')
>>> out = build_subset(src, ["b", "a"], os.path.join(folder, "ab.sqlite"))
>>> with sqlite3.connect(out) as c:
...     c.execute("SELECT sql FROM sqlite_master WHERE name = 'b'").fetchone()[0]
'CREATE TABLE b (id INT, a_id INT REFERENCES a(id), c_id INT)'
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Sequence

from sqlscout.data.ddl import strip_foreign_keys
from sqlscout.errors import DataError
from sqlscout.env.schema import SQLITE_INTERNAL_TABLES

__all__ = ["build_subset", "table_names"]


def table_names(path: str | os.PathLike[str]) -> list[str]:
    """The database's tables in creation order (SQLite's own tables left out)."""
    with _read_only(path) as conn:
        return [r[0] for r in conn.execute(_TABLES)]


_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid"


def _read_only(path: str | os.PathLike[str]) -> sqlite3.Connection:
    return sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def build_subset(source: str | os.PathLike[str], keep: Sequence[str], target: str | os.PathLike[str]) -> Path:
    """Write ``target``: ``source`` with only the tables in ``keep`` (any case).

    The file is written aside and renamed into place, so a reader never sees half of it.
    """
    source, target = Path(source), Path(target)
    wanted = {k.lower() for k in keep}
    with _read_only(source) as src:
        objects = src.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
        ).fetchall()
    src.close()
    tables = [(name, sql) for kind, name, _, sql in objects if kind == "table" and name not in SQLITE_INTERNAL_TABLES]
    kept = [name for name, _ in tables if name.lower() in wanted]
    unknown = wanted - {k.lower() for k in kept}
    if unknown:
        raise DataError(f"{source}: no table {', '.join(sorted(unknown))} to keep.")
    dropped = {name for name, _ in tables if name.lower() not in wanted}
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, scratch = tempfile.mkstemp(prefix=".subset-", suffix=".sqlite", dir=target.parent)
    os.close(handle)
    try:
        _fill(Path(scratch), source, objects, kept, dropped)
        _verify(source, Path(scratch), kept)
        os.replace(scratch, target)
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)
    return target


def _fill(scratch: Path, source: Path, objects: list[tuple], kept: list[str], dropped: set[str]) -> None:
    from sqlscout.scoring import tables_used

    kept_lower = {k.lower() for k in kept}
    conn = sqlite3.connect(scratch, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("ATTACH DATABASE ? AS src", (f"{source.resolve().as_uri()}?mode=ro",))
        conn.execute("BEGIN")
        for kind, name, table, sql in objects:
            if kind == "table" and name in kept:
                conn.execute(strip_foreign_keys(sql, dropped))
                conn.execute(f"INSERT INTO main.{_quote(name)} SELECT * FROM src.{_quote(name)}")
            elif kind == "index" and table.lower() in kept_lower:
                conn.execute(sql)
            elif kind == "view" and tables_used(sql) <= kept_lower:
                conn.execute(sql)
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE src")
    except sqlite3.Error as exc:
        raise DataError(f"{source}: cannot copy tables {', '.join(kept)} ({exc}).") from None
    finally:
        conn.close()


def _verify(source: Path, built: Path, kept: list[str]) -> None:
    kept_lower = {k.lower() for k in kept}
    with _read_only(source) as src, _read_only(built) as out:
        for name in kept:
            q = _quote(name)
            if src.execute(f"PRAGMA table_info({q})").fetchall() != out.execute(f"PRAGMA table_info({q})").fetchall():
                raise DataError(f"{source}: table {name} changed its columns when copied.")
            expected = [fk for fk in src.execute(f"PRAGMA foreign_key_list({q})") if fk[2].lower() in kept_lower]
            got = out.execute(f"PRAGMA foreign_key_list({q})").fetchall()
            if _fk_shape(expected) != _fk_shape(got):
                raise DataError(f"{source}: table {name}'s foreign keys changed when copied ({expected} -> {got}).")
            count = f"SELECT count(*) FROM {q}"
            if src.execute(count).fetchone() != out.execute(count).fetchone():
                raise DataError(f"{source}: table {name} lost rows when copied.")
    src.close()
    out.close()


def _fk_shape(rows: list[tuple]) -> list[tuple]:
    # Constraint ids are renumbered when some are removed: compare what they say.
    return sorted(tuple(r[2:]) for r in rows)
