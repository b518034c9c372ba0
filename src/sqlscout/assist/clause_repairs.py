"""Repairs of a failed query whose clauses are misplaced rather than misnamed: an
aggregate condition in ``WHERE`` (it belongs in ``HAVING``, with a ``GROUP BY``), a
``WHERE`` written between two joins, a column two joined tables share left unqualified.

Called by :func:`sqlscout.env.hints.repair_hint` on SQLite's ``misuse of aggregate``,
``near "JOIN"`` and ``ambiguous column name`` errors; each returns the hint text with the
repaired query when the repair compiles.
"""

from __future__ import annotations

import re
from typing import Callable

from sqlscout.env.schema import ForeignKey, Schema, Table
from sqlscout.assist.sqltext import (
    COMPOUND,
    Hint,
    IDENT,
    JOIN,
    NOT_ALIAS,
    bare,
    corrected,
    blank_literals,
    column_of,
    is_named,
    name_words,
    names_for,
    one_select,
    plain_name,
    query_sources,
    reference_pattern,
    replace_reference,
    self_comparisons,
    top_level_and,
    top_level_split,
)

AGGREGATE_HINT = (
    "Hint: an aggregate such as COUNT() cannot be used in WHERE or inside another aggregate: "
    "GROUP BY the entity, then filter groups with HAVING COUNT(...) > n or sort them with "
    "ORDER BY COUNT(...) DESC LIMIT 1."
)


_AGGREGATE_CALL = re.compile(r"\b(?:COUNT|SUM|AVG|MIN|MAX|TOTAL|GROUP_CONCAT)\s*\(", re.IGNORECASE)
_CLAUSE = re.compile(r"\b(WHERE|GROUP\s+BY|HAVING|ORDER\s+BY|LIMIT)\b", re.IGNORECASE)
_CLAUSES = ("WHERE", "GROUP BY", "HAVING", "ORDER BY", "LIMIT")  # in the order SQLite wants them
_PLAIN_QUERY = re.compile(r"^\s*SELECT\s+(?P<select>.+?)\s+FROM\s+(?P<from>.+?)\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_COLUMN = re.compile(rf"^\s*(?:DISTINCT\s+)?(?P<name>{IDENT}(?:\.{IDENT})?)\s*$", re.IGNORECASE)


def aggregate_repair(schema: Schema, sql: str, compiles: Callable[[str], bool] | None, question: str | None) -> Hint:
    """:data:`AGGREGATE_HINT`, with the repaired query when one rewrite of a query without
    subqueries compiles: conditions on an aggregate move from WHERE to HAVING, and a query
    with no GROUP BY gets one. On one table, ``SELECT name FROM Highschooler ORDER BY
    COUNT(*) DESC LIMIT 1`` for "the most friends" counts the rows of the table the
    question names that references it: that table is joined and the rows grouped by the
    key it references. Where the question names no other table, the selected columns
    are the groups (not a key: a group per key counts one row); where it names one that
    no foreign key links, there is no repair."""
    blank = blank_literals(sql)
    parsed = _PLAIN_QUERY.match(blank)
    if compiles is None or parsed is None or not one_select(blank) or COMPOUND.search(blank):
        return Hint(AGGREGATE_HINT, None)
    starts = [
        (m.start(), re.sub(r"\s+", " ", m.group(1).upper())) for m in _CLAUSE.finditer(blank, parsed.start("from"))
    ]
    names = [n for _, n in starts]
    if len(set(names)) != len(names) or names != sorted(names, key=_CLAUSES.index):
        return Hint(AGGREGATE_HINT, None)  # clauses repeated or out of order: not this repair's to guess
    bounds = [s for s, _ in starts] + [parsed.end("from")]
    clause = {n: _CLAUSE.sub("", sql[bounds[i] : bounds[i + 1]], count=1).strip() for i, n in enumerate(names)}
    select = sql[parsed.start("select") : parsed.end("select")].strip()
    source = sql[parsed.start("from") : bounds[0]].strip()
    conditions = top_level_and(clause.get("WHERE", ""))
    if conditions is None or _AGGREGATE_CALL.search(source + clause.get("GROUP BY", "")):
        return Hint(AGGREGATE_HINT, None)
    having = [c for c in conditions if _AGGREGATE_CALL.search(c)]
    where = [c for c in conditions if not _AGGREGATE_CALL.search(c)]
    if not having and not clause.get("HAVING") and not _AGGREGATE_CALL.search(clause.get("ORDER BY", "")):
        return Hint(AGGREGATE_HINT, None)
    note, group = "", clause.get("GROUP BY")
    counted = _counted_table(schema, source, question)
    if isinstance(counted, tuple):
        table, fk, written = counted
        named = plain_name(table.name)
        source += f" JOIN {named} ON {named}.{fk.from_column} = {written}.{fk.to_column}"
        group = group or f"{written}.{fk.to_column}"
        owner = schema.table(fk.to_table)
        parts = [select, group, clause.get("ORDER BY", ""), *where, *having]
        for col in owner.columns:  # a name both tables have would be ambiguous now
            if column_of(table, col.name):
                parts = [replace_reference(p, col.name, f"{written}.{col.name}") for p in parts]
        select, group, clause["ORDER BY"] = parts[:3]
        where, having = parts[3 : 3 + len(where)], parts[3 + len(where) :]
        note = f" To count the {table.name} rows of each {owner.name}, join {table.name} and GROUP BY {group}."
    elif group is None and counted is None:
        items = top_level_split(select, ",")
        plain = [m.group("name") for m in map(_COLUMN.match, items) if m is not None]
        if not plain or len(plain) != len([i for i in items if not _AGGREGATE_CALL.search(i)]):
            return Hint(AGGREGATE_HINT, None)
        group = _group_of(schema, sql, source, plain)
        if group is None:
            return Hint(AGGREGATE_HINT, None)
    elif group is None:
        return Hint(AGGREGATE_HINT, None)
    having += top_level_and(clause.get("HAVING", "")) or []
    repaired = f"SELECT {select} FROM {source}"
    repaired += f" WHERE {' AND '.join(where)}" if where else ""
    repaired += f" GROUP BY {group}" + (f" HAVING {' AND '.join(having)}" if having else "")
    repaired += "".join(f" {n} {clause[n]}" for n in ("ORDER BY", "LIMIT") if clause.get(n))
    if repaired == sql or not compiles(repaired):
        return Hint(AGGREGATE_HINT, None)
    return Hint(f"{AGGREGATE_HINT}{note}" + corrected(repaired), repaired)


def ambiguity_repair(
    schema: Schema, sql: str, column: str, compiles: Callable[[str], bool] | None, question: str | None
) -> Hint | None:
    """A hint for an unqualified ``column`` that several tables of a query without
    subqueries have (``SELECT owner_id FROM Owners JOIN Dogs ON Owners.owner_id =
    Dogs.owner_id``): qualify it with one of them, the first that a join condition makes
    equal to another (then either gives the same rows), else the one the question names,
    else the first the query reads; with the repaired query when it compiles and the
    column is not used unqualified in a join condition (which relates two tables, so one
    qualifier for every use would break it). None when the query has subqueries, or
    reads one table twice (no qualifier tells them apart)."""
    blank = blank_literals(sql)
    if not one_select(blank):
        return None
    sources = query_sources(schema, sql)
    used = list(dict.fromkeys(t for t, _ in sources.values()))
    holders = [t for t in used if column_of(t, column)]
    if len(holders) < 2:
        return None
    names = {t.name: names_for(sources, t) for t in holders}
    conditions = [
        m.span()
        for m in re.finditer(r"\bON\b.*?(?=\bJOIN\b|\bWHERE\b|\bGROUP\b|\bORDER\b|\bLIMIT\b|$)", blank, re.I | re.S)
    ]
    in_join = any(a <= m.start() < b for m in reference_pattern(column).finditer(blank) for a, b in conditions)
    ref = rf"({IDENT})\.{re.escape(column)}(?![\w$])"
    equal = [
        {bare(m.group(1)).lower(), bare(m.group(2)).lower()}
        for m in re.finditer(rf"(?<![\w.$]){ref}\s*=\s*{ref}", blank, re.IGNORECASE)
    ]
    equated = [t for t in holders if any(names[t.name].lower() in pair and len(pair) == 2 for pair in equal)]
    named = [t for t in holders if question is not None and is_named(t.name, question)]
    chosen = (equated or (named if len(named) == 1 else []) or holders)[0]
    written = f"{names[chosen.name]}.{column_of(chosen, column)}"
    each = [names[t.name] if names[t.name] == t.name else f"{t.name} ({names[t.name]})" for t in holders]
    listed = ", ".join(each[:-1]) + " and " + each[-1]
    why = " (the join makes them equal)" if equated else ""
    text = f"Hint: {column} is a column of {listed}, which this query reads: write {written}{why}."
    repaired = replace_reference(sql, column, written)
    if in_join:  # a join condition relates two tables: one qualifier for every use would break it
        return Hint(text, None)
    if (
        compiles is None
        or repaired == sql
        or self_comparisons(repaired) - self_comparisons(sql)
        or not compiles(repaired)
    ):
        return Hint(text, None)
    return Hint(text + corrected(repaired), repaired)


WHERE_HINT = "Hint: WHERE comes after every JOIN ... ON of its FROM clause, never between them."


def where_after_joins(sql: str, compiles: Callable[[str], bool] | None) -> Hint:
    """:data:`WHERE_HINT` for ``FROM a WHERE x JOIN b ON ... [WHERE y]``, which SQLite
    rejects near JOIN, with the query that moves ``x`` after the joins (``WHERE x AND
    y``, a condition written twice kept once) when that compiles. Only for a query
    without subqueries, whose clauses can be found without a parser."""
    blank = blank_literals(sql)
    if compiles is None or not one_select(blank):
        return Hint(WHERE_HINT, None)
    early = re.search(r"\bWHERE\b", blank, re.IGNORECASE)
    join = JOIN.search(blank, early.end()) if early else None
    if early is None or join is None:
        return Hint(WHERE_HINT, None)
    ends = re.compile(r"\b(?:WHERE|GROUP\s+BY|HAVING|ORDER\s+BY|LIMIT)\b|;?\s*$", re.IGNORECASE)
    after = ends.search(blank, join.end())
    assert after is not None  # the pattern matches at the end of any text
    moved = top_level_and(sql[early.end() : join.start()]) or []
    joins = sql[join.start() : after.start()].rstrip()
    tail = sql[after.start() :]
    later = re.match(
        r"\s*WHERE\b(?P<cond>.*?)(?=\b(?:GROUP\s+BY|HAVING|ORDER\s+BY|LIMIT)\b|;?\s*$)", tail, re.IGNORECASE | re.DOTALL
    )
    kept = top_level_and(later.group("cond")) if later else []
    if not moved or kept is None:
        return Hint(WHERE_HINT, None)
    conditions = list(dict.fromkeys(moved + kept))
    rest = tail[later.end() :] if later else tail
    repaired = f"{sql[: early.start()].rstrip()} {joins} WHERE {' AND '.join(conditions)} {rest.strip()}".strip()
    if not compiles(repaired):
        return Hint(WHERE_HINT, None)
    return Hint(WHERE_HINT + corrected(repaired), repaired)


def _group_of(schema: Schema, sql: str, source: str, columns: list[str]) -> str | None:
    """What a query without GROUP BY that selects ``columns`` should group by. With joins:
    the key of the one table the columns are read from (each conductor, not each
    conductor's name), else the columns. On one table: the columns, unless one is a key
    (a group per key holds one row: no repair, None)."""
    sources = query_sources(schema, sql)
    used = list(dict.fromkeys(t for t, _ in sources.values()))
    owners = set()
    for name in columns:
        qualifier, _, column = name.rpartition(".")
        found = sources.get(bare(qualifier).lower(), (None, ""))[0] if qualifier else None
        owners.add(found or next((t for t in used if column_of(t, bare(column))), None))
    keys = {t: [c.name for c in t.columns if c.primary_key] for t in used}
    if JOIN.search(blank_literals(source)):
        owner = next(iter(owners)) if len(owners) == 1 else None
        if owner is not None and len(keys[owner]) == 1:
            return f"{names_for(sources, owner)}.{keys[owner][0]}"
        return ", ".join(columns)
    if any(bare(n.rpartition(".")[2]).lower() in {k.lower() for k in sum(keys.values(), [])} for n in columns):
        return None
    return ", ".join(columns)


def _counted_table(schema: Schema, source: str, question: str | None) -> tuple[Table, ForeignKey, str] | bool | None:
    """For a query on one table (``source``) whose aggregate counts the rows of another:
    (table, its foreign key, what the query calls the table it references) when one table
    that references it is named by the question (``friends`` names ``Friend``); of several
    keys to it, the one on the referencing table's earliest column (the rows' owner:
    ``Friend.student_id``, not ``friend_id``). False when the question names another
    table that none of its keys link (the count needs a join no key says how to make);
    None when it names none."""
    one = re.fullmatch(rf"(?P<table>{IDENT})(?:\s+(?:AS\s+)?(?P<alias>{IDENT}))?", source, re.IGNORECASE)
    if one is None or question is None or (one.group("alias") or "").lower() in NOT_ALIAS:
        return None
    owner = next((t for t in schema.tables if t.name.lower() == bare(one.group("table")).lower()), None)
    if owner is None:
        return None
    written = bare(one.group("alias") or one.group("table"))
    own = set(name_words(owner.name))
    words = {w.lower().removesuffix("s") for w in re.findall(r"[A-Za-z]+", question)}
    mentioned = [
        t for t in schema.tables
        if t is not owner and any(w in words for w in name_words(t.name) if w not in own and len(w) > 2)
    ]  # fmt: skip
    referencing: dict[str, list[ForeignKey]] = {}
    for fk in schema.referenced_by(owner.name):
        if fk.from_table.lower() != owner.name.lower():
            referencing.setdefault(fk.from_table.lower(), []).append(fk)
    named = [t for t in mentioned if t.name.lower() in referencing]
    if len(named) != 1:
        return False if mentioned else None
    table = named[0]
    position = {c.name.lower(): i for i, c in enumerate(table.columns)}
    fk = min(referencing[table.name.lower()], key=lambda f: position.get(f.from_column.lower(), len(position)))
    return table, fk, written


_GROUP_BY_ONE = re.compile(
    rf"\bGROUP\s+BY\s+(?P<name>{IDENT}(?:\.{IDENT})?)\s*(?=\bHAVING\b|\bORDER\b|\bLIMIT\b|;|$)", re.IGNORECASE
)
_LABEL = re.compile(r"name|title", re.IGNORECASE)
NEARLY_UNIQUE = 0.8  # a label shared by a few rows (people's names), not a category


def key_grouping_note(
    schema: Schema, sql: str, counts: Callable[[Table, str], tuple[int, int]], compiles: Callable[[str], bool]
) -> Hint | None:
    """For a query that ran and groups by a name where the table has a key: when a few of
    the table's rows share a name (``counts`` gives the rows with one and the distinct
    names), ``GROUP BY name`` merges them into one group; the note says so and shows the
    query grouped by the key. Spider's Highschooler has two students called Kyle: "the
    name of the high schooler with the most friends" grouped by name counts both as one.
    A column most of whose values repeat is a category (a degree's kind), never flagged.
    """
    blank = blank_literals(sql)
    if not one_select(blank) or COMPOUND.search(blank):
        return None
    group = _GROUP_BY_ONE.search(blank)
    if group is None:
        return None
    written = group.group("name")
    qualifier, _, column = written.rpartition(".")
    if not _LABEL.search(bare(column)):
        return None
    sources = query_sources(schema, sql)
    if qualifier:
        tables = [sources[bare(qualifier).lower()][0]] if bare(qualifier).lower() in sources else []
    else:
        tables = list(dict.fromkeys(t for t, _ in sources.values() if column_of(t, bare(column))))
    if len(tables) != 1:
        return None
    table = tables[0]
    real = column_of(table, bare(column))
    if table.key is None or real is None or real.lower() == table.key.lower():
        return None
    rows, distinct = counts(table, real)
    if not NEARLY_UNIQUE * rows <= distinct < rows:
        return None
    key = f"{names_for(sources, table)}.{table.key}"
    repaired = sql[: group.start("name")] + key + sql[group.end("name") :]
    if not compiles(repaired):
        return None
    text = (
        f"Note: {table.name}.{real} is not unique ({rows} rows, {distinct} distinct values): GROUP BY {written} "
        f"counts rows that share a {real} together, as one. To count each {table.name} row on its own, "
        f"GROUP BY its key {key}."
    )
    return Hint(text + corrected(repaired), repaired)
