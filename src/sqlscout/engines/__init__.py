"""Databases beyond SQLite files: a database is a path (SQLite) or a URL.

``open_database(target)`` is what every command and the runner call: a plain path opens
the SQLite sandbox (:class:`sqlscout.env.sandbox.Database`, the default and the fastest);
``duckdb:///file.duckdb``, ``postgresql://...`` and ``mysql://...`` (MariaDB too) open that engine,
read-only by the engine itself (docs/engines.md). Each engine's driver is an optional
extra, imported only when a URL names it.

>>> db = open_database("src/sqlscout/data/chinook/Chinook_Sqlite.sqlite")
>>> type(db).__name__, db.execute("SELECT COUNT(*) FROM Genre").rows
('Database', [(25,)])
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from sqlscout.engines.url import DatabaseURL, is_url
from sqlscout.env.sandbox import Database, SandboxConfig
from sqlscout.errors import ConfigError

__all__ = ["DatabaseURL", "ENGINES", "dialect_of", "is_url", "open_database"]

# engine -> (module, class, pip extra that brings its driver, the driver's module)
ENGINES: dict[str, tuple[str, str, str, str]] = {
    "duckdb": ("sqlscout.engines.duckdb", "DuckDBDatabase", "duckdb", "duckdb"),
    "postgresql": ("sqlscout.engines.postgres", "PostgresDatabase", "postgres", "psycopg"),
    "mysql": ("sqlscout.engines.mysql", "MySQLDatabase", "mysql", "pymysql"),
}


def open_database(target: str | os.PathLike[str], config: SandboxConfig | None = None) -> Any:
    """The database ``target`` names, opened read-only: a SQLite path, or an engine's URL.

    A config's ``query_memory_mb`` > 0 runs a SQLite database's statements in worker
    processes with that memory cap and a deadline enforced by killing the worker
    (:class:`~sqlscout.env.isolation.IsolatedDatabase`); the servers stop statements
    themselves (statement_timeout, max_statement_time) and DuckDB by interrupt.
    """
    if not is_url(str(target)):
        return _sqlite(target, config)
    url = DatabaseURL.parse(str(target))
    if url.engine == "sqlite":
        return _sqlite(url.path or "", config)
    if url.engine not in ENGINES:
        raise ConfigError(f"{url.redacted()}: the {url.engine} engine is not supported; use SQLite, DuckDB, PostgreSQL or MySQL")
    module, name, extra, driver = ENGINES[url.engine]
    try:
        importlib.import_module(driver)
    except ImportError:
        raise ConfigError(f"{url.redacted()} needs the {driver} driver: pip install 'sqlscout[{extra}]'") from None
    return getattr(importlib.import_module(module), name)(url, config)


def _sqlite(path: str | os.PathLike[str], config: SandboxConfig | None) -> Database:
    if config is None or config.query_memory_mb <= 0:
        return Database(path, config)
    from sqlscout.env.isolation import IsolatedDatabase

    return IsolatedDatabase(path, config, memory_mb=config.query_memory_mb, workers=4)


def dialect_of(db: Any) -> str:
    """sqlglot's name for the SQL of ``db`` (``sqlite`` for the sandbox)."""
    return getattr(db, "dialect", "sqlite")


def database_key(target: str | os.PathLike[str]) -> str | Path:
    """What identifies a database across opens: a resolved path, or a URL without its password."""
    if is_url(str(target)):
        url = DatabaseURL.parse(str(target))
        return Path(url.path).expanduser().resolve() if url.engine == "sqlite" and url.path else url.redacted()
    return Path(target).expanduser().resolve()
