"""DuckDB, in process, read-only by the engine.

Layers: the file is opened with ``read_only=True`` (DuckDB refuses every write to it);
external access is off (no file read or written by ``COPY``, ``read_csv``, ``ATTACH``,
``INSTALL``: DuckDB refuses them), extensions are neither installed nor loaded
automatically, the configuration is locked (no ``SET`` undoes any of this), spilling to
a temporary directory is off (nothing is written beside the file) and memory is capped;
a statement is checked to be one statement before it runs, runs on its own cursor, and is
interrupted when its deadline passes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlscout.engines.base import EngineDatabase, schema_from, table_from_columns
from sqlscout.env.schema import Schema, Table
from sqlscout.errors import DatabaseError, QueryError, QueryRefused, QueryTimeout

__all__ = ["DuckDBDatabase"]

_MEMORY_LIMIT = "2GB"
# How every file is opened (DuckDB refuses a second connection to a file with another configuration).
CONFIG = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "temp_directory": "",
    "memory_limit": _MEMORY_LIMIT,
    "lock_configuration": True,
}


class DuckDBDatabase(EngineDatabase):
    engine = "duckdb"
    dialect = "duckdb"
    label = "DuckDB"

    def _connect(self) -> Any:
        import duckdb

        root = getattr(self, "_root", None)
        if root is None:
            path = Path(self.url.path or "").expanduser()
            if not path.is_file():
                raise DatabaseError(f"{self.path}: no such DuckDB file; check the path after duckdb://")
            try:
                root = duckdb.connect(str(path), read_only=True, config=dict(CONFIG))
            except duckdb.Error as exc:
                raise DatabaseError(f"{self.path}: cannot open read-only ({str(exc).splitlines()[0]})") from None
            self._root = root
        return root.cursor()  # one cursor per statement at a time: DuckDB's unit of concurrency

    def _run(self, conn: Any, sql: str, timeout: float, cap: int) -> tuple[list[str], list[tuple[Any, ...]]]:
        import duckdb

        try:
            statements = duckdb.extract_statements(sql)
        except duckdb.Error as exc:
            raise QueryError(f"SQL error: {_first_line(exc)}") from None
        if len(statements) != 1:
            raise QueryRefused("Refused: send exactly one SQL statement per call.")
        timer = self._watch(timeout, conn.interrupt)
        try:
            cursor = conn.execute(sql)
            columns = [d[0] for d in cursor.description or ()]
            rows = self._fetch(cursor, cap)
        except duckdb.InterruptException:
            raise QueryTimeout(
                f"Query timed out after {timeout:g} s and was stopped; simplify it (add LIMIT, avoid cross joins)."
            ) from None
        except duckdb.PermissionException as exc:
            raise QueryRefused(f"Refused: {_first_line(exc)}") from None
        except duckdb.Error as exc:
            message = _first_line(exc)
            if "read-only" in message or "attached in read-only mode" in message or "configuration has been locked" in message:
                raise QueryRefused(f"Refused: the database is read-only ({message})") from None
            raise QueryError(f"SQL error: {message}") from None
        finally:
            timer.cancel()
        return columns, rows

    def _catalogue(self) -> Schema:
        rows = self.execute(
            "SELECT table_name, sql FROM duckdb_tables() WHERE NOT temporary "
            "ORDER BY TRY_CAST(regexp_extract(comment, 'sqlscout copy: position (\\d+)', 1) AS INTEGER) NULLS LAST, table_oid",
            max_rows=100_000,
        ).rows
        views = self.execute(
            "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal AND NOT temporary ORDER BY view_oid",
            max_rows=100_000,
        ).rows
        columns = self.execute(
            "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
            "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position",
            max_rows=1_000_000,
        ).rows
        constraints = self.execute(
            "SELECT table_name, constraint_type, constraint_column_names, referenced_table, referenced_column_names "
            "FROM duckdb_constraints() WHERE constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')",
            max_rows=1_000_000,
        ).rows
        keys = {(t, c) for t, kind, cols, _, _ in constraints if kind == "PRIMARY KEY" for c in cols}
        by_table: dict[str, list[tuple[str, str, bool, bool]]] = {}
        for table, column, kind, nullable in columns:
            by_table.setdefault(table, []).append((column, kind, (table, column) in keys, nullable == "NO"))
        tables: list[Table] = []
        for name, create in rows:
            tables.append(table_from_columns(name, by_table.get(name, []), (create or "").rstrip(";")))
        for name, create in views:
            table = table_from_columns(name, by_table.get(name, []), (create or "").rstrip(";"))
            tables.append(Table(table.name, table.create_sql, table.columns, is_view=True))
        fks = [
            (t, c, ref, rc)
            for t, kind, cols, ref, ref_cols in constraints
            if kind == "FOREIGN KEY" and ref
            for c, rc in zip(cols, ref_cols)
        ]
        return schema_from(tables, fks)

    def _close(self, conn: Any) -> None:
        conn.close()

    def close(self) -> None:
        super().close()
        root = getattr(self, "_root", None)
        if root is not None:
            root.close()
            self._root = None


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
