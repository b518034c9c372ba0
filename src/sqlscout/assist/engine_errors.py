"""An engine's error messages sorted into the categories the repair hints act on.

Each engine words its errors its own way; a table per engine (pattern -> category, with
the name the error is about in the group ``name``) turns them into one vocabulary, so
another engine adds a table, not rules. SQLite's comes first.

>>> classify("SQL error: no such column: T1.Make")
(<ErrorCategory.UNKNOWN_COLUMN: 'unknown_column'>, 'T1.Make')
>>> classify("SQL error: misuse of aggregate: COUNT()")
(<ErrorCategory.AGGREGATE_MISUSE: 'aggregate_misuse'>, None)
>>> classify("SQL error: disk I/O error")
(<ErrorCategory.OTHER: 'other'>, None)
"""

from __future__ import annotations

import re
from enum import Enum

__all__ = ["ENGINE_ERRORS", "ErrorCategory", "classify"]


class ErrorCategory(str, Enum):
    UNKNOWN_COLUMN = "unknown_column"
    UNKNOWN_TABLE = "unknown_table"
    AMBIGUOUS_COLUMN = "ambiguous_column"
    AGGREGATE_MISUSE = "aggregate_misuse"
    JOIN_SYNTAX = "join_syntax"  # a JOIN where the grammar wants another clause (a WHERE before it)
    SYNTAX = "syntax"
    OTHER = "other"


_NAME = r"(?P<name>(?:\"[^\"]+\"|`[^`]+`|\[[^\]]+\]|[^\s.]+)(?:\.(?:\"[^\"]+\"|`[^`]+`|\[[^\]]+\]|[^\s.]+))?)"

# engine -> (pattern, category), tried in order; the first that matches decides.
ENGINE_ERRORS: dict[str, tuple[tuple[re.Pattern[str], ErrorCategory], ...]] = {
    "sqlite": (
        (re.compile(rf"no such column: {_NAME}"), ErrorCategory.UNKNOWN_COLUMN),
        (re.compile(rf"no such table: {_NAME}"), ErrorCategory.UNKNOWN_TABLE),
        (re.compile(rf"ambiguous column name: {_NAME}$"), ErrorCategory.AMBIGUOUS_COLUMN),
        (
            re.compile(r"misuse of (?:aggregate|window function)|HAVING clause on a non-aggregate query"),
            ErrorCategory.AGGREGATE_MISUSE,
        ),
        (re.compile(r'near "(?:JOIN|LEFT|INNER|CROSS|NATURAL)": syntax error', re.IGNORECASE), ErrorCategory.JOIN_SYNTAX),
        (re.compile(r"syntax error|incomplete input|unrecognized token"), ErrorCategory.SYNTAX),
    ),
}


def classify(error: str, engine: str = "sqlite") -> tuple[ErrorCategory, str | None]:
    """The category of ``error`` in ``engine``'s wording, and the name it is about (the
    column or table as written), when it names one."""
    for pattern, category in ENGINE_ERRORS.get(engine, ()):
        found = pattern.search(error)
        if found is not None:
            return category, found.groupdict().get("name")
    return ErrorCategory.OTHER, None
