"""The schema as the prompt shows it: every ``CREATE TABLE``, optionally with example values.

Evaluation prompts of Qwen2.5-Coder and OmniSQL show a few values of each column next to
the DDL; a model then writes ``country = 'France'`` instead of guessing ``'FR'``. The
statements stay verbatim (what ``describe_table`` shows), each followed by comment lines
holding up to ``per_column`` distinct non-NULL values of every column, long text cut.

>>> from sqlscout.env.sandbox import Database
>>> db = Database("tests/data/spider_mini/database/concert_singer/concert_singer.sqlite")
>>> print(schema_text(db, 2).split("\\n\\n")[0])  # doctest: +NORMALIZE_WHITESPACE
CREATE TABLE "stadium" (
"Stadium_ID" int,
"Location" text,
"Name" text,
"Capacity" int,
"Highest" int,
"Lowest" int,
"Average" int,
PRIMARY KEY ("Stadium_ID")
);
-- Example values:
--   Stadium_ID: 1, 2
--   Location: 'Raith Rovers', 'Ayr United'
--   Name: "Stark's Park", 'Somerset Park'
--   Capacity: 10104, 11998
--   Highest: 4812, 2363
--   Lowest: 1294, 1057
--   Average: 2106, 1477
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlscout.env.sandbox import Database
from sqlscout.env.schema import Table, quote_identifier
from sqlscout.errors import QueryError

__all__ = ["schema_text"]

_VALUE_CHARS = 40
_QUERY_TIMEOUT_S = 1.0


def schema_text(db: Database, per_column: int = 0, tables: frozenset[str] | None = None) -> str:
    """Every ``CREATE TABLE`` of ``db`` (with ``tables``, of the tables so named); with
    ``per_column`` > 0, example values under each."""
    if per_column <= 0:
        return db.schema.create_statements(tables)
    return _with_examples(db, per_column, tables)


@lru_cache(maxsize=64)  # one text per database and setting; an evaluation asks for it per episode
def _with_examples(db: Database, per_column: int, tables: frozenset[str] | None = None) -> str:
    blocks = []
    for table in db.schema.tables:
        if tables is not None and table.name not in tables:
            continue
        statement = table.create_sql.strip().rstrip(";") + ";"
        lines = _example_lines(db, table, per_column)
        blocks.append("\n".join([statement, "-- Example values:", *lines] if lines else [statement]))
    return "\n\n".join(blocks)


def _example_lines(db: Database, table: Table, per_column: int) -> list[str]:
    lines = []
    for column in table.columns:
        col = quote_identifier(column.name)
        sql = f"SELECT DISTINCT {col} FROM {quote_identifier(table.name)} WHERE {col} IS NOT NULL LIMIT {per_column}"
        try:
            rows = db.execute(sql, timeout_s=_QUERY_TIMEOUT_S, max_rows=per_column).rows
        except QueryError:
            continue  # a column SQLite cannot read in time simply shows no examples
        values = [_show(row[0]) for row in rows if not isinstance(row[0], bytes)]
        if values:
            lines.append(f"--   {column.name}: {', '.join(values)}")
    return lines


def _show(value: Any) -> str:
    if isinstance(value, str):
        text = " ".join(value.split())
        return repr(text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 3] + "...")
    return repr(value)
