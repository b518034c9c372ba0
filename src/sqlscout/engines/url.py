"""A database named by a URL: which engine, where, as whom, without a password in any log.

``postgresql://user@host:5432/db``, ``mysql://user@host/db`` (MariaDB too) and
``duckdb:///path/to/file.duckdb``; a plain path is a SQLite file. The password comes from
the URL, else the engine's usual environment variable (``PGPASSWORD``, ``MYSQL_PWD``), else
a file named by ``?passfile=`` (its first line); what is printed or stored is
:meth:`DatabaseURL.redacted`, which never holds it.

>>> url = DatabaseURL.parse("postgresql://reader:s3cret@localhost:5433/spider?sslmode=disable")
>>> url.engine, url.host, url.port, url.database, url.user, url.redacted()
('postgresql', 'localhost', 5433, 'spider', 'reader', 'postgresql://reader@localhost:5433/spider?sslmode=disable')
>>> DatabaseURL.parse("duckdb:///tmp/x.duckdb").path
'/tmp/x.duckdb'
>>> is_url("../shared/data/chinook/Chinook_Sqlite.sqlite"), is_url("mysql://u@h/db")
(False, True)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from sqlscout.errors import ConfigError

__all__ = ["ENGINE_SCHEMES", "DatabaseURL", "is_url"]

# scheme -> engine
ENGINE_SCHEMES = {
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "mysql": "mysql",
    "mariadb": "mysql",
    "duckdb": "duckdb",
    "sqlite": "sqlite",
}
_DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306}
_PASSWORD_ENV = {"postgresql": "PGPASSWORD", "mysql": "MYSQL_PWD"}
_USER_ENV = {"postgresql": ("PGUSER", "USER"), "mysql": ("USER",)}


def is_url(target: object) -> bool:
    """Whether ``target`` names a database by URL (``scheme://...``) rather than a path."""
    return isinstance(target, str) and "://" in target and target.split("://", 1)[0].lower() in ENGINE_SCHEMES


@dataclass(frozen=True)
class DatabaseURL:
    """A parsed database URL (see the module docstring)."""

    engine: str
    host: str | None
    port: int | None
    database: str
    user: str | None
    password: str | None = field(default=None, repr=False, compare=False)
    params: tuple[tuple[str, str], ...] = ()
    path: str | None = None  # file engines (duckdb, sqlite): the file

    @classmethod
    def parse(cls, text: str) -> DatabaseURL:
        scheme, sep, _ = text.partition("://")
        engine = ENGINE_SCHEMES.get(scheme.lower())
        if not sep or engine is None:
            raise ConfigError(
                f"{text!r} is not a database URL; use postgresql://user@host/db, mysql://user@host/db, "
                "duckdb:///path.duckdb, or a SQLite file's path"
            )
        parts = urlsplit(text)
        params = tuple(parse_qsl(parts.query, keep_blank_values=True))
        if engine in ("duckdb", "sqlite"):
            path = unquote((parts.netloc or "") + parts.path)
            if not path:
                raise ConfigError(f"{cls._redact(text)}: name the file, e.g. {scheme}:///path/to/file.{scheme}")
            return cls(engine, None, None, Path(path).stem, None, None, params, path)
        database = unquote(parts.path.lstrip("/"))
        if not database:
            raise ConfigError(f"{cls._redact(text)}: name the database after the host, e.g. {scheme}://user@host/dbname")
        try:
            port = parts.port
        except ValueError:
            raise ConfigError(f"{cls._redact(text)}: the port must be a number from 1 to 65535") from None
        user = unquote(parts.username) if parts.username else next(
            (os.environ[v] for v in _USER_ENV.get(engine, ()) if os.environ.get(v)), None
        )
        password = unquote(parts.password) if parts.password is not None else None
        return cls(engine, parts.hostname or "localhost", port or _DEFAULT_PORTS.get(engine), database, user, password, params)

    @staticmethod
    def _redact(text: str) -> str:
        parts = urlsplit(text)
        if parts.password is None:
            return text
        netloc = parts.netloc.replace(f":{parts.password}@", "@", 1)
        return parts._replace(netloc=netloc).geturl()

    def param(self, name: str) -> str | None:
        return next((v for k, v in self.params if k == name), None)

    def secret(self) -> str | None:
        """The password: the URL's, the engine's environment variable, or ``?passfile=``'s first line."""
        if self.password is not None:
            return self.password
        env = _PASSWORD_ENV.get(self.engine)
        if env and os.environ.get(env):
            return os.environ[env]
        passfile = self.param("passfile")
        if passfile:
            try:
                return Path(passfile).expanduser().read_text(encoding="utf-8").splitlines()[0].strip()
            except (OSError, UnicodeDecodeError, IndexError):
                raise ConfigError(f"{self.redacted()}: cannot read the password file {passfile}") from None
        return None

    def redacted(self) -> str:
        """The URL without its password: what logs, traces and run files hold."""
        if self.path is not None:
            return f"{self.engine}://{self.path}"
        who = f"{self.user}@" if self.user else ""
        query = "?" + urlencode(self.params, safe="/") if self.params else ""
        scheme = "postgresql" if self.engine == "postgresql" else "mysql"
        return f"{scheme}://{who}{self.host}:{self.port}/{self.database}{query}"
