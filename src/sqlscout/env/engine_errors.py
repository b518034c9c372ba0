"""An engine's error messages sorted into the categories that hints act on.

Each engine words its errors its own way; a table per engine (pattern -> category, with
the name the error is about in the group ``name``, or in ``qualifier`` and ``column``)
turns them into one vocabulary, so another engine adds a table, not rules. The
environment's own name hint after a failed ``run_query`` reads it, and so do the assist
layer's repair hints. The patterns were taken from the engines' real messages
(tests/test_engines.py runs each kind of mistake on each engine).

>>> classify("SQL error: no such column: T1.Make")
(<ErrorCategory.UNKNOWN_COLUMN: 'unknown_column'>, 'T1.Make')
>>> classify('SQL error: column t1.make does not exist', "postgresql")
(<ErrorCategory.UNKNOWN_COLUMN: 'unknown_column'>, 't1.make')
>>> classify('SQL error: Binder Error: Table "T1" does not have a column named "Make"', "duckdb")
(<ErrorCategory.UNKNOWN_COLUMN: 'unknown_column'>, 'T1.Make')
>>> classify("SQL error: Table 'car_1.cars' doesn't exist", "mysql")
(<ErrorCategory.UNKNOWN_TABLE: 'unknown_table'>, 'cars')
>>> classify("SQL error: misuse of aggregate: COUNT()")
(<ErrorCategory.AGGREGATE_MISUSE: 'aggregate_misuse'>, None)
>>> classify("SQL error: disk I/O error")
(<ErrorCategory.OTHER: 'other'>, None)
"""

from __future__ import annotations

import re
from enum import Enum

__all__ = ["ENGINE_ERRORS", "ErrorCategory", "classify", "engine_of"]


class ErrorCategory(str, Enum):
    UNKNOWN_COLUMN = "unknown_column"
    UNKNOWN_TABLE = "unknown_table"
    UNKNOWN_QUALIFIER = "unknown_qualifier"  # a table or alias the query does not read ("T3" of T3.Name)
    AMBIGUOUS_COLUMN = "ambiguous_column"
    AGGREGATE_MISUSE = "aggregate_misuse"
    JOIN_SYNTAX = "join_syntax"  # a JOIN where the grammar wants another clause (a WHERE before it)
    SYNTAX = "syntax"
    OTHER = "other"


_PART = r"(?:\"[^\"]+\"|`[^`]+`|\[[^\]]+\]|[^\s.\"'`]+)"
_NAME = rf"(?P<name>{_PART}(?:\.{_PART})?)"
_JOIN_WORDS = r"(?:JOIN|LEFT|INNER|CROSS|NATURAL|RIGHT|FULL)"

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
        (re.compile(rf'near "{_JOIN_WORDS}": syntax error', re.IGNORECASE), ErrorCategory.JOIN_SYNTAX),
        (re.compile(r"syntax error|incomplete input|unrecognized token"), ErrorCategory.SYNTAX),
    ),
    "postgresql": (
        (re.compile(rf"column {_NAME} does not exist"), ErrorCategory.UNKNOWN_COLUMN),
        (re.compile(rf"relation {_NAME} does not exist"), ErrorCategory.UNKNOWN_TABLE),
        (re.compile(rf"missing FROM-clause entry for table {_NAME}"), ErrorCategory.UNKNOWN_QUALIFIER),
        (re.compile(rf"column reference {_NAME} is ambiguous"), ErrorCategory.AMBIGUOUS_COLUMN),
        (re.compile(r"aggregate functions are not allowed in|aggregate function calls cannot be nested"),
         ErrorCategory.AGGREGATE_MISUSE),
        (re.compile(rf'syntax error at or near "{_JOIN_WORDS}"', re.IGNORECASE), ErrorCategory.JOIN_SYNTAX),
        (re.compile(r"syntax error|unterminated"), ErrorCategory.SYNTAX),
    ),
    "duckdb": (
        (re.compile(r'Table "(?P<qualifier>[^"]+)" does not have a column named "(?P<column>[^"]+)"'),
         ErrorCategory.UNKNOWN_COLUMN),
        (re.compile(rf"Referenced column {_NAME} not found"), ErrorCategory.UNKNOWN_COLUMN),
        (re.compile(rf"Table with name {_NAME} does not exist"), ErrorCategory.UNKNOWN_TABLE),
        (re.compile(rf"Referenced table {_NAME} not found"), ErrorCategory.UNKNOWN_QUALIFIER),
        (re.compile(rf"Ambiguous reference to column name {_NAME}"), ErrorCategory.AMBIGUOUS_COLUMN),
        (re.compile(r"clause cannot contain aggregates|aggregate function calls cannot be nested"),
         ErrorCategory.AGGREGATE_MISUSE),
        (re.compile(rf'syntax error at or near "{_JOIN_WORDS}"', re.IGNORECASE), ErrorCategory.JOIN_SYNTAX),
        (re.compile(r"Parser Error|syntax error"), ErrorCategory.SYNTAX),
    ),
    "mysql": (  # MySQL and MariaDB
        (re.compile(r"Unknown column '(?P<name>[^']+)' in"), ErrorCategory.UNKNOWN_COLUMN),
        (re.compile(r"Table '(?:[^'.]+\.)?(?P<name>[^']+)' doesn't exist"), ErrorCategory.UNKNOWN_TABLE),
        (re.compile(r"Column '(?P<name>[^']+)' in .* is ambiguous"), ErrorCategory.AMBIGUOUS_COLUMN),
        (re.compile(r"Invalid use of group function"), ErrorCategory.AGGREGATE_MISUSE),
        (re.compile(rf"SQL syntax.* near '{_JOIN_WORDS}\b", re.IGNORECASE), ErrorCategory.JOIN_SYNTAX),
        (re.compile(r"error in your SQL syntax"), ErrorCategory.SYNTAX),
    ),
}


def engine_of(db: object) -> str:
    """The engine ``db`` runs on, as :data:`ENGINE_ERRORS` names it (``sqlite`` for the sandbox)."""
    return str(getattr(db, "engine", "sqlite"))


def classify(error: str, engine: str = "sqlite") -> tuple[ErrorCategory, str | None]:
    """The category of ``error`` in ``engine``'s wording, and the name it is about (the
    column or table as written, ``qualifier.column`` where the engine names both apart),
    when it names one."""
    for pattern, category in ENGINE_ERRORS.get(engine, ()):
        found = pattern.search(error)
        if found is not None:
            groups = found.groupdict()
            if groups.get("column") is not None:
                return category, f"{groups['qualifier']}.{groups['column']}" if groups.get("qualifier") else groups["column"]
            return category, groups.get("name")
    return ErrorCategory.OTHER, None
