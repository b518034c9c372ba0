"""Query-aware repair hints for a failed ``run_query`` (``EpisodeConfig.query_hints``).

Small untrained models mostly fail on names: they qualify a column with the wrong alias
(``T1.Make`` where ``T1`` is ``car_makers`` and ``Make`` lives in ``car_names AS T2``), or
use a column of a table the query never joins. SQLite only says ``no such column:
T1.Make``, and the schema-wide "did you mean" lists names from every table; the model then
resubmits the same query until the episode ends. A hint that reads the failing query's own
``FROM`` clause can say which table each alias is, where the column really is, and, when
one substitution repairs the query and the repaired query compiles, show it.

Pure Python over the schema already read; no SQL parser.

>>> from sqlscout.env.schema import Column, Schema, Table
>>> col = lambda n: Column(n, "TEXT", False, False)
>>> schema = Schema((Table("car_makers", "", (col("Id"), col("Maker"))),
...                  Table("car_names", "", (col("MakeId"), col("Make")))), ())
>>> sql = "SELECT T1.Make FROM car_makers AS T1 JOIN car_names AS T2 ON T1.Id = T2.MakeId"
>>> print(query_hint(schema, sql, "SQL error: no such column: T1.Make"))
Hint: T1 is car_makers (columns: Id, Maker); Make is a column of car_names, which this query calls T2: write T2.Make.
"""

from __future__ import annotations

import difflib
import re
from typing import Callable

from sqlscout.env.schema import Schema, Table

_NO_SUCH_COLUMN = re.compile(r"no such column: ((?:\"[^\"]+\"|`[^`]+`|\[[^\]]+\]|[^\s.]+)(?:\.(?:\"[^\"]+\"|`[^`]+`|\[[^\]]+\]|[^\s.]+))?)")
_AGGREGATE = re.compile(r"misuse of (?:aggregate|window function)")
_IDENT = r"(?:\"[^\"]+\"|`[^`]+`|\[[^\]]+\]|[A-Za-z_][\w$]*)"
# A table named after FROM, JOIN or a comma, with its alias when it has one.
_SOURCE = re.compile(
    rf"(?:\bFROM|\bJOIN|,)\s+(?P<table>{_IDENT})(?:\s+(?:AS\s+)?(?P<alias>{_IDENT}))?", re.IGNORECASE
)
_NOT_ALIAS = frozenset(
    "where on join inner left right full outer cross natural group order limit having union "
    "intersect except using window as select from and or not offset values".split()
)
_MAX_COLUMNS = 25  # a table listed in a hint shows at most this many columns

AGGREGATE_HINT = (
    "Hint: an aggregate such as COUNT() cannot be used in WHERE or inside another aggregate: "
    "GROUP BY the entity, then filter groups with HAVING COUNT(...) > n or sort them with "
    "ORDER BY COUNT(...) DESC LIMIT 1."
)


def _bare(name: str) -> str:
    return name.strip('"`[]')


def query_sources(schema: Schema, sql: str) -> dict[str, tuple[Table, str]]:
    """The tables ``sql`` reads, keyed by the lower-cased name it refers to them by (the
    alias, and the table's own name), with that name as written."""
    tables = {t.name.lower(): t for t in schema.tables}
    sources: dict[str, tuple[Table, str]] = {}
    for match in _SOURCE.finditer(sql):
        table = tables.get(_bare(match.group("table")).lower())
        if table is None:
            continue
        sources.setdefault(table.name.lower(), (table, table.name))
        alias = match.group("alias")
        if alias and _bare(alias).lower() not in _NOT_ALIAS:
            sources[_bare(alias).lower()] = (table, _bare(alias))
    return sources


def _columns(table: Table) -> str:
    names = [c.name for c in table.columns]
    shown = ", ".join(names[:_MAX_COLUMNS])
    return shown + (f", ... ({len(names)} in all)" if len(names) > _MAX_COLUMNS else "")


def _holder(table: Table, column: str) -> str | None:
    """``column``'s real spelling in ``table``, or None."""
    for c in table.columns:
        if c.name.lower() == column.lower():
            return c.name
    return None


def _names_for(sources: dict[str, tuple[Table, str]], table: Table) -> str:
    """What the query calls ``table``: its alias when it has one."""
    aliases = [spelled for t, spelled in sources.values() if t is table and spelled != table.name]
    return aliases[0] if aliases else table.name


def query_hint(
    schema: Schema, sql: str, error: str, compiles: Callable[[str], bool] | None = None
) -> str | None:
    """A one-line repair hint for ``sql``, which failed with ``error``; None when there is none.

    ``compiles`` checks a repaired query; when given and the repair compiles, the hint
    shows the repaired query.
    """
    if _AGGREGATE.search(error):
        return AGGREGATE_HINT
    match = _NO_SUCH_COLUMN.search(error)
    if match is None:
        return None
    written = match.group(1)
    qualifier, _, column = written.rpartition(".")
    column = _bare(column)
    sources = query_sources(schema, sql)
    used = list(dict.fromkeys(t for t, _ in sources.values()))  # each table once, in query order
    elsewhere = [t for t in schema.tables if t not in used and _holder(t, column)]
    fix: tuple[str, str] | None = None  # (what was written, what to write)
    exact: list[Table] = []
    parts: list[str] = []
    if qualifier:
        ref = sources.get(_bare(qualifier).lower(), (None, ""))[0]
        holders = [t for t in used if _holder(t, column)]
        if ref is None:
            names = ", ".join(
                f"{t.name} AS {_names_for(sources, t)}" if _names_for(sources, t) != t.name else t.name for t in used
            )
            parts.append(f"this query has no table or alias {_bare(qualifier)}" + (f"; it reads {names}" if names else ""))
        else:
            parts.append(f"{_bare(qualifier)} is {ref.name} (columns: {_columns(ref)})")
        if holders:
            holder = holders[0]
            name = _names_for(sources, holder)
            real = _holder(holder, column)
            parts.append(f"{column} is a column of {holder.name}, which this query calls {name}: write {name}.{real}")
            fix = (written, f"{name}.{real}")
        elif ref is not None:
            close = difflib.get_close_matches(column.lower(), [c.name.lower() for c in ref.columns], n=1, cutoff=0.6)
            if close:
                real = _holder(ref, close[0])
                parts.append(f"did you mean {_bare(qualifier)}.{real}?")
                fix = (written, f"{_bare(qualifier)}.{real}")
    else:
        close_in_query = [
            (t, real)
            for t in used
            for real in difflib.get_close_matches(column.lower(), [c.name.lower() for c in t.columns], n=1, cutoff=0.75)
        ]
        exact = [t for t in used if _holder(t, column)]
        if exact:
            # The table is in the query, but not where the column is used (another
            # subquery's FROM): SQLite resolves a name only against its own query's tables.
            parts.append(
                f"{_holder(exact[0], column)} is a column of {exact[0].name}, which is not in the FROM "
                "of the query that uses it (a subquery's tables are visible only inside that subquery)"
            )
        elif close_in_query:
            table, real_lower = close_in_query[0]
            real = _holder(table, real_lower)
            name = _names_for(sources, table)
            parts.append(f"did you mean {name}.{real}?")
            fix = (written, f"{name}.{real}")
    if not fix and elsewhere and not (not qualifier and exact):
        target = elsewhere[0]
        real = _holder(target, column)
        join = _join_hint(schema, used, target)
        parts.append(f"{real} is a column of {target.name}, which this query does not read" + (f"; {join}" if join else ""))
    if not parts:
        return None
    text = "Hint: " + "; ".join(parts)
    text += "" if text.endswith("?") else "."
    if fix and compiles is not None:
        repaired = _replace_reference(sql, *fix)
        if repaired != sql and compiles(repaired):
            text += f" Corrected, it compiles:\n```sql\n{repaired}\n```"
    return text


def _join_hint(schema: Schema, used: list[Table], target: Table) -> str | None:
    """How ``target`` joins one of the query's tables, by the shortest foreign-key path."""
    best = None
    for table in used:
        path = schema.join_path(table.name, target.name)
        if path and (best is None or len(path) < len(best)):
            best = path
    if not best:
        return None
    return "join it on " + " AND ".join(f"{fk.from_table}.{fk.from_column} = {fk.to_table}.{fk.to_column}" for fk in best)


def _replace_reference(sql: str, written: str, replacement: str) -> str:
    """``sql`` with each whole-word occurrence of the column reference ``written`` replaced
    (outside string literals)."""
    pattern = re.compile(r"(?<![\w.$])" + re.escape(written) + r"(?![\w$])(?!\s*\()", re.IGNORECASE)
    pieces = re.split(r"('(?:[^']|'')*')", sql)  # odd pieces are string literals
    return "".join(p if i % 2 else pattern.sub(replacement, p) for i, p in enumerate(pieces))


_TRAILING_LIMIT = re.compile(r"\bLIMIT\s+(\d+)\s*;?\s*$", re.IGNORECASE)
_NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve").split()


def limit_hint(sql: str, question: str, shown_rows: int) -> str | None:
    """A hint for a query that ran and ends with ``LIMIT n`` where ``n`` is the number of
    rows ``run_query`` shows anyway and the question asks for no such number: a limit
    added to look at the rows, which would cut the answer if submitted.

    >>> limit_hint("SELECT name FROM ship ORDER BY name DESC LIMIT 5", "List the names.", 5) is not None
    True
    >>> limit_hint("SELECT name FROM ship LIMIT 5", "What are the top five ships?", 5) is None
    True
    """
    match = _TRAILING_LIMIT.search(sql)
    if match is None or int(match.group(1)) != shown_rows:
        return None
    n = shown_rows
    words = re.findall(r"[a-z]+|\d+", question.lower())
    if str(n) in words or (n < len(_NUMBER_WORDS) and _NUMBER_WORDS[n] in words):
        return None
    return (
        f"Hint: results show the first {n} rows anyway; the question asks for no {n} rows, "
        f"so a LIMIT {n} would cut the answer: run the query without it."
    )
