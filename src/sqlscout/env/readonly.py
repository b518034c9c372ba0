"""What the read-only sandbox admits, above SQLite's own guards (SPEC §2).

The authorizer every sandbox connection carries (reads only: no write, schema change,
ATTACH/DETACH, state-changing PRAGMA or file-touching function), the statements refused
by their first keyword before SQLite sees them, and the one-line messages a refusal or
an error becomes. :mod:`sqlscout.env.sandbox` applies them.
"""

from __future__ import annotations

import re
import sqlite3

__all__ = ["SKIPPABLE", "WRITE_VERBS", "authorize", "describe_error", "leading_verb", "refusal"]


# PRAGMAs that only report; their argument (if any) names a table or index.
_REPORTING_PRAGMAS = frozenset(
    {
        "table_info", "table_xinfo", "table_list", "index_list", "index_info",
        "index_xinfo", "foreign_key_list", "database_list", "collation_list",
        "function_list", "pragma_list", "module_list", "compile_options",
    }
)
# PRAGMAs that report when read bare and change state when given a value.
_SETTABLE_PRAGMAS = frozenset(
    {
        "encoding", "user_version", "application_id", "schema_version", "page_size",
        "page_count", "freelist_count", "journal_mode", "foreign_keys", "query_only",
        "case_sensitive_like", "recursive_triggers", "auto_vacuum", "cache_size",
        "data_version",
    }
)
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})


def authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _src: str | None) -> int:
    if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE):
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_DENY if (arg2 or "").lower() in _DENIED_FUNCTIONS else sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA:
        name = (arg1 or "").lower()
        if name in _REPORTING_PRAGMAS or (name in _SETTABLE_PRAGMAS and arg2 is None):
            return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_UPDATE and arg1 == "sqlite_master" and _src is None:
        # Asked when a table-valued pragma (SELECT * FROM pragma_table_info('t')) is
        # first used on a connection; nothing is written (the connection is read-only
        # and query_only; a real UPDATE of sqlite_master is refused by its first keyword).
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def describe_error(message: str) -> str:
    if "attempt to write a readonly database" in message:
        return "Refused: the database is read-only; only SELECT queries are allowed."
    return f"SQL error: {message}"


# What SQLite skips before a statement: whitespace, comments and empty statements (";").
_SKIPPABLE_TEXT = r"\s+|;|--[^\n]*(?:\n|$)|/\*.*?(?:\*/|$)"
SKIPPABLE = re.compile(f"^(?:{_SKIPPABLE_TEXT})*", re.S)
# ... and the EXPLAIN prefix that compile() adds, before the verb.
_LEADING_NOISE = re.compile(f"^(?:{_SKIPPABLE_TEXT}|EXPLAIN\\b(?:\\s+QUERY\\s+PLAN\\b)?)*", re.I | re.S)


# Statements that write, change the schema or connection state, or hold locks.
WRITE_VERBS = frozenset(
    {
        "INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER", "ATTACH",
        "DETACH", "VACUUM", "REINDEX", "ANALYZE", "BEGIN", "COMMIT", "END", "ROLLBACK",
        "SAVEPOINT", "RELEASE",
    }
)


def leading_verb(sql: str) -> str:
    """The statement's first keyword, upper-cased, past comments and ``EXPLAIN``.

    >>> leading_verb("/* hi */ EXPLAIN QUERY PLAN -- x\\n  delete from t")
    'DELETE'
    >>> leading_verb("EXPLAIN ;; DROP VIEW v")
    'DROP'
    """
    words = _LEADING_NOISE.sub("", sql).split(None, 1)
    return words[0].upper().rstrip(";") if words else ""


def refusal(sql: str, message: str) -> str:
    if "to use function" in message:
        function = message.rsplit(":", 1)[-1].strip()
        return f"Refused: the function {function} is not allowed here."
    verb = leading_verb(sql)
    if verb and verb not in {"SELECT", "WITH", "VALUES", "EXPLAIN", "("}:
        return f"Refused: the database is read-only; only SELECT queries are allowed ({verb} is not)."
    return "Refused: the database is read-only; only SELECT queries are allowed."
