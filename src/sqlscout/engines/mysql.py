"""MySQL and MariaDB through PyMySQL, read-only by the server.

Layers, each enforced by the server:

- the session is ``SET SESSION TRANSACTION READ ONLY`` and every statement runs in its
  own ``START TRANSACTION READ ONLY``, rolled back after it;
- multiple statements are off (the client never sets ``CLIENT.MULTI_STATEMENTS``), so
  ``SELECT 1; DROP TABLE t`` is a syntax error;
- each statement has the server's own deadline (``max_statement_time`` on MariaDB,
  ``MAX_EXECUTION_TIME`` on MySQL) and is killed from this side (``KILL QUERY`` on another
  connection) when it passes;
- rows stream unbuffered and stop at the row and byte caps (the query is killed there);
- ``ANSI_QUOTES`` is on, so a double-quoted name is a name, as in the tools and the
  schema every other engine shows (a string is single-quoted);
- at connect, a role with any privilege beyond reading (``INSERT``, ``UPDATE``, ``DELETE``,
  ``CREATE``, ``DROP``, ``FILE``, ``SUPER``, ``ALL``...) is reported loudly.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from sqlscout.engines.base import EngineDatabase, schema_from, table_from_columns
from sqlscout.engines.url import DatabaseURL
from sqlscout.env.schema import Schema, Table
from sqlscout.errors import DatabaseError, QueryError, QueryRefused, QueryTimeout

__all__ = ["MySQLDatabase"]

_WRITE_PRIVILEGES = re.compile(
    r"\b(ALL PRIVILEGES|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|INDEX|FILE|SUPER|GRANT OPTION|EXECUTE|EVENT|TRIGGER|CREATE ROUTINE)\b"
)
_ENGINE_TAIL = re.compile(r"\)\s*ENGINE=.*$", re.S)


class MySQLDatabase(EngineDatabase):
    engine = "mysql"
    dialect = "mysql"
    label = "MySQL"

    def _connect(self) -> Any:
        import pymysql

        kwargs = connect_args(self.url)
        try:
            conn = pymysql.connect(**kwargs, autocommit=False)
        except pymysql.Error as exc:
            raise DatabaseError(f"{self.path}: cannot connect ({_message(exc)})") from None
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, ',ANSI_QUOTES')")
            cur.execute("SET SESSION TRANSACTION READ ONLY")
            cur.execute("SET SESSION div_precision_increment = 30")  # AVG and / as precise as SQLite's floats
            cur.execute("SELECT VERSION()")
            self._mariadb = "mariadb" in str(cur.fetchone()[0]).lower()
            cur.execute("SELECT CONNECTION_ID()")
            conn.sqlscout_id = cur.fetchone()[0]
        if getattr(self, "_mariadb", False):
            self.label = "MariaDB"
        return conn

    def _run(self, conn: Any, sql: str, timeout: float, cap: int) -> tuple[list[str], list[tuple[Any, ...]]]:
        import pymysql
        from pymysql.cursors import SSCursor

        killed = threading.Event()

        def kill() -> None:
            killed.set()
            self._kill(conn.sqlscout_id)

        with conn.cursor() as setup:
            if getattr(self, "_mariadb", False):
                setup.execute(f"SET SESSION max_statement_time = {max(0.001, timeout):.3f}")
            else:
                setup.execute(f"SET SESSION MAX_EXECUTION_TIME = {max(1, int(timeout * 1000))}")
            setup.execute("START TRANSACTION READ ONLY")
        timer = self._watch(timeout, kill)
        capped = False
        try:
            cur = conn.cursor(SSCursor)
            try:
                cur.execute(sql)
                columns = [d[0] for d in cur.description or ()]
                rows: list[tuple[Any, ...]] = []
                budget = self.config.max_result_bytes
                while True:
                    batch = cur.fetchmany(256)
                    if not batch:
                        break
                    rows += [tuple(r) for r in batch]
                    budget -= sum(len(str(v)) + 8 for r in batch for v in r)
                    if budget < 0 or len(rows) > cap:
                        capped = True
                        killed.set()
                        self._kill(conn.sqlscout_id)
                        break
                if budget < 0:
                    raise QueryError(
                        f"SQL error: the result is larger than {self.config.max_result_bytes:,} bytes; "
                        "select fewer rows or smaller values."
                    )
            finally:
                try:
                    cur.close()
                except pymysql.Error:
                    pass
        except pymysql.err.OperationalError as exc:
            code = exc.args[0] if exc.args else 0
            if killed.is_set() and not capped or code in (1969, 3024, 1317):  # statement time, execution time, interrupted
                raise QueryTimeout(
                    f"Query timed out after {timeout:g} s and was stopped; simplify it (add LIMIT, avoid cross joins)."
                ) from None
            if code in (1792, 1142, 1227, 1044, 1045, 1290):  # read-only transaction, access denied, --read-only
                raise QueryRefused(f"Refused: the database is read-only; {_message(exc)}") from None
            raise QueryError(f"SQL error: {_message(exc)}") from None
        except pymysql.err.ProgrammingError as exc:
            raise QueryError(f"SQL error: {_message(exc)}") from None
        except pymysql.Error as exc:
            if killed.is_set() and not capped:
                raise QueryTimeout(f"Query timed out after {timeout:g} s and was stopped; simplify it (add LIMIT, avoid cross joins).") from None
            raise QueryError(f"SQL error: {_message(exc)}") from None
        finally:
            timer.cancel()
            try:
                conn.rollback()
            except pymysql.Error:
                pass
        return columns, rows

    def _kill(self, connection_id: int) -> None:
        """Stop the statement running on ``connection_id`` from another connection."""
        import pymysql

        try:
            other = self._connect()
            try:
                with other.cursor() as cur:
                    cur.execute(f"KILL QUERY {int(connection_id)}")
            finally:
                other.close()
        except (pymysql.Error, DatabaseError):
            pass

    def _reusable(self, conn: Any) -> bool:
        try:
            conn.ping(reconnect=False)
            return True
        except Exception:  # noqa: BLE001
            return False

    def _check(self, conn: Any) -> list[str]:
        with conn.cursor() as cur:
            try:
                cur.execute("SHOW GRANTS")
                grants = [str(r[0]) for r in cur.fetchall()]
            except Exception:  # noqa: BLE001 - a server that hides grants: nothing to report
                return []
        found = sorted({m.group(1) for g in grants for m in _WRITE_PRIVILEGES.finditer(g.split(" ON ")[0])})
        if not found:
            return []
        return [
            f"the user {self.url.user or '(default)'} could do more than read: it holds {', '.join(found)}",
            "every statement still runs in a read-only transaction, but connect as a user that can only SELECT",
        ]

    def _catalogue(self) -> Schema:
        db = "'" + self.url.database.replace("'", "''") + "'"
        tables = self.execute(
            f"SELECT TABLE_NAME, TABLE_TYPE, TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = {db}",
            max_rows=100_000,
        ).rows
        columns = self.execute(
            "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY FROM information_schema.COLUMNS "
            f"WHERE TABLE_SCHEMA = {db} ORDER BY TABLE_NAME, ORDINAL_POSITION",
            max_rows=1_000_000,
        ).rows
        keys = self.execute(
            "SELECT TABLE_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE "
            f"WHERE TABLE_SCHEMA = {db} AND REFERENCED_TABLE_NAME IS NOT NULL ORDER BY TABLE_NAME, ORDINAL_POSITION",
            max_rows=1_000_000,
        ).rows
        by_table: dict[str, list[tuple[str, str, bool, bool]]] = {}
        for table, column, kind, nullable, key in columns:
            by_table.setdefault(table, []).append((column, kind, key == "PRI", nullable == "NO"))
        order = sorted(tables, key=lambda r: (_position(r[2]), r[0]))
        built: list[Table] = []
        for name, kind, _ in order:
            table = table_from_columns(name, by_table.get(name, []))
            refs = [(c, ref, rc) for t, c, ref, rc in keys if t == name]
            if refs:
                extra = ",\n".join(f'  FOREIGN KEY ("{c}") REFERENCES "{ref}"("{rc}")' for c, ref, rc in refs)
                table = Table(name, table.create_sql[:-2] + ",\n" + extra + "\n)", table.columns)
            if kind == "VIEW":
                table = Table(name, table.create_sql.replace("CREATE TABLE", "CREATE VIEW", 1), table.columns, is_view=True)
            built.append(table)
        return schema_from(built, [tuple(k) for k in keys])  # type: ignore[misc]


def connect_args(url: DatabaseURL, database: str | None = "") -> dict[str, Any]:
    """PyMySQL's connection arguments for ``url`` (``database=None``: no database, to
    create one): socket or host and port, user and password; multiple statements stay off."""
    args: dict[str, Any] = {"user": url.user, "password": url.secret() or "", "connect_timeout": 10, "charset": "utf8mb4"}
    if database is not None:
        args["database"] = database or url.database
    socket = url.param("unix_socket") or url.param("socket")
    args.update({"unix_socket": socket} if socket else {"host": url.host, "port": url.port})
    return args


def _position(comment: str | None) -> int:
    found = re.search(r"sqlscout copy: position (\d+)", comment or "")
    return int(found.group(1)) if found else 1_000_000


def _message(exc: BaseException) -> str:
    args = getattr(exc, "args", ())
    return str(args[1]) if len(args) > 1 else (str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
