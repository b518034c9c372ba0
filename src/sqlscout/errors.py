"""The project's exception hierarchy.

Bad input from a *user* raises one of these with a one-line message that says what to
do. Bad output from a *model* never raises: it becomes an observation the model sees.
"""

from __future__ import annotations


class SqlscoutError(Exception):
    """Base class of every error sqlscout raises on purpose."""


class DatabaseError(SqlscoutError):
    """A database file cannot be opened or read."""


class QueryError(SqlscoutError):
    """A SQL statement was refused or failed; the message is fit to show a model."""


class QueryTimeout(QueryError):
    """A statement ran past its deadline and was interrupted inside SQLite."""


class QueryTooLarge(QueryError):
    """A statement's result, or the memory it took, passed the sandbox's caps (the
    result-size cap counted while rows stream, or a query worker's memory cap)."""


class QueryRefused(QueryError):
    """A statement was refused by the sandbox (a write, several statements, ...).

    Its message always starts with :data:`REFUSED`, so that a refusal stays recognisable
    in a stored result's error text (scoring ranks it below every answer that could run).
    """

    def __init__(self, message: str) -> None:
        super().__init__(message if message.startswith(REFUSED) else f"{REFUSED} {message}")


# How every refusal's message starts.
REFUSED = "Refused:"


class ToolArgumentError(SqlscoutError):
    """A tool was called with missing, extra or ill-typed arguments."""


class ConfigError(SqlscoutError, ValueError):
    """A configuration value is out of range or inconsistent with another one."""


class DataError(SqlscoutError):
    """A benchmark file or record is missing or malformed."""


class BackendError(SqlscoutError):
    """A model backend failed (unreachable server, missing model, out of memory, ...)."""
