"""PostgreSQL through psycopg 3, read-only by the server.

Layers, each enforced by PostgreSQL itself:

- the session starts with ``default_transaction_read_only = on``, a ``statement_timeout``,
  an ``idle_in_transaction_session_timeout`` and a pinned ``search_path``;
- every statement runs in its own ``BEGIN READ ONLY`` transaction with its own
  ``SET LOCAL statement_timeout``, rolled back after it (a ``SET`` inside it goes too);
- it is sent through the extended query protocol, which takes exactly one statement, so
  ``COMMIT; DROP ...`` is a syntax error, not a way out of the transaction;
- rows stream in single-row batches and stop at the row and byte caps (the query is
  cancelled there), so no result is held whole in memory;
- a statement still running at its deadline is cancelled from this side too;
- at connect, a role that could write (a superuser, a role with INSERT/UPDATE/DELETE or
  CREATE anywhere, or one that may read server files or run programs) is reported loudly:
  connect as a role that can only SELECT (docs/engines.md says how).
"""

from __future__ import annotations

import threading
from typing import Any

from sqlscout.engines.base import EngineDatabase, schema_from, table_from_columns
from sqlscout.engines.url import DatabaseURL
from sqlscout.env.schema import Schema, Table, quote_identifier
from sqlscout.errors import DatabaseError, QueryError, QueryRefused, QueryTimeout

__all__ = ["PostgresDatabase"]

_IDLE_MS = 30_000
_CONNECT_TIMEOUT_S = 10
_DROPPED_PARAMS = {"passfile", "schema"}


class PostgresDatabase(EngineDatabase):
    engine = "postgresql"
    dialect = "postgres"
    label = "PostgreSQL"

    @property
    def _schema_name(self) -> str:
        return self.url.param("schema") or "public"

    def _connect(self) -> Any:
        import psycopg

        options = (
            f"-c default_transaction_read_only=on -c statement_timeout={int(self.config.timeout_s * 1000)} "
            f"-c idle_in_transaction_session_timeout={_IDLE_MS} -c search_path={self._schema_name}"
        )
        kwargs = {**connect_args(self.url), "application_name": "sqlscout", "options": options}
        try:
            conn = psycopg.connect(**kwargs, autocommit=False)
        except psycopg.Error as exc:
            raise DatabaseError(f"{self.path}: cannot connect ({_first_line(exc)})") from None
        conn.read_only = True  # every transaction psycopg begins is BEGIN READ ONLY
        return conn

    def _run(self, conn: Any, sql: str, timeout: float, cap: int) -> tuple[list[str], list[tuple[Any, ...]]]:
        import psycopg
        from psycopg import errors

        cancelled = threading.Event()

        def cancel() -> None:
            cancelled.set()
            try:
                conn.cancel_safe(timeout=2)
            except Exception:  # noqa: BLE001 - a cancel that fails leaves the server's own deadline
                pass

        timer = self._watch(timeout, cancel)
        capped = False
        rows: list[tuple[Any, ...]] = []
        columns: list[str] = []
        try:
            cur = conn.cursor()
            cur.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout * 1000))}")
            stream = cur.stream(sql, size=256)
            budget = self.config.max_result_bytes
            try:
                for row in stream:
                    if not columns:
                        columns = [d.name for d in cur.description or ()]
                    rows.append(tuple(row))
                    budget -= _row_size(row)
                    if budget < 0 or len(rows) > cap:
                        capped = True
                        cancelled.set()
                        conn.cancel_safe(timeout=2)
                        break
            finally:
                try:
                    stream.close()
                except psycopg.Error:
                    pass
            if not columns:
                columns = [d.name for d in cur.description or ()]
            if budget < 0:
                raise QueryError(
                    f"SQL error: the result is larger than {self.config.max_result_bytes:,} bytes; "
                    "select fewer rows or smaller values."
                )
        except errors.QueryCanceled:
            if not capped:
                raise QueryTimeout(
                    f"Query timed out after {timeout:g} s and was stopped; simplify it (add LIMIT, avoid cross joins)."
                ) from None
        except (errors.ReadOnlySqlTransaction, errors.InsufficientPrivilege) as exc:
            raise QueryRefused(f"Refused: the database is read-only; {_first_line(exc)}") from None
        except errors.SyntaxError as exc:
            if "multiple commands" in str(exc):
                raise QueryRefused("Refused: send exactly one SQL statement per call.") from None
            raise QueryError(f"SQL error: {_first_line(exc)}") from None
        except psycopg.OperationalError as exc:
            raise QueryError(f"SQL error: the connection failed ({_first_line(exc)})") from None
        except psycopg.Error as exc:
            raise QueryError(f"SQL error: {_first_line(exc)}") from None
        finally:
            timer.cancel()
            try:
                conn.rollback()
            except psycopg.Error:
                pass
        return columns, rows

    def _reusable(self, conn: Any) -> bool:
        return not conn.closed and not conn.broken

    def _check(self, conn: Any) -> list[str]:
        """What this role could do beyond reading (each a reason to connect as another)."""
        found: list[str] = []
        schema = self._schema_name
        checks = {
            "it is a superuser": "SELECT rolsuper FROM pg_roles WHERE rolname = current_user",
            "it may write to some table (INSERT, UPDATE, DELETE or TRUNCATE)": (
                "SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
                "AND has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE'))"
            ),
            f"it may create objects in schema {schema}": f"SELECT has_schema_privilege({_literal(schema)}, 'CREATE')",
            "it may read or write server files or run server programs": (
                "SELECT pg_has_role(current_user, 'pg_read_server_files', 'MEMBER') "
                "OR pg_has_role(current_user, 'pg_write_server_files', 'MEMBER') "
                "OR pg_has_role(current_user, 'pg_execute_server_program', 'MEMBER')"
            ),
        }
        for reason, sql in checks.items():
            try:
                value = self._run(conn, sql, self.config.timeout_s, 1)[1]
            except QueryError:
                continue
            if value and value[0][0]:
                found.append(f"the role {self.url.user or '(default)'} could do more than read: {reason}")
        if found:
            found.append("every statement still runs in a read-only transaction, but connect as a role that can only SELECT")
        return found

    def _catalogue(self) -> Schema:
        schema = _literal(self._schema_name)
        tables = self.execute(
            "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            f"WHERE n.nspname = {schema} AND c.relkind IN ('r', 'p', 'v', 'm') "
            "ORDER BY substring(obj_description(c.oid, 'pg_class') from 'sqlscout copy: position ([0-9]+)')::int NULLS LAST, c.oid",
            max_rows=100_000,
        ).rows
        columns = self.execute(
            "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
            f"WHERE table_schema = {schema} ORDER BY table_name, ordinal_position",
            max_rows=1_000_000,
        ).rows
        keys = self.execute(
            "SELECT c.conrelid::regclass::text, c.contype, a.attname, f.confrelid, "
            "CASE WHEN c.contype = 'f' THEN c.confrelid::regclass::text END, fa.attname, k.i "
            "FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace "
            "CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, i) "
            "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum "
            "LEFT JOIN LATERAL (SELECT c.confrelid) f ON true "
            "LEFT JOIN pg_attribute fa ON c.contype = 'f' AND fa.attrelid = c.confrelid AND fa.attnum = c.confkey[k.i] "
            f"WHERE n.nspname = {schema} AND c.contype IN ('p', 'f') ORDER BY c.conrelid, c.conname, k.i",
            max_rows=1_000_000,
        ).rows
        primary = {(_bare(t), col) for t, kind, col, *_ in keys if kind == "p"}
        foreign = [(_bare(t), col, _bare(ref), ref_col) for t, kind, col, _, ref, ref_col, _ in keys if kind == "f"]
        by_table: dict[str, list[tuple[str, str, bool, bool]]] = {}
        for table, column, kind, nullable in columns:
            by_table.setdefault(table, []).append((column, kind, (table, column) in primary, nullable == "NO"))
        built: list[Table] = []
        for name, kind in tables:
            table = table_from_columns(name, by_table.get(name, []))
            refs = [(c, ref, rc) for t, c, ref, rc in foreign if t == name]
            if refs:
                extra = ",\n".join(
                    f"  FOREIGN KEY ({quote_identifier(c)}) REFERENCES {quote_identifier(ref)}({quote_identifier(rc)})"
                    for c, ref, rc in refs
                )
                table = Table(name, table.create_sql[:-2] + ",\n" + extra + "\n)", table.columns)
            if kind in ("v", "m"):
                table = Table(name, table.create_sql.replace("CREATE TABLE", "CREATE VIEW", 1), table.columns, is_view=True)
            built.append(table)
        return schema_from(built, foreign)


def connect_args(url: DatabaseURL, dbname: str | None = None) -> dict[str, Any]:
    """psycopg's connection arguments for ``url`` (another database of the same server
    with ``dbname``): host or socket, port, user, the password from wherever it comes, and
    the URL's other libpq parameters."""
    args: dict[str, Any] = {
        "dbname": dbname or url.database,
        "user": url.user,
        "password": url.secret(),
        "connect_timeout": _CONNECT_TIMEOUT_S,
        "host": url.param("host") or url.host,
        "port": url.port,
    }
    args.update({k: v for k, v in url.params if k not in _DROPPED_PARAMS and k != "host"})
    return {k: v for k, v in args.items() if v is not None}


def _bare(name: str) -> str:
    return name[1:-1].replace('""', '"') if name.startswith('"') and name.endswith('"') else name


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _row_size(row: Any) -> int:
    return sum(len(v) if isinstance(v, (str, bytes, bytearray, memoryview)) else 16 for v in row) + 16


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
