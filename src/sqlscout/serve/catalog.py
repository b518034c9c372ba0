"""The databases a server may open: an allow-list by name, fixed at start.

A client names a database; it never sends a path. Each database is given at start as
a file (its name is the file's stem), a URL (named after its database) or as
``name=path`` / ``name=URL``, and each is opened read-only by its own engine, with the
same deadline and caps.

>>> spec = parse_database_spec("music=src/sqlscout/data/chinook/Chinook_Sqlite.sqlite")
>>> spec.name, spec.path.name
('music', 'Chinook_Sqlite.sqlite')
>>> parse_database_spec("src/sqlscout/data/chinook/Chinook_Sqlite.sqlite").name
'Chinook_Sqlite'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from sqlscout.engines import open_database
from sqlscout.env.isolation import DEFAULT_MEMORY_MB
from sqlscout.env.sandbox import Database, SandboxConfig
from sqlscout.errors import ConfigError
from sqlscout.serve.errors import PathGiven, UnknownDatabase

__all__ = ["Catalog", "DatabaseSpec", "parse_database_spec"]

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
_PATH_HINTS = ("/", "\\", "~", ":")


@dataclass(frozen=True)
class DatabaseSpec:
    """A database to serve: the name clients use and the file or URL behind it."""

    name: str
    path: Path | str


def parse_database_spec(text: str) -> DatabaseSpec:
    """``path`` (named after the file's stem), ``URL`` (after its database) or ``name=...``.

    >>> parse_database_spec("postgresql://reader@db/spider?sslmode=disable").name
    'spider'
    """
    name, sep, path = text.partition("=")
    if not sep or "://" in name:
        name, path = _default_name(text), text
    name = name.strip()
    if not _NAME.match(name):
        raise ConfigError(
            f"{name!r} cannot name a database: use letters, digits, '_', '.' or '-' (give it as NAME=PATH)"
        )
    return DatabaseSpec(name, path if "://" in path else Path(path).expanduser())


def _default_name(target: str) -> str:
    if "://" in target:
        return Path(target.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]).stem or "db"
    return Path(target).stem


class Catalog:
    """The served databases, opened read-only once and shared by every request.

    Args:
        specs: what to serve; names must be unique.
        sandbox: the per-query deadline and caps every database gets.
        query_memory_mb: each SQLite database's statements run in worker processes
            under this memory cap, killed at their deadline (0: in this process; see
            :mod:`sqlscout.env.isolation`).
    """

    def __init__(
        self, specs: Sequence[DatabaseSpec], sandbox: SandboxConfig | None = None, *, query_memory_mb: int = DEFAULT_MEMORY_MB
    ) -> None:
        if not specs:
            raise ConfigError("no database to serve: pass at least one SQLite file (or NAME=PATH)")
        self._by_name: dict[str, Database] = {}
        isolated = replace(sandbox or SandboxConfig(), query_memory_mb=query_memory_mb)
        try:
            for spec in specs:
                if spec.name in self._by_name:
                    raise ConfigError(f"two databases are named {spec.name!r}; name one of them with NAME=PATH")
                self._by_name[spec.name] = open_database(spec.path, isolated)
        except Exception:
            self.close()
            raise
        self._by_path = {db.path: db for db in self._by_name.values()}

    @classmethod
    def from_args(
        cls, args: Sequence[str], sandbox: SandboxConfig | None = None, *, query_memory_mb: int = DEFAULT_MEMORY_MB
    ) -> Catalog:
        """From command-line arguments (``path`` or ``name=path`` each)."""
        return cls([parse_database_spec(a) for a in args], sandbox, query_memory_mb=query_memory_mb)

    @property
    def names(self) -> list[str]:
        return list(self._by_name)

    def get(self, name: str | None) -> Database:
        """The database called ``name``; None is allowed when only one is served.

        Raises:
            PathGiven: ``name`` looks like a file path.
            UnknownDatabase: no database has that name.
        """
        if name is None:
            if len(self._by_name) == 1:
                return next(iter(self._by_name.values()))
            raise UnknownDatabase(f"name the database to use ('db'): one of {self._listing()}")
        if not isinstance(name, str):
            raise UnknownDatabase(f"'db' must be a database name (a string): one of {self._listing()}")
        found = self._by_name.get(name)
        if found is not None:
            return found
        if any(h in name for h in _PATH_HINTS) or name.endswith((".sqlite", ".db", ".sqlite3")):
            raise PathGiven(f"send a database's name, not a path; this server serves {self._listing()}")
        raise UnknownDatabase(f"no database named {name!r}; this server serves {self._listing()}")

    def by_path(self, path: Path | str) -> Database:
        """The served database opened from ``path`` (what an episode's task names)."""
        if isinstance(path, str) and "://" in path:
            return self._by_path[path]
        return self._by_path[Path(path).expanduser().resolve()]

    def name_of(self, db: Database) -> str:
        return next(name for name, served in self._by_name.items() if served is db)

    def schema_text(self, name: str) -> str:
        """Every CREATE statement of the database, as a model with the full schema sees it."""
        return self.get(name).schema.create_statements()

    def describe(self) -> list[dict[str, object]]:
        """Name and tables of each database (never its path)."""
        return [{"name": name, "tables": db.schema.table_names} for name, db in self._by_name.items()]

    def close(self) -> None:
        for db in self._by_name.values():
            db.close()

    def _listing(self) -> str:
        return ", ".join(self._by_name) or "(none)"
