"""What a server refuses, each with a one-line message that says what to do.

The HTTP API maps each to a status code; the MCP server shows the message as a tool
error (or a protocol error where the request itself is malformed).
"""

from __future__ import annotations

from sqlscout.errors import SqlscoutError

__all__ = ["Busy", "DeadlinePassed", "NoModel", "PathGiven", "UnknownDatabase", "UnknownTool"]


class UnknownDatabase(SqlscoutError):
    """A database name that the server was not started with."""


class PathGiven(UnknownDatabase):
    """A file path where a database *name* belongs (clients never send paths)."""


class UnknownTool(SqlscoutError):
    """A tool name that is not one of the eight (or ``ask``)."""


class Busy(SqlscoutError):
    """The cap on concurrent episodes is reached."""


class NoModel(SqlscoutError):
    """``ask`` on a server started without ``--model``."""


class DeadlinePassed(SqlscoutError):
    """A request ran past its deadline."""
