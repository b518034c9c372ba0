"""Query-aware repair hints for a failed ``run_query`` (``EpisodeConfig.query_hints``).

Small untrained models mostly fail on names: they qualify a column with the wrong alias
(``T1.Make`` where ``T1`` is ``car_makers`` and ``Make`` lives in ``car_names AS T2``), or
use a column of a table the query never joins. SQLite only says ``no such column:
T1.Make``, and the schema-wide "did you mean" lists names from every table; the model then
resubmits the same query until the episode ends. A hint that reads the failing query's own
``FROM`` clause can say which table each alias is, where the column really is, and, when
one substitution repairs the query and the repaired query compiles, show it.

The failing query is read with sqlglot where it parses (:mod:`sqlscout.assist.sqltext`);
the error is sorted by the engine's table of messages (:mod:`sqlscout.env.engine_errors`).

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

from sqlscout.env.engine_errors import ErrorCategory, classify
from sqlscout.env.schema import ForeignKey, Schema, Table
from sqlscout.assist.clause_repairs import aggregate_repair, ambiguity_repair, where_after_joins
from sqlscout.assist.sqltext import (
    Hint,
    IDENT,
    QUOTED,
    bare,
    corrected,
    blank_literals,
    column_of,
    is_named,
    names_for,
    plain_name,
    query_sources,
    reference,
    reference_pattern,
    replace_reference,
    self_comparisons,
    substitute,
    visible_sources,
)

_STAR = re.compile(r"\bSELECT\s+(?:DISTINCT\s+|ALL\s+)?(?:[\w$]+\.)?\*", re.IGNORECASE)
_MAX_COLUMNS = 25  # a table listed in a hint shows at most this many columns


def _columns(table: Table) -> str:
    names = [c.name for c in table.columns]
    shown = ", ".join(names[:_MAX_COLUMNS])
    return shown + (f", ... ({len(names)} in all)" if len(names) > _MAX_COLUMNS else "")


def query_hint(
    schema: Schema, sql: str, error: str, compiles: Callable[[str], bool] | None = None, question: str | None = None,
    engine: str = "sqlite",
) -> str | None:
    """A one-line repair hint for ``sql``, which failed with ``error``; None when there is none.

    ``compiles`` checks a repaired query; when given and the repair compiles, the hint
    shows the repaired query.
    """
    found = repair_hint(schema, sql, error, compiles, question, engine)
    return None if found is None else found.text


def chained_repair(
    schema: Schema,
    sql: str,
    error: str,
    explain: Callable[[str], str | None],
    question: str | None = None,
    depth: int = 2,
    engine: str = "sqlite",
) -> Hint | None:
    """:func:`repair_hint`, where a repair that does not compile yet may be repaired again.

    ``explain`` compiles a query: None when it compiles, else its error. A query with two
    mistakes (``ambiguous column name`` on a query that also counts without ``GROUP BY``)
    gets the first repair, whose own error then gets the second; the hint says both and
    shows the query both make, when it compiles. At most ``depth`` repairs in a row.
    """
    then: dict[str, Hint] = {}

    def compiles(candidate: str) -> bool:
        failed = explain(candidate)
        if failed is None:
            return True
        if depth < 2 or candidate in then:
            return candidate in then
        found = chained_repair(schema, candidate, failed, explain, question, depth - 1, engine)
        if found is None or found.repaired is None:
            return False
        then[candidate] = found
        return True

    hint = repair_hint(schema, sql, error, compiles, question, engine)
    if hint is None or hint.repaired not in then:
        return hint
    second = then[hint.repaired]
    return Hint(hint.text.removesuffix(corrected(hint.repaired)) + "\n" + second.text, second.repaired)


def repair_hint(
    schema: Schema,
    sql: str,
    error: str,
    compiles: Callable[[str], bool] | None = None,
    question: str | None = None,
    engine: str = "sqlite",
) -> Hint | None:
    """:func:`query_hint` with the repaired query it shows, if any. ``question``, when
    given, decides between reading another table in place of one that lacks a joined
    column and joining the table that has it: a table the question names is kept."""
    category, name = classify(error, engine)
    if category is ErrorCategory.UNKNOWN_QUALIFIER and name is not None:
        # The engine named only the table or alias ("T3"); the first column the query
        # reads through it makes the error SQLite would give ("no such column: T3.Name").
        used = re.search(rf"(?<![\w.$]){re.escape(bare(name))}\.({IDENT})", blank_literals(sql), re.IGNORECASE)
        category, name = (ErrorCategory.UNKNOWN_COLUMN, used.group(0)) if used else (category, None)
    if category is ErrorCategory.AGGREGATE_MISUSE:
        return aggregate_repair(schema, sql, compiles, question)
    if category is ErrorCategory.JOIN_SYNTAX:
        return where_after_joins(sql, compiles)
    if category is ErrorCategory.AMBIGUOUS_COLUMN and name is not None:
        return ambiguity_repair(schema, sql, bare(name), compiles, question)
    if category is ErrorCategory.UNKNOWN_TABLE and name is not None:
        return _table_name_repair(schema, sql, bare(name), compiles)
    if category is not ErrorCategory.UNKNOWN_COLUMN or name is None:
        return None
    written = name
    qualifier, _, column = written.rpartition(".")
    column = bare(column)
    where = reference(sql, written)
    everywhere = query_sources(schema, sql)
    sources = query_sources(schema, sql, where) if where is not None else everywhere
    used = list(dict.fromkeys(t for t, _ in sources.values()))  # each table once, in query order
    in_query = list(dict.fromkeys(t for t, _ in everywhere.values()))
    out_of_scope = [t for t in in_query if t not in used and column_of(t, column)]
    elsewhere = [t for t in schema.tables if t not in in_query and column_of(t, column)]
    # "Genre.Name" where the query does not read Genre: Genre's Name, not the first Name
    # found; else the table fewest foreign keys away from the query's own (the country's
    # Name for a query on countrylanguage, not the Name of a city two joins off).
    elsewhere.sort(key=lambda t: (t.name.lower() != bare(qualifier).lower(), _distance(schema, in_query, t)))
    fix: tuple[str, str] | None = None  # (what was written, what to write)
    parts: list[str] = []
    ref = sources.get(bare(qualifier).lower(), (None, ""))[0] if qualifier else None
    if qualifier and ref is None:
        names = ", ".join(
            f"{t.name} AS {names_for(sources, t)}" if names_for(sources, t) != t.name else t.name for t in used
        )
        where_text = "this query" if where is None or len(used) == len(in_query) else "the query that uses it"
        parts.append(f"{where_text} has no table or alias {bare(qualifier)}" + (f"; it reads {names}" if names else ""))
    elif ref is not None:
        parts.append(f"{bare(qualifier)} is {ref.name} (columns: {_columns(ref)})")
    holders = [t for t in used if column_of(t, column)]
    close = [
        (t, real)
        for t in ([ref] if ref is not None else used)
        for real in difflib.get_close_matches(column.lower(), [c.name.lower() for c in t.columns], n=1, cutoff=0.6)
    ]
    candidate: str | None = None  # a repaired query, to show if it compiles
    # Qualifying the column with the table it is compared with would compare it with
    # itself: the query read the wrong table, and a table that has the column is wanted.
    wrong_table = bool(
        ref is not None
        and holders
        and self_comparisons(replace_reference(sql, written, _qualified(sources, holders[0], column)))
        - self_comparisons(sql)
    )
    swap = (
        _table_swap(schema, sql, qualifier, ref, column, in_query, question)
        if wrong_table and ref is not None
        else None
    )
    if swap is not None:
        parts.append(swap[0])
        candidate = swap[1]
    elif holders and not wrong_table:
        holder = holders[0]
        fix = (written, _qualified(sources, holder, column))
        parts.append(
            f"{column} is a column of {holder.name}, which this query calls {names_for(sources, holder)}: write {fix[1]}"
        )
    elif out_of_scope:
        # SQLite resolves a name only against the FROM of its own query and those around it.
        parts.append(
            f"{column_of(out_of_scope[0], column)} is a column of {out_of_scope[0].name}, which is not in the "
            "FROM of the query that uses it (a subquery's tables are visible only inside that subquery, "
            "and each SELECT of a UNION, INTERSECT or EXCEPT sees only its own)"
        )
    elif close and (ref is not None or not elsewhere):  # a column that exists beats a look-alike
        table, real_lower = close[0]
        name = bare(qualifier) if ref is not None else names_for(sources, table)
        real = column_of(table, real_lower)
        parts.append(f"did you mean {name}.{real}?")
        fix = (written, f"{name}.{real}")
    if fix:
        candidate = replace_reference(sql, *fix)
    elif candidate is None and not out_of_scope and elsewhere:
        target = elsewhere[0]
        path = _join_path(schema, [ref] if wrong_table and ref is not None else used or in_query, target)
        parts.append(
            f"{column_of(target, column)} is a column of {target.name}, which this query does not read"
            + ("; join it on " + " AND ".join(fk.plain_condition() for fk in path[1]) if path else "")
        )
        if path and where is not None:
            candidate = _join_repair(schema, sql, written, sources, path[0], path[1], target)
    if not parts:
        return None
    text = "Hint: " + "; ".join(parts)
    text += "" if text.endswith("?") else "."
    if (
        candidate is not None
        and candidate != sql
        and compiles is not None
        and not self_comparisons(candidate) - self_comparisons(sql)
        and compiles(candidate)
    ):
        return Hint(text + corrected(candidate), candidate)
    return Hint(text, None)


def _qualified(sources: dict[str, tuple[Table, str]], table: Table, column: str) -> str:
    return f"{names_for(sources, table)}.{column_of(table, column)}"


def _table_swap(
    schema: Schema, sql: str, qualifier: str, ref: Table, column: str, in_query: list[Table], question: str | None
) -> tuple[str, str] | None:
    """(hint text, repaired query) reading another table in place of ``ref``, which the
    query reads once and which lacks ``column``: the one table outside the query that has
    ``column`` and every other column the query reads through ``qualifier`` (among
    several, the one a foreign key links to the query's other tables); None if none is, or
    if the question names ``ref`` and not that table (then ``ref`` is wanted, joined to the
    table that has ``column``)."""
    blank = blank_literals(sql)
    reads = [m for _, t, m in visible_sources(schema, sql, None) if t is ref]
    if len(reads) != 1:
        return None
    through = re.compile(rf"(?<![\w.$]){re.escape(qualifier)}\.(?P<column>{IDENT})", re.IGNORECASE)
    uses = list(through.finditer(blank))
    needed = list(dict.fromkeys([column] + [bare(m.group("column")) for m in uses]))
    fits = [t for t in schema.tables if t not in in_query and all(column_of(t, c) for c in needed)]
    others = {t.name for t in in_query if t is not ref}
    if len(fits) > 1:
        linked = {fk.from_table for fk in schema.foreign_keys if fk.to_table in others}
        linked |= {fk.to_table for fk in schema.foreign_keys if fk.from_table in others}
        fits = [t for t in fits if t.name in linked]
    if len(fits) != 1:
        return None
    new = fits[0]
    if question is not None and is_named(ref.name, question) and not is_named(new.name, question):
        return None
    name = plain_name(new.name)
    edits = [(reads[0].start("table"), reads[0].end("table"), name)]
    if bare(qualifier).lower() == ref.name.lower():  # no alias: the qualifier is the table's name
        edits += [(m.start(), m.start("column") - 1, name) for m in uses]
    repaired = sql
    for start, end, text in sorted(edits, reverse=True):
        repaired = repaired[:start] + text + repaired[end:]
    also = f" (and {', '.join(needed[1:])}, which the query reads from it)" if len(needed) > 1 else ""
    text = f"{column} is not in {ref.name}; {new.name} has it{also}: read {new.name} in place of {ref.name}"
    return text, repaired


def _table_name_repair(schema: Schema, sql: str, written: str, compiles: Callable[[str], bool] | None) -> Hint | None:
    """A table the schema lacks but names closely (``employees`` for ``employee``): the
    query reading that table in its place, shown when it compiles; None otherwise (the
    error's own "did you mean" already names the candidates)."""
    names = {t.name.lower(): t.name for t in schema.tables}
    if compiles is None:
        return _column_as_table(schema, written)
    # "student_ enrolment": a name the model split with a space.
    split = re.search(rf"(?<![\w.$]){re.escape(written)}\s+([A-Za-z_]\w*)", blank_literals(sql), re.IGNORECASE)
    close = difflib.get_close_matches(written.lower(), list(names), n=1, cutoff=0.6)
    if split is not None and (written + split.group(1)).lower() in names:
        real, spelled = names[(written + split.group(1)).lower()], re.escape(split.group(0))
    elif close:
        real = names[close[0]]
        spelled = "|".join(re.escape(q[0] + written + q[1]) for q in ('""', "``", "[]")) + "|" + re.escape(written)
    else:
        return _column_as_table(schema, written)
    repaired = substitute(sql, re.compile(rf"(?<![\w.$])(?:{spelled})(?![\w$])", re.IGNORECASE), plain_name(real))
    if repaired == sql or not compiles(repaired):
        return _column_as_table(schema, written)
    return Hint(
        f"Hint: there is no table {written}; {real} is the table with the closest name." + corrected(repaired), repaired
    )


def _column_as_table(schema: Schema, written: str) -> Hint | None:
    """A table name the schema has as a column (``Abandoned_yn`` for ``Dogs.abandoned_yn``):
    which tables have it; None when none does. The 0.5B model joined such a name as a
    table and, told only the real table names, wrote the same join again."""
    found = [(t.name, c.name) for t in schema.tables for c in t.columns if c.name.lower() == written.lower()]
    if not found:
        return None
    tables = ", ".join(t for t, _ in found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    return Hint(f"Hint: there is no table {written}; {found[0][1]} is a column of {tables}, not a table.", None)


def _distance(schema: Schema, used: list[Table], target: Table) -> int:
    """How many foreign keys join ``target`` to the nearest of ``used`` (a large number
    when none does)."""
    found = _join_path(schema, used, target)
    return len(found[1]) if found else 1_000


def _join_path(schema: Schema, used: list[Table], target: Table) -> tuple[Table, list[ForeignKey]] | None:
    """The shortest foreign-key path from one of the query's tables to ``target``, with
    the table it starts from."""
    best = None
    for table in used:
        path = schema.join_path(table.name, target.name)
        if path and (best is None or len(path) < len(best[1])):
            best = (table, path)
    return best


def _join_repair(
    schema: Schema,
    sql: str,
    written: str,
    sources: dict[str, tuple[Table, str]],
    start: Table,
    path: list[ForeignKey],
    target: Table,
) -> str | None:
    """``sql`` with the tables of ``path`` joined to ``start`` in the scope of ``written``,
    ``written`` qualified with ``target``, and each unqualified name the new tables make
    ambiguous qualified with the table that had it; None where that cannot be done by
    substitution (a ``*`` the new tables would widen, a path table already read)."""
    scope = {t.name for t, _ in sources.values()}
    names = {t: plain_name(t) for t in scope}
    names[start.name] = names_for(sources, start)
    joined, here, steps = [], start.name, []
    for fk in path:
        there = fk.to_table if fk.from_table == here else fk.from_table
        if there in scope:
            return None
        names[there] = plain_name(there)
        cond = f"{names[fk.from_table]}.{fk.from_column} = {names[fk.to_table]}.{fk.to_column}"
        steps.append(f" JOIN {names[there]} ON {cond}")
        joined.append(schema.table(there))
        here = there
    if _STAR.search(sql):
        return None
    column = column_of(target, written.rpartition(".")[2].strip('"`[]')) or ""
    repaired = replace_reference(sql, written, f"{names[target.name]}.{column}")
    kept = [t for t, _ in sources.values()]
    for table in joined:
        for col in table.columns:
            holder = next((t for t in kept if column_of(t, col.name)), None)
            if holder is not None and col.name.lower() != column.lower():
                repaired = replace_reference(
                    repaired, col.name, f"{names_for(sources, holder)}.{column_of(holder, col.name)}"
                )
    # Each (sub)query that uses the column gets the join in its own FROM: a subquery such
    # as "(SELECT MIN(Horsepower) FROM car_names)" does not see the outer query's tables.
    anchors: set[int] = set()
    for use in reference_pattern(f"{names[target.name]}.{column}").finditer(blank_literals(repaired)):
        here = [(depth, m) for depth, t, m in visible_sources(schema, repaired, use.start()) if t is start]
        if not here:
            return None
        anchor = max(here, key=lambda f: f[0])[1]
        if bare(anchor.group("alias") or anchor.group("table")).lower() != bare(names[start.name]).lower():
            return None  # that scope calls the table by another name than the join condition
        anchors.add(anchor.end())
    for end in sorted(anchors, reverse=True):
        repaired = repaired[:end] + "".join(steps) + repaired[end:]
    return repaired if anchors else None


_TRAILING_LIMIT = re.compile(r"\bLIMIT\s+(\d+)\s*;?\s*$", re.IGNORECASE)
_NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve").split()


def without_limit(sql: str) -> str:
    """``sql`` without its trailing ``LIMIT n``.

    >>> without_limit("SELECT name FROM ship ORDER BY name LIMIT 5;")
    'SELECT name FROM ship ORDER BY name'
    """
    return _TRAILING_LIMIT.sub("", sql).rstrip()


def limit_hint(sql: str, question: str, shown_rows: int) -> str | None:
    """The note for a query that ends with ``LIMIT n`` (n > 1) where the question asks for
    no such number: a limit added to look at the rows (``run_query`` shows ``shown_rows``
    anyway), which would cut the answer if submitted; the episode runs the query without
    it (:func:`without_limit`) in its place. ``LIMIT 1`` is left alone: it is how a
    superlative is written.

    >>> limit_hint("SELECT name FROM ship ORDER BY name DESC LIMIT 5", "List the names.", 5) is not None
    True
    >>> limit_hint("SELECT name FROM ship LIMIT 5", "What are the top five ships?", 5) is None
    True
    >>> print(limit_hint("SELECT name FROM ship LIMIT 10", "List the names.", 5))
    Ran without its LIMIT 10: the question asks for no 10 rows, so the LIMIT would cut the answer (results show the first 5 rows anyway).
    >>> limit_hint("SELECT name FROM ship ORDER BY tonnage DESC LIMIT 1", "Which ship is heaviest?", 5) is None
    True
    """
    match = _TRAILING_LIMIT.search(sql)
    if match is None or int(match.group(1)) < 2:
        return None
    n = int(match.group(1))
    words = re.findall(r"[a-z]+|\d+", question.lower())
    if str(n) in words or (n < len(_NUMBER_WORDS) and _NUMBER_WORDS[n] in words):
        return None
    if n == shown_rows:
        return (
            f"Ran without its LIMIT {n}: results show the first {n} rows anyway, and the question asks for "
            f"no {n} rows, so the LIMIT would cut the answer."
        )
    return (
        f"Ran without its LIMIT {n}: the question asks for no {n} rows, so the LIMIT would cut the answer "
        f"(results show the first {shown_rows} rows anyway)."
    )
