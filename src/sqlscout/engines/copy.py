"""Copying a SQLite database into another engine, and its benchmark's gold SQL with it.

``sqlscout copy SRC.sqlite DEST_URL`` creates every table of the SQLite file in the
destination (DuckDB file or PostgreSQL database) with its columns, primary key and foreign
keys, and copies the rows. SQLite types a value, not a column, so each column's type
comes from the values it holds: whole numbers become ``BIGINT``, other numbers ``DOUBLE
PRECISION``, anything else ``TEXT`` (``BLOB`` stays binary). PostgreSQL folds unquoted names
to lower case, so there every name is created in lower case: a query that names
``singer.Name`` finds ``singer.name`` as it finds it in SQLite.

:func:`transpile_gold` writes a gold query in the destination's dialect with sqlglot, and
:func:`check_golds` runs each transpiled gold against the copy and each original against
the SQLite file: where the results differ, the gold is listed with the reason.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from sqlscout.engines.url import DatabaseURL
from sqlscout.env.schema import SQLITE_INTERNAL_TABLES, quote_identifier
from sqlscout.errors import ConfigError, DatabaseError

__all__ = ["CopyReport", "GoldCheck", "check_golds", "copy_database", "ensure_database", "transpile_gold"]

_BATCH = 1_000


@dataclass
class CopyReport:
    tables: int
    rows: int
    foreign_keys: int
    skipped_foreign_keys: list[str]


@dataclass
class GoldCheck:
    """One gold query on both engines."""

    question_id: str
    db_id: str
    sql: str
    transpiled: str | None
    ok: bool
    reason: str | None = None


def copy_database(source: str | Path, dest: str, *, replace: bool = False, progress: Callable[[str], None] | None = None) -> CopyReport:
    """Copy the SQLite file ``source`` into the database ``dest`` names (a DuckDB or
    PostgreSQL URL); ``replace`` drops tables of the same names first."""
    url = DatabaseURL.parse(dest)
    source = Path(source).expanduser()
    if not source.is_file():
        raise ConfigError(f"{source}: no such SQLite file")
    src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    try:
        tables = _sqlite_tables(src)
        writer = _writer(url)
        try:
            return _copy(src, tables, writer, url.engine, replace, progress)
        except (sqlite3.Error, DatabaseError):
            raise
        except Exception as exc:  # noqa: BLE001 - the destination engine's error, in one line
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            hint = "; copy into an empty database, or pass --replace" if "exist" in first.lower() else ""
            raise DatabaseError(f"{url.redacted()}: the copy failed ({first}){hint}") from None
        finally:
            writer.close()
    finally:
        src.close()


def ensure_database(url: DatabaseURL) -> None:
    """Create the PostgreSQL database ``url`` names when it does not exist (connected to
    the server's ``postgres`` database with the same credentials); a DuckDB file is made
    by the copy itself."""
    if url.engine == "mysql":
        import pymysql

        from sqlscout.engines.mysql import connect_args

        try:
            with pymysql.connect(**connect_args(url, None)) as conn, conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE IF NOT EXISTS `{url.database}`")
        except pymysql.Error as exc:
            raise DatabaseError(f"{url.redacted()}: cannot create the database ({exc.args[-1] if exc.args else exc})") from None
        return
    if url.engine != "postgresql":
        return
    import psycopg

    from sqlscout.engines.postgres import connect_args

    try:
        with psycopg.connect(**connect_args(url, "postgres"), autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (url.database,)).fetchone()
            if not exists:
                conn.execute(f"CREATE DATABASE {quote_identifier(url.database)}")
    except psycopg.Error as exc:
        raise DatabaseError(f"{url.redacted()}: cannot create the database ({str(exc).strip().splitlines()[0]})") from None


def transpile_gold(sql: str, engine: str, names: set[str] | None = None, text_columns: set[str] | None = None) -> str:
    """``sql`` (SQLite) written in ``engine``'s dialect, with what SQLite alone accepts made
    explicit: a double-quoted word that names no table or column (``"France"``) is the
    string SQLite reads it as, and a grouped query's plain selected columns join its
    ``GROUP BY`` (SQLite takes any row's value; the others refuse the query). On
    PostgreSQL and MySQL every name is lower case, as the copy made them. ``names``:
    the database's table and column names, lower case. ``text_columns``: the names of the
    copy's text columns: a number compared with one is compared as text, as SQLite's
    affinity rule does, and one summed or averaged is read as a number, as SQLite reads it;
    ``LIKE`` is case-insensitive in SQLite, so elsewhere it is ``ILIKE``."""
    import sqlglot
    from sqlglot import exp

    dialect = {"postgresql": "postgres", "duckdb": "duckdb", "mysql": "mysql"}[engine]
    tree = sqlglot.parse_one(sql, read="sqlite")
    if names is not None:
        for column in list(tree.find_all(exp.Column)):
            ident = column.this
            if (
                isinstance(ident, exp.Identifier)
                and ident.quoted
                and not column.table
                and ident.name.lower() not in names
            ):
                column.replace(exp.Literal.string(ident.name))
    if isinstance(tree, exp.Select):
        tree = _bare_columns_from_the_extreme_row(tree)
    for select in tree.find_all(exp.Select):
        group = select.args.get("group")
        if group is None:
            continue
        grouped = {g.sql().lower() for g in group.expressions}
        for item in select.expressions:
            target = item.this if isinstance(item, exp.Alias) else item
            if isinstance(target, exp.Column) and target.sql().lower() not in grouped:
                group.append("expressions", target.copy())
                grouped.add(target.sql().lower())
        order = select.args.get("order")
        for ordered in order.expressions if order is not None else []:
            target = ordered.this
            if isinstance(target, exp.Column) and target.sql().lower() not in grouped and not _is_alias(select, target):
                group.append("expressions", target.copy())
                grouped.add(target.sql().lower())
    if text_columns:
        comparisons = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
        for node in list(tree.find_all(*comparisons)):
            left, right = node.this, node.expression
            for column, literal in ((left, right), (right, left)):
                if (
                    isinstance(column, exp.Column)
                    and column.name.lower() in text_columns
                    and isinstance(literal, exp.Literal)
                    and not literal.is_string
                ):
                    literal.replace(exp.Literal.string(literal.name))
        for agg in list(tree.find_all(exp.Avg, exp.Sum)):
            if isinstance(agg.this, exp.Column) and agg.this.name.lower() in text_columns:
                agg.this.replace(_as_sqlite_number(agg.this.copy(), dialect))
    for like in list(tree.find_all(exp.Like)):  # SQLite's LIKE ignores case; theirs does not
        if engine == "mysql":  # no ILIKE; the copy's columns compare case by case
            like.replace(exp.Like(this=exp.Lower(this=like.this.copy()), expression=exp.Lower(this=like.expression.copy())))
        else:
            like.replace(exp.ILike(this=like.this, expression=like.expression))
    if engine in ("postgresql", "mysql"):
        for node in tree.find_all(exp.Identifier):
            node.set("this", node.name.lower())
            node.set("quoted", not node.name.isidentifier() or node.name.upper() in _PG_RESERVED)
    return tree.sql(dialect=dialect)


def _bare_columns_from_the_extreme_row(select: Any) -> Any:
    """SQLite's bare columns beside one ``min``/``max``: ``SELECT max(capacity), average
    FROM stadium`` reads ``average`` from the row holding the maximum (per group with a
    GROUP BY), which the other engines refuse. Written for them: the aggregates as window
    functions over the group, and only the row that comes first in the aggregate's order.
    Left as it is where the query has more than that one MIN/MAX, a HAVING, an ORDER BY, a
    LIMIT or DISTINCT (then SQLite's row is any row, and no rewrite can name it)."""
    from sqlglot import exp

    if any(select.args.get(k) for k in ("having", "order", "limit", "offset", "distinct")):
        return select
    group = select.args.get("group")
    keys = [g.copy() for g in group.expressions] if group is not None else []
    grouped = {k.sql().lower() for k in keys}
    items = [item.this if isinstance(item, exp.Alias) else item for item in select.expressions]
    extremes = [a for item in items for a in item.find_all(exp.Max, exp.Min)]
    aggregates = [a for item in items for a in item.find_all(exp.AggFunc)]
    bare = [i for i in items if isinstance(i, exp.Column) and i.sql().lower() not in grouped]
    if len(extremes) != 1 or not bare or not aggregates:
        return select
    extreme = extremes[0]
    inner = select.copy()
    inner.set("group", None)
    for aggregate in list(inner.find_all(exp.AggFunc)):
        aggregate.replace(exp.Window(this=aggregate.copy(), partition_by=[k.copy() for k in keys]))
    order = exp.Ordered(this=extreme.this.copy(), desc=isinstance(extreme, exp.Max), nulls_first=False)
    rank = exp.Window(this=exp.RowNumber(), partition_by=[k.copy() for k in keys], order=exp.Order(expressions=[order]))
    names = []
    for number, item in enumerate(inner.expressions):
        name = f"sqlscout_c{number}"
        item.replace(exp.alias_(item.this.copy() if isinstance(item, exp.Alias) else item.copy(), name))
        names.append(name)
    inner.append("expressions", exp.alias_(rank, "sqlscout_rank"))
    outer = exp.select(*names).from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("sqlscout_t"))))
    return outer.where("sqlscout_rank = 1")


# A text's number as SQLite reads it for arithmetic: its leading number ('1988-04-30' is
# 1988), else 0 ('null' is 0); NULL stays NULL. MySQL's CAST already reads text so.
_SQLITE_NUMBER = {
    "duckdb": "CASE WHEN x IS NULL THEN NULL ELSE COALESCE(TRY_CAST(NULLIF(regexp_extract(CAST(x AS VARCHAR), "
    "'^\\s*[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?', 0), '') AS DOUBLE), 0) END",
    "postgres": "CASE WHEN x IS NULL THEN NULL ELSE COALESCE(CAST(substring(CAST(x AS TEXT) FROM "
    "'^\\s*[-+]?(?:[0-9]+\\.?[0-9]*|\\.[0-9]+)(?:[eE][-+]?[0-9]+)?') AS DOUBLE PRECISION), 0) END",
    "mysql": "CAST(x AS DOUBLE)",
}


def _as_sqlite_number(column: Any, dialect: str) -> Any:
    import sqlglot
    from sqlglot import exp

    template = sqlglot.parse_one(_SQLITE_NUMBER[dialect], read=dialect)
    for placeholder in list(template.find_all(exp.Column)):
        if placeholder.name == "x":
            placeholder.replace(column.copy())
    return template


def _is_alias(select: Any, column: Any) -> bool:
    from sqlglot import exp

    aliases = {a.alias.lower() for a in select.expressions if isinstance(a, exp.Alias)}
    return not column.table and column.name.lower() in aliases


_PG_RESERVED = {"ORDER", "GROUP", "USER", "TABLE", "SELECT", "FROM", "WHERE", "LIMIT", "OFFSET", "DESC", "ASC", "TO", "END", "DO", "CAST", "DEFAULT", "CHECK", "COLUMN", "REFERENCES", "PRIMARY", "UNIQUE"}


def check_golds(
    items: Iterable[tuple[str, str, str]],
    sqlite_db: Any,
    other_db: Any,
    engine: str,
    *,
    compare: Callable[[Any, Any], bool] | None = None,
) -> list[GoldCheck]:
    """Each ``(question id, db id, gold SQL)``: the original on SQLite, the transpiled on
    the other engine, compared as sets of rows (BIRD mini-dev's rule on those engines)."""
    from sqlscout.errors import QueryError

    results: list[GoldCheck] = []
    schema = sqlite_db.schema
    names = {t.name.lower() for t in schema.tables} | {c.name.lower() for t in schema.tables for c in t.columns}
    text, numeric = set(), set()
    for table in other_db.schema.tables:
        for column in table.columns:
            (text if column.type.lower() in ("text", "varchar", "character varying") else numeric).add(column.name.lower())
    for qid, db_id, sql in items:
        try:
            written = transpile_gold(sql, engine, names, text - numeric)
        except Exception as exc:  # noqa: BLE001 - sqlglot's errors name the construct
            results.append(GoldCheck(qid, db_id, sql, None, False, f"does not transpile: {str(exc).splitlines()[0]}"))
            continue
        try:
            want = sqlite_db.execute(sql, max_rows=1_000_000).rows
        except QueryError as exc:
            results.append(GoldCheck(qid, db_id, sql, written, False, f"fails on SQLite: {exc}"))
            continue
        try:
            got = other_db.execute(written, max_rows=1_000_000).rows
        except QueryError as exc:
            results.append(GoldCheck(qid, db_id, sql, written, False, f"fails on {engine}: {exc}"))
            continue
        same = compare(got, want) if compare is not None else _same_set(got, want)
        why = None if same else "different result"
        if not same and compare is None and _tie_broken_otherwise(sql, got, sqlite_db):
            same, why = True, None  # another row of a tie at the LIMIT: a right answer too
        elif not same and "LIMIT" in written.upper():
            why = "different result (not only a tie at the LIMIT broken another way)"
        results.append(GoldCheck(qid, db_id, sql, written, same, why))
    return results


def _tie_broken_otherwise(sql: str, got: Sequence[tuple[Any, ...]], sqlite_db: Any) -> bool:
    """Whether ``got`` (the other engine's rows of ``sql``'s ``ORDER BY ... LIMIT k``) is a
    right answer that keeps other rows of a tie than SQLite kept: SQLite breaks ties by the
    order it happens to scan in, the others by theirs, and neither is wrong. The gold query
    runs again on SQLite with its ORDER BY keys as extra columns and no LIMIT; ``got`` must
    hold the same keys, in their number, as the rows SQLite's LIMIT window holds, each row
    one that has its key."""
    from collections import Counter

    from sqlscout.errors import QueryError

    keyed = _keyed_without_limit(sql)
    if keyed is None:
        return False
    keyed_sql, n_keys, limit, offset = keyed
    try:
        rows = sqlite_db.execute(keyed_sql, max_rows=1_000_000).rows
    except QueryError:
        return False
    split = [(tuple(_plain(v) for v in r[: len(r) - n_keys]), tuple(_plain(v) for v in r[len(r) - n_keys :])) for r in rows]
    window = split[offset : offset + limit]
    if len(got) != len(window):
        return False
    wanted = Counter(key for _, key in window)
    keys_of: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for values, key in split:
        keys_of.setdefault(values, []).append(key)
    for row in got:
        key = next((k for k in keys_of.get(tuple(_plain(v) for v in row), []) if wanted[k] > 0), None)
        if key is None:
            return False
        wanted[key] -= 1
    return True


def _keyed_without_limit(sql: str) -> tuple[str, int, int, int] | None:
    """``sql`` (SQLite) with its ORDER BY expressions appended as columns and its LIMIT and
    OFFSET removed, with the number of keys, the limit and the offset; None where that
    would change the rows (DISTINCT, a compound query) or there is no such LIMIT."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except Exception:  # noqa: BLE001 - not ours to fix here
        return None
    order, limit, offset = tree.args.get("order"), tree.args.get("limit"), tree.args.get("offset")
    if not isinstance(tree, exp.Select) or order is None or limit is None or tree.args.get("distinct"):
        return None
    count = limit.expression if isinstance(limit, exp.Limit) else None
    skip = offset.expression if isinstance(offset, exp.Offset) else None
    if not (isinstance(count, exp.Literal) and count.is_int) or (skip is not None and not (isinstance(skip, exp.Literal) and skip.is_int)):
        return None
    selected = tree.expressions
    aliases = {item.alias.lower(): item.this for item in selected if isinstance(item, exp.Alias)}
    keys = []
    for ordered in order.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int and 0 < int(key.name) <= len(selected):
            chosen = selected[int(key.name) - 1]
            key = chosen.this if isinstance(chosen, exp.Alias) else chosen
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in aliases:
            key = aliases[key.name.lower()]
        keys.append(key.copy())
    keyed = tree.copy()
    keyed.set("limit", None)
    keyed.set("offset", None)
    for number, key in enumerate(keys):
        keyed.append("expressions", exp.alias_(key, f"sqlscout_key_{number}"))
    return keyed.sql(dialect="sqlite"), len(keys), int(count.name), int(skip.name) if skip is not None else 0


def _same_set(a: Sequence[tuple[Any, ...]], b: Sequence[tuple[Any, ...]]) -> bool:
    return {tuple(_plain(v) for v in row) for row in a} == {tuple(_plain(v) for v in row) for row in b}


def _plain(value: Any) -> Any:
    """A value as the comparison sees it across engines: numbers as rounded floats."""
    from decimal import Decimal

    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float, Decimal)):
        number = float(value)
        return round(number, 6) if number != int(number) else int(number)
    return value


# -- the copy -----------------------------------------------------------------------------


@dataclass
class _Table:
    name: str
    columns: list[tuple[str, str]]  # (name, type in the destination)
    primary: list[str]
    foreign: list[tuple[str, str, str]]  # (column, referenced table, referenced column)


def _sqlite_tables(src: sqlite3.Connection) -> list[_Table]:
    names = [r[0] for r in src.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
    names = [n for n in names if n not in SQLITE_INTERNAL_TABLES]
    tables = []
    for name in names:
        info = src.execute(f"PRAGMA table_info({quote_identifier(name)})").fetchall()
        columns = [(str(r[1]), _column_type(src, name, str(r[1]), str(r[2] or ""))) for r in info]
        primary = [str(r[1]) for r in sorted(info, key=lambda r: r[5]) if r[5]]
        foreign = []
        for row in src.execute(f"PRAGMA foreign_key_list({quote_identifier(name)})").fetchall():
            foreign.append((str(row[3]), str(row[2]), str(row[4]) if row[4] is not None else ""))
        tables.append(_Table(name, columns, primary, foreign))
    return tables


def _column_type(src: sqlite3.Connection, table: str, column: str, declared: str) -> str:
    """The destination type that holds every value of the column as SQLite stores it."""
    col, tab = quote_identifier(column), quote_identifier(table)
    kinds = {r[0] for r in src.execute(f"SELECT DISTINCT typeof({col}) FROM {tab}")} - {"null"}
    if kinds == {"blob"}:
        return "BLOB"
    if kinds <= {"integer"}:
        if kinds or "INT" in declared.upper():
            too_big = src.execute(f"SELECT COUNT(*) FROM {tab} WHERE abs({col}) > 9223372036854775807").fetchone()[0]
            return "BIGINT" if not too_big else "DOUBLE"
        return "DOUBLE" if any(t in declared.upper() for t in ("REAL", "FLOA", "DOUB", "NUM", "DEC")) else "TEXT"
    if kinds <= {"integer", "real"}:
        return "DOUBLE"
    numeric = any(t in declared.upper() for t in ("INT", "REAL", "FLOA", "DOUB", "NUM", "DEC"))
    if numeric and _fits(src, table, column, "BIGINT"):
        return "BIGINT"
    if numeric and _fits(src, table, column, "DOUBLE"):
        return "DOUBLE"
    return "TEXT"


class _Writer:
    def __init__(self, conn: Any, engine: str, collation: str = "") -> None:
        self.conn, self.engine, self.collation = conn, engine, collation

    def name(self, text: str) -> str:
        return quote_identifier(text.lower() if self.engine in ("postgresql", "mysql") else text)

    def type(self, kind: str, key: bool = False) -> str:
        if self.engine == "postgresql":
            return {"DOUBLE": "DOUBLE PRECISION", "BLOB": "BYTEA"}.get(kind, kind)
        if self.engine == "mysql" and kind == "TEXT":
            # A key of MySQL's needs a bounded length; a binary, no-pad collation compares
            # as SQLite does (case matters, a trailing space matters).
            return ("VARCHAR(255)" if key else "TEXT") + f" COLLATE {self.collation}"
        return kind

    def run(self, sql: str, rows: Sequence[Sequence[Any]] | None = None) -> None:
        cur = self.conn.cursor()
        if rows is None:
            cur.execute(sql)
        else:
            cur.executemany(sql, rows)

    def placeholder(self) -> str:
        return "%s" if self.engine in ("postgresql", "mysql") else "?"

    def comment(self, table: str, text: str) -> None:
        if self.engine == "mysql":
            self.run(f"ALTER TABLE {self.name(table)} COMMENT = '{text}'")
        else:
            self.run(f"COMMENT ON TABLE {self.name(table)} IS '{text}'")

    def commit(self) -> None:
        if self.engine in ("postgresql", "mysql"):
            self.conn.commit()

    def rollback(self) -> None:
        if self.engine in ("postgresql", "mysql"):
            self.conn.rollback()

    def close(self) -> None:
        if self.engine in ("postgresql", "mysql"):
            self.conn.commit()
        self.conn.close()


def _writer(url: DatabaseURL) -> _Writer:
    if url.engine == "duckdb":
        import duckdb

        path = Path(url.path or "").expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        return _Writer(duckdb.connect(str(path)), "duckdb")
    if url.engine == "postgresql":
        import psycopg

        from sqlscout.engines.postgres import connect_args

        try:
            conn = psycopg.connect(**connect_args(url))
        except psycopg.Error as exc:
            raise DatabaseError(f"{url.redacted()}: cannot connect to copy into it ({str(exc).strip().splitlines()[0]})") from None
        return _Writer(conn, "postgresql")
    if url.engine == "mysql":
        import pymysql

        from sqlscout.engines.mysql import connect_args

        try:
            conn = pymysql.connect(**connect_args(url))
        except pymysql.Error as exc:
            raise DatabaseError(f"{url.redacted()}: cannot connect to copy into it ({exc.args[-1] if exc.args else exc})") from None
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, ',ANSI_QUOTES')")
            cur.execute("SET SESSION FOREIGN_KEY_CHECKS = 0")  # keys SQLite never checked are not checked now
            cur.execute("SELECT VERSION()")
            mariadb = "mariadb" in str(cur.fetchone()[0]).lower()
        return _Writer(conn, "mysql", "utf8mb4_nopad_bin" if mariadb else "utf8mb4_0900_bin")
    raise ConfigError(f"{url.redacted()}: copying into {url.engine} is not supported; use a duckdb://, postgresql:// or mysql:// URL")


def _copy(
    src: sqlite3.Connection, tables: list[_Table], writer: _Writer, engine: str, replace: bool,
    progress: Callable[[str], None] | None,
) -> CopyReport:  # fmt: skip
    keys, skipped = _keys(src, tables, engine)
    if replace:
        for table in reversed(_parents_first(tables, keys)):
            writer.run(f"DROP TABLE IF EXISTS {writer.name(table.name)}" + (" CASCADE" if engine == "postgresql" else ""))
    rows_copied = 0
    position = {t.name: i for i, t in enumerate(tables)}
    for table in _parents_first(tables, keys):
        keyed = set(table.primary) | {c for t, c, _, _ in keys if t == table.name} | {rc for _, _, r, rc in keys if r == table.name}
        lines = [f"{writer.name(c)} {writer.type(t, c in keyed)}" for c, t in table.columns]
        if table.primary and _unique(src, table):
            lines.append(f"PRIMARY KEY ({', '.join(writer.name(c) for c in table.primary)})")
        if engine == "duckdb":  # DuckDB takes foreign keys only in CREATE TABLE
            lines += [
                f"FOREIGN KEY ({writer.name(c)}) REFERENCES {writer.name(ref)} ({writer.name(rc)})"
                for t, c, ref, rc in keys if t == table.name
            ]  # fmt: skip
        writer.run(f"CREATE TABLE {writer.name(table.name)} ({', '.join(lines)})")
        # The catalogue lists tables in this order, the SQLite file's (creation follows the keys).
        writer.comment(table.name, f"sqlscout copy: position {position[table.name] + 1}")
        names = ", ".join(writer.name(c) for c, _ in table.columns)
        marks = ", ".join(writer.placeholder() for _ in table.columns)
        insert = f"INSERT INTO {writer.name(table.name)} ({names}) VALUES ({marks})"
        cursor = src.execute(f"SELECT {', '.join(quote_identifier(c) for c, _ in table.columns)} FROM {quote_identifier(table.name)}")
        kinds = [t for _, t in table.columns]
        while batch := cursor.fetchmany(_BATCH):
            writer.run(insert, [tuple(_cast(v, k) for v, k in zip(row, kinds)) for row in batch])
            rows_copied += len(batch)
        if progress is not None:
            progress(table.name)
    writer.commit()
    made = len(keys) if engine == "duckdb" else 0
    if engine in ("postgresql", "mysql"):  # the rows SQLite never checked are not checked now
        for t, c, ref, rc in keys:
            try:
                writer.run(
                    f"ALTER TABLE {writer.name(t)} ADD FOREIGN KEY ({writer.name(c)}) "
                    f"REFERENCES {writer.name(ref)} ({writer.name(rc)})" + (" NOT VALID" if engine == "postgresql" else "")
                )
                writer.commit()
                made += 1
            except Exception:  # noqa: BLE001 - a key the engine refuses is listed, not fatal
                writer.rollback()
                skipped.append(f"{t}.{c} -> {ref}.{rc}")
    return CopyReport(len(tables), rows_copied, made, skipped)


def _keys(src: sqlite3.Connection, tables: list[_Table], engine: str) -> tuple[list[tuple[str, str, str, str]], list[str]]:
    """The foreign keys the destination can hold, ``(table, column, referenced table,
    referenced column)``, and the others as text. A key must reference its table's whole,
    unique primary key; a referencing column whose values all fit the referenced column's
    type takes that type (SQLite compares ``'1'`` with ``1`` by affinity; the others do not);
    DuckDB also refuses a value with no referenced row."""
    by_lower = {t.name.lower(): t for t in tables}
    keys: list[tuple[str, str, str, str]] = []
    skipped: list[str] = []
    for table in tables:
        for column, ref, ref_column in table.foreign:
            target = by_lower.get(ref.lower())
            target_col = next((c for c, _ in target.columns if c.lower() == ref_column.lower()), "") if target else ""
            if target is not None and not target_col and len(target.primary) == 1:
                target_col = target.primary[0]
            shown = f"{table.name}.{column} -> {ref}.{ref_column or target_col}"
            own = next((c for c, _ in table.columns if c.lower() == column.lower()), None)
            if target is None or own is None or target.primary != [target_col] or not _unique(src, target):
                skipped.append(shown)
                continue
            want = dict(target.columns)[target_col]
            have = dict(table.columns)[own]
            if have != want and not _fits(src, table.name, own, want):
                skipped.append(shown)
                continue
            table.columns = [(c, want if c == own else t) for c, t in table.columns]
            if engine == "duckdb" and _dangling(src, table.name, own, target.name, target_col):
                skipped.append(shown)
                continue
            keys.append((table.name, own, target.name, target_col))
    return keys, skipped


def _fits(src: sqlite3.Connection, table: str, column: str, kind: str) -> bool:
    col, tab = quote_identifier(column), quote_identifier(table)
    blank = f"(typeof({col}) = 'text' AND trim({col}) = '')"  # copied as NULL
    if kind == "BIGINT":
        test = f"NOT (typeof({col}) = 'integer' OR {blank} OR (typeof({col}) = 'text' AND CAST(CAST({col} AS INTEGER) AS TEXT) = trim({col})))"
    elif kind == "DOUBLE":
        number = f"(typeof({col}) = 'text' AND trim({col}) NOT GLOB '*[^0-9.eE+-]*' AND typeof(CAST(trim({col}) AS NUMERIC)) IN ('integer', 'real'))"
        test = f"NOT (typeof({col}) IN ('integer', 'real') OR {blank} OR {number})"
    else:
        return kind == "TEXT"
    return src.execute(f"SELECT COUNT(*) FROM {tab} WHERE {col} IS NOT NULL AND {test}").fetchone()[0] == 0


def _dangling(src: sqlite3.Connection, table: str, column: str, ref: str, ref_column: str) -> bool:
    col, rc = quote_identifier(column), quote_identifier(ref_column)
    sql = (
        f"SELECT COUNT(*) FROM {quote_identifier(table)} WHERE {col} IS NOT NULL "
        f"AND CAST({col} AS TEXT) NOT IN (SELECT CAST({rc} AS TEXT) FROM {quote_identifier(ref)} WHERE {rc} IS NOT NULL)"
    )
    return bool(src.execute(sql).fetchone()[0])


def _parents_first(tables: list[_Table], keys: list[tuple[str, str, str, str]]) -> list[_Table]:
    """Tables ordered so that a referenced table comes before those that reference it."""
    order: list[_Table] = []
    by_name = {t.name: t for t in tables}
    needs = {t.name: {ref for tab, _, ref, _ in keys if tab == t.name and ref != t.name} for t in tables}
    while len(order) < len(tables):
        ready = [t for t in tables if t not in order and needs[t.name] <= {o.name for o in order}]
        if not ready:  # a cycle: take the rest as they are (their keys are kept by the others)
            ready = [t for t in tables if t not in order]
        order.append(ready[0])
    return [by_name[t.name] for t in order]


def _unique(src: sqlite3.Connection, table: _Table) -> bool:
    if not table.primary:
        return False
    cols = ", ".join(quote_identifier(c) for c in table.primary)
    tab = quote_identifier(table.name)
    total = src.execute(f"SELECT COUNT(*) FROM {tab}").fetchone()[0]
    distinct = src.execute(f"SELECT COUNT(*) FROM (SELECT DISTINCT {cols} FROM {tab} WHERE {' AND '.join(f'{quote_identifier(c)} IS NOT NULL' for c in table.primary)})").fetchone()[0]
    return bool(total == distinct)


def _cast(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "TEXT" and not isinstance(value, str):
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    if kind == "BLOB" and isinstance(value, str):
        return value.encode()
    if kind == "BIGINT" and isinstance(value, str):
        return int(value) if value.strip() else None
    if kind == "DOUBLE" and isinstance(value, str):
        return float(value) if value.strip() else None
    if kind == "DOUBLE" and isinstance(value, bytes):
        return None
    return value
