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
from dataclasses import dataclass
from typing import Callable

from sqlscout.env.schema import ForeignKey, Schema, Table, quote_identifier

_QUOTED = r"\"[^\"]+\"|`[^`]+`|\[[^\]]+\]"  # a quoted name, in any of SQLite's three quotes
_IDENT = rf"(?:{_QUOTED}|[A-Za-z_][\w$]*)"
_NAME_PART = rf"(?:{_QUOTED}|[^\s.]+)"  # one part of a name in an error message
_NO_SUCH_COLUMN = re.compile(rf"no such column: ({_NAME_PART}(?:\.{_NAME_PART})?)")
_NO_SUCH_TABLE = re.compile(rf"no such table: ({_NAME_PART})")
_AGGREGATE = re.compile(r"misuse of (?:aggregate|window function)|HAVING clause on a non-aggregate query")
_AMBIGUOUS = re.compile(rf"ambiguous column name: ({_NAME_PART})$")
_NEAR_JOIN = re.compile(r'near "(?:JOIN|LEFT|INNER|CROSS|NATURAL)": syntax error', re.IGNORECASE)
_JOIN = re.compile(r"\b(?:(?:LEFT|RIGHT|FULL|INNER|CROSS|NATURAL)\s+(?:OUTER\s+)?)?JOIN\b", re.IGNORECASE)
_NOT_ALIAS = frozenset(
    "where on join inner left right full outer cross natural group order limit having union "
    "intersect except using window as select from and or not offset values".split()
)
# A table named after FROM, JOIN or a comma, with its alias when it has one. A keyword is
# never taken for an alias: after "SELECT a, b" the FROM that follows must stay a FROM.
_SOURCE = re.compile(
    rf"(?:\bFROM|\bJOIN|,)\s+(?P<table>{_IDENT})(?!\s*\.)"  # not "t.col" in a list
    rf"(?:\s+(?:AS\s+)?(?!(?:{'|'.join(sorted(_NOT_ALIAS))})\b)(?P<alias>{_IDENT}))?",
    re.IGNORECASE,
)
_STAR = re.compile(r"\bSELECT\s+(?:DISTINCT\s+|ALL\s+)?(?:[\w$]+\.)?\*", re.IGNORECASE)
_COMPOUND = re.compile(r"\b(?:UNION|INTERSECT|EXCEPT)\b", re.IGNORECASE)
_MAX_COLUMNS = 25  # a table listed in a hint shows at most this many columns

AGGREGATE_HINT = (
    "Hint: an aggregate such as COUNT() cannot be used in WHERE or inside another aggregate: "
    "GROUP BY the entity, then filter groups with HAVING COUNT(...) > n or sort them with "
    "ORDER BY COUNT(...) DESC LIMIT 1."
)


def _bare(name: str) -> str:
    return name.strip('"`[]')


def query_sources(schema: Schema, sql: str, at: int | None = None) -> dict[str, tuple[Table, str]]:
    """The tables ``sql`` reads, keyed by the lower-cased name it refers to them by (the
    alias, and the table's own name), with that name as written. With ``at``, only those
    a name at that offset can see: the FROM of its own (sub)query and of the queries
    around it, not of a subquery beside or inside it nor of another arm of a compound query."""
    found: list[tuple[int, Table, str | None]] = []  # (nesting depth, table, alias)
    for depth, table, match in _visible_sources(schema, sql, at):
        alias = match.group("alias")
        found.append((depth, table, _bare(alias) if alias and _bare(alias).lower() not in _NOT_ALIAS else None))
    if at is not None:
        found.sort(key=lambda f: -f[0])  # the nearest FROM first: it is the one a name resolves in
    sources: dict[str, tuple[Table, str]] = {}
    for _, table, alias in found:
        sources.setdefault(table.name.lower(), (table, table.name))
        if alias:
            sources.setdefault(alias.lower(), (table, alias))
    return sources


def _visible_sources(schema: Schema, sql: str, at: int | None) -> list[tuple[int, Table, re.Match[str]]]:
    """(nesting depth, table, match) of each table named after FROM, JOIN or a comma in
    ``sql``; with ``at``, only those a name at that offset can see. A table is visible
    from its own (sub)query and those inside it, not from a subquery beside it nor from
    another arm of a compound query (``UNION``, ``INTERSECT``, ``EXCEPT``) at its level."""
    tables = {t.name.lower(): t for t in schema.tables}
    spans = _paren_spans(sql)
    seen_from = None if at is None else [sp for sp in spans if sp[0] < at < sp[1]]
    breaks = [(m.start(), _innermost(spans, m.start())) for m in _COMPOUND.finditer(_blank_literals(sql))]
    found = []
    for match in _SOURCE.finditer(sql):
        table = tables.get(_bare(match.group("table")).lower())
        if table is None:
            continue
        inner = [sp for sp in spans if sp[0] < match.start() < sp[1]]
        level = max(inner) if inner else None  # the innermost parenthesis around it
        if seen_from is not None:
            if level is not None and level not in seen_from:
                continue  # its innermost parenthesis does not hold `at`
            low, high = sorted((match.start(), at))  # type: ignore[type-var]
            if any(low < pos < high and span == level for pos, span in breaks):
                continue  # another arm of a compound query
        found.append((len(inner), table, match))
    return found


def _innermost(spans: list[tuple[int, int]], at: int) -> tuple[int, int] | None:
    inner = [sp for sp in spans if sp[0] < at < sp[1]]
    return max(inner) if inner else None


def _paren_spans(sql: str) -> list[tuple[int, int]]:
    """(open, close) offsets of every parenthesis pair outside string literals and quoted
    names; an unclosed one reaches the end."""
    spans: list[tuple[int, int]] = []
    stack: list[int] = []
    quote = ""
    for i, ch in enumerate(sql):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            stack.append(i)
        elif ch == ")" and stack:
            spans.append((stack.pop(), i))
    return spans + [(i, len(sql)) for i in stack]


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
    schema: Schema, sql: str, error: str, compiles: Callable[[str], bool] | None = None, question: str | None = None
) -> str | None:
    """A one-line repair hint for ``sql``, which failed with ``error``; None when there is none.

    ``compiles`` checks a repaired query; when given and the repair compiles, the hint
    shows the repaired query.
    """
    found = repair_hint(schema, sql, error, compiles, question)
    return None if found is None else found.text


@dataclass(frozen=True)
class Hint:
    text: str
    repaired: str | None  # the repaired query the text shows, when one compiles


def repair_hint(
    schema: Schema, sql: str, error: str, compiles: Callable[[str], bool] | None = None, question: str | None = None
) -> Hint | None:
    """:func:`query_hint` with the repaired query it shows, if any. ``question``, when
    given, decides between reading another table in place of one that lacks a joined
    column and joining the table that has it: a table the question names is kept."""
    if _AGGREGATE.search(error):
        return _aggregate_repair(schema, sql, compiles, question)
    if _NEAR_JOIN.search(error):
        return _where_after_joins(sql, compiles)
    ambiguous = _AMBIGUOUS.search(error)
    if ambiguous is not None:
        return _ambiguity_repair(schema, sql, _bare(ambiguous.group(1)), compiles, question)
    unknown_table = _NO_SUCH_TABLE.search(error)
    if unknown_table is not None:
        return _table_name_repair(schema, sql, _bare(unknown_table.group(1)), compiles)
    match = _NO_SUCH_COLUMN.search(error)
    if match is None:
        return None
    written = match.group(1)
    qualifier, _, column = written.rpartition(".")
    column = _bare(column)
    where = _reference(sql, written)
    everywhere = query_sources(schema, sql)
    sources = query_sources(schema, sql, where) if where is not None else everywhere
    used = list(dict.fromkeys(t for t, _ in sources.values()))  # each table once, in query order
    in_query = list(dict.fromkeys(t for t, _ in everywhere.values()))
    out_of_scope = [t for t in in_query if t not in used and _holder(t, column)]
    elsewhere = [t for t in schema.tables if t not in in_query and _holder(t, column)]
    # "Genre.Name" where the query does not read Genre: Genre's Name, not the first Name
    # found; else the table fewest foreign keys away from the query's own (the country's
    # Name for a query on countrylanguage, not the Name of a city two joins off).
    elsewhere.sort(key=lambda t: (t.name.lower() != _bare(qualifier).lower(), _distance(schema, in_query, t)))
    fix: tuple[str, str] | None = None  # (what was written, what to write)
    parts: list[str] = []
    ref = sources.get(_bare(qualifier).lower(), (None, ""))[0] if qualifier else None
    if qualifier and ref is None:
        names = ", ".join(
            f"{t.name} AS {_names_for(sources, t)}" if _names_for(sources, t) != t.name else t.name for t in used
        )
        where_text = "this query" if where is None or len(used) == len(in_query) else "the query that uses it"
        parts.append(f"{where_text} has no table or alias {_bare(qualifier)}" + (f"; it reads {names}" if names else ""))
    elif ref is not None:
        parts.append(f"{_bare(qualifier)} is {ref.name} (columns: {_columns(ref)})")
    holders = [t for t in used if _holder(t, column)]
    close = [
        (t, real)
        for t in ([ref] if ref is not None else used)
        for real in difflib.get_close_matches(
            column.lower(), [c.name.lower() for c in t.columns], n=1, cutoff=0.6
        )
    ]
    candidate: str | None = None  # a repaired query, to show if it compiles
    # Qualifying the column with the table it is compared with would compare it with
    # itself: the query read the wrong table, and a table that has the column is wanted.
    wrong_table = bool(
        ref is not None
        and holders
        and _self_comparisons(_replace_reference(sql, written, _qualified(sources, holders[0], column)))
        - _self_comparisons(sql)
    )
    swap = _table_swap(schema, sql, qualifier, ref, column, in_query, question) if wrong_table and ref is not None else None
    if swap is not None:
        parts.append(swap[0])
        candidate = swap[1]
    elif holders and not wrong_table:
        holder = holders[0]
        fix = (written, _qualified(sources, holder, column))
        parts.append(f"{column} is a column of {holder.name}, which this query calls {_names_for(sources, holder)}: write {fix[1]}")
    elif out_of_scope:
        # SQLite resolves a name only against the FROM of its own query and those around it.
        parts.append(
            f"{_holder(out_of_scope[0], column)} is a column of {out_of_scope[0].name}, which is not in the "
            "FROM of the query that uses it (a subquery's tables are visible only inside that subquery, "
            "and each SELECT of a UNION, INTERSECT or EXCEPT sees only its own)"
        )
    elif close and (ref is not None or not elsewhere):  # a column that exists beats a look-alike
        table, real_lower = close[0]
        name = _bare(qualifier) if ref is not None else _names_for(sources, table)
        real = _holder(table, real_lower)
        parts.append(f"did you mean {name}.{real}?")
        fix = (written, f"{name}.{real}")
    if fix:
        candidate = _replace_reference(sql, *fix)
    elif candidate is None and not out_of_scope and elsewhere:
        target = elsewhere[0]
        path = _join_path(schema, [ref] if wrong_table and ref is not None else used or in_query, target)
        parts.append(
            f"{_holder(target, column)} is a column of {target.name}, which this query does not read"
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
        and not _self_comparisons(candidate) - _self_comparisons(sql)
        and compiles(candidate)
    ):
        return Hint(text + f" Corrected, it compiles:\n```sql\n{candidate}\n```", candidate)
    return Hint(text, None)


def _one_select(blank: str) -> bool:
    """Whether a query (string literals blanked) has one SELECT: no subquery, whose clauses
    the rewrites here could not tell from the outer query's."""
    return len(re.findall(r"\bSELECT\b", blank, re.IGNORECASE)) == 1


def _named(table: str, question: str) -> bool:
    """Whether every word of a table's name (``PlaylistTrack``: playlist, track) is in
    ``question``, plural or not."""
    words = {w.lower().removesuffix("s") for w in re.findall(r"[A-Za-z]+", question)}
    parts = _name_words(table)
    return bool(parts) and all(p in words for p in parts)


def _qualified(sources: dict[str, tuple[Table, str]], table: Table, column: str) -> str:
    return f"{_names_for(sources, table)}.{_holder(table, column)}"


def _table_swap(
    schema: Schema, sql: str, qualifier: str, ref: Table, column: str, in_query: list[Table], question: str | None
) -> tuple[str, str] | None:
    """(hint text, repaired query) reading another table in place of ``ref``, which the
    query reads once and which lacks ``column``: the one table outside the query that has
    ``column`` and every other column the query reads through ``qualifier`` (among
    several, the one a foreign key links to the query's other tables); None if none is, or
    if the question names ``ref`` and not that table (then ``ref`` is wanted, joined to the
    table that has ``column``)."""
    blank = _blank_literals(sql)
    reads = [m for m in _SOURCE.finditer(sql) if _bare(m.group("table")).lower() == ref.name.lower()]
    if len(reads) != 1:
        return None
    through = re.compile(rf"(?<![\w.$]){re.escape(qualifier)}\.(?P<column>{_IDENT})", re.IGNORECASE)
    uses = list(through.finditer(blank))
    needed = list(dict.fromkeys([column] + [_bare(m.group("column")) for m in uses]))
    fits = [t for t in schema.tables if t not in in_query and all(_holder(t, c) for c in needed)]
    others = {t.name for t in in_query if t is not ref}
    if len(fits) > 1:
        linked = {fk.from_table for fk in schema.foreign_keys if fk.to_table in others}
        linked |= {fk.to_table for fk in schema.foreign_keys if fk.from_table in others}
        fits = [t for t in fits if t.name in linked]
    if len(fits) != 1:
        return None
    new = fits[0]
    if question is not None and _named(ref.name, question) and not _named(new.name, question):
        return None
    name = _plain(new.name)
    edits = [(reads[0].start("table"), reads[0].end("table"), name)]
    if _bare(qualifier).lower() == ref.name.lower():  # no alias: the qualifier is the table's name
        edits += [(m.start(), m.start("column") - 1, name) for m in uses]
    repaired = sql
    for start, end, text in sorted(edits, reverse=True):
        repaired = repaired[:start] + text + repaired[end:]
    also = f" (and {', '.join(needed[1:])}, which the query reads from it)" if len(needed) > 1 else ""
    text = f"{column} is not in {ref.name}; {new.name} has it{also}: read {new.name} in place of {ref.name}"
    return text, repaired


_SELF_COMPARISON = re.compile(r"(?<![\w.$])([\w$]+\.[\w$]+)\s*(?:=|<>|!=)\s*\1(?![\w$.])", re.IGNORECASE)


def _self_comparisons(sql: str) -> set[str]:
    """Columns compared with themselves (``T1.ArtistId = T1.ArtistId``): a repair that
    makes one has turned a join condition into nothing, however well it compiles."""
    return {m.group(1).lower() for m in _SELF_COMPARISON.finditer(_blank_literals(sql))}


def _reference(sql: str, written: str) -> int | None:
    """The offset of the first use of the column reference ``written`` outside string
    literals, or None."""
    match = _reference_pattern(written).search(_blank_literals(sql))
    return match.start() if match else None


def _reference_pattern(written: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w.$])" + re.escape(written) + r"(?![\w$])(?!\s*\()", re.IGNORECASE)


def _blank_literals(sql: str) -> str:
    """``sql`` with the insides of its string literals blanked, offsets kept."""
    return re.sub(r"'(?:[^']|'')*'", lambda m: "'" + " " * (len(m.group()) - 2) + "'", sql)


def _table_name_repair(schema: Schema, sql: str, written: str, compiles: Callable[[str], bool] | None) -> Hint | None:
    """A table the schema lacks but names closely (``employees`` for ``employee``): the
    query reading that table in its place, shown when it compiles; None otherwise (the
    error's own "did you mean" already names the candidates)."""
    names = {t.name.lower(): t.name for t in schema.tables}
    if compiles is None:
        return None
    # "student_ enrolment": a name the model split with a space.
    split = re.search(rf"(?<![\w.$]){re.escape(written)}\s+([A-Za-z_]\w*)", _blank_literals(sql), re.IGNORECASE)
    close = difflib.get_close_matches(written.lower(), list(names), n=1, cutoff=0.6)
    if split is not None and (written + split.group(1)).lower() in names:
        real, spelled = names[(written + split.group(1)).lower()], re.escape(split.group(0))
    elif close:
        real = names[close[0]]
        spelled = "|".join(re.escape(q[0] + written + q[1]) for q in ('""', "``", "[]")) + "|" + re.escape(written)
    else:
        return None
    repaired = _substitute(sql, re.compile(rf"(?<![\w.$])(?:{spelled})(?![\w$])", re.IGNORECASE), _plain(real))
    if repaired == sql or not compiles(repaired):
        return None
    text = f"Hint: there is no table {written}; {real} is the table with the closest name. Corrected, it compiles:"
    return Hint(f"{text}\n```sql\n{repaired}\n```", repaired)


_AGGREGATE_CALL = re.compile(r"\b(?:COUNT|SUM|AVG|MIN|MAX|TOTAL|GROUP_CONCAT)\s*\(", re.IGNORECASE)
_CLAUSE = re.compile(r"\b(WHERE|GROUP\s+BY|HAVING|ORDER\s+BY|LIMIT)\b", re.IGNORECASE)
_CLAUSES = ("WHERE", "GROUP BY", "HAVING", "ORDER BY", "LIMIT")  # in the order SQLite wants them
_PLAIN_QUERY = re.compile(r"^\s*SELECT\s+(?P<select>.+?)\s+FROM\s+(?P<from>.+?)\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_COLUMN = re.compile(rf"^\s*(?:DISTINCT\s+)?(?P<name>{_IDENT}(?:\.{_IDENT})?)\s*$", re.IGNORECASE)


def _aggregate_repair(
    schema: Schema, sql: str, compiles: Callable[[str], bool] | None, question: str | None
) -> Hint:
    """:data:`AGGREGATE_HINT`, with the repaired query when one rewrite of a query without
    subqueries compiles: conditions on an aggregate move from WHERE to HAVING, and a query
    with no GROUP BY gets one. On one table, ``SELECT name FROM Highschooler ORDER BY
    COUNT(*) DESC LIMIT 1`` for "the most friends" counts the rows of the table the
    question names that references it: that table is joined and the rows grouped by the
    key it references. Where the question names no other table, the selected columns
    are the groups (not a key: a group per key counts one row); where it names one that
    no foreign key links, there is no repair."""
    blank = _blank_literals(sql)
    parsed = _PLAIN_QUERY.match(blank)
    if compiles is None or parsed is None or not _one_select(blank) or _COMPOUND.search(blank):
        return Hint(AGGREGATE_HINT, None)
    starts = [(m.start(), re.sub(r"\s+", " ", m.group(1).upper())) for m in _CLAUSE.finditer(blank, parsed.start("from"))]
    names = [n for _, n in starts]
    if len(set(names)) != len(names) or names != sorted(names, key=_CLAUSES.index):
        return Hint(AGGREGATE_HINT, None)  # clauses repeated or out of order: not this repair's to guess
    bounds = [s for s, _ in starts] + [parsed.end("from")]
    clause = {n: _CLAUSE.sub("", sql[bounds[i] : bounds[i + 1]], count=1).strip() for i, n in enumerate(names)}
    select = sql[parsed.start("select") : parsed.end("select")].strip()
    source = sql[parsed.start("from") : bounds[0]].strip()
    conditions = _top_level_and(clause.get("WHERE", ""))
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
        named = _plain(table.name)
        source += f" JOIN {named} ON {named}.{fk.from_column} = {written}.{fk.to_column}"
        group = group or f"{written}.{fk.to_column}"
        owner = schema.table(fk.to_table)
        parts = [select, group, clause.get("ORDER BY", ""), *where, *having]
        for col in owner.columns:  # a name both tables have would be ambiguous now
            if _holder(table, col.name):
                parts = [_replace_reference(p, col.name, f"{written}.{col.name}") for p in parts]
        select, group, clause["ORDER BY"] = parts[:3]
        where, having = parts[3 : 3 + len(where)], parts[3 + len(where) :]
        note = f" To count the {table.name} rows of each {owner.name}, join {table.name} and GROUP BY {group}."
    elif group is None and counted is None:
        items = _top_level_split(select, ",")
        plain = [m.group("name") for m in map(_COLUMN.match, items) if m is not None]
        if not plain or len(plain) != len([i for i in items if not _AGGREGATE_CALL.search(i)]):
            return Hint(AGGREGATE_HINT, None)
        group = _group_of(schema, sql, source, plain)
        if group is None:
            return Hint(AGGREGATE_HINT, None)
    elif group is None:
        return Hint(AGGREGATE_HINT, None)
    having += _top_level_and(clause.get("HAVING", "")) or []
    repaired = f"SELECT {select} FROM {source}"
    repaired += f" WHERE {' AND '.join(where)}" if where else ""
    repaired += f" GROUP BY {group}" + (f" HAVING {' AND '.join(having)}" if having else "")
    repaired += "".join(f" {n} {clause[n]}" for n in ("ORDER BY", "LIMIT") if clause.get(n))
    if repaired == sql or not compiles(repaired):
        return Hint(AGGREGATE_HINT, None)
    return Hint(f"{AGGREGATE_HINT}{note} Corrected, it compiles:\n```sql\n{repaired}\n```", repaired)


def _ambiguity_repair(
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
    blank = _blank_literals(sql)
    if not _one_select(blank):
        return None
    sources = query_sources(schema, sql)
    used = list(dict.fromkeys(t for t, _ in sources.values()))
    holders = [t for t in used if _holder(t, column)]
    if len(holders) < 2:
        return None
    names = {t.name: _names_for(sources, t) for t in holders}
    conditions = [m.span() for m in re.finditer(r"\bON\b.*?(?=\bJOIN\b|\bWHERE\b|\bGROUP\b|\bORDER\b|\bLIMIT\b|$)", blank, re.I | re.S)]
    in_join = any(a <= m.start() < b for m in _reference_pattern(column).finditer(blank) for a, b in conditions)
    ref = rf"({_IDENT})\.{re.escape(column)}(?![\w$])"
    equal = [
        {_bare(m.group(1)).lower(), _bare(m.group(2)).lower()}
        for m in re.finditer(rf"(?<![\w.$]){ref}\s*=\s*{ref}", blank, re.IGNORECASE)
    ]
    equated = [t for t in holders if any(names[t.name].lower() in pair and len(pair) == 2 for pair in equal)]
    named = [t for t in holders if question is not None and _named(t.name, question)]
    chosen = (equated or (named if len(named) == 1 else []) or holders)[0]
    written = f"{names[chosen.name]}.{_holder(chosen, column)}"
    each = [names[t.name] if names[t.name] == t.name else f"{t.name} ({names[t.name]})" for t in holders]
    listed = ", ".join(each[:-1]) + " and " + each[-1]
    why = " (the join makes them equal)" if equated else ""
    text = f"Hint: {column} is a column of {listed}, which this query reads: write {written}{why}."
    repaired = _replace_reference(sql, column, written)
    if in_join:  # a join condition relates two tables: one qualifier for every use would break it
        return Hint(text, None)
    if compiles is None or repaired == sql or _self_comparisons(repaired) - _self_comparisons(sql) or not compiles(repaired):
        return Hint(text, None)
    return Hint(f"{text} Corrected, it compiles:\n```sql\n{repaired}\n```", repaired)


WHERE_HINT = "Hint: WHERE comes after every JOIN ... ON of its FROM clause, never between them."


def _where_after_joins(sql: str, compiles: Callable[[str], bool] | None) -> Hint:
    """:data:`WHERE_HINT` for ``FROM a WHERE x JOIN b ON ... [WHERE y]``, which SQLite
    rejects near JOIN, with the query that moves ``x`` after the joins (``WHERE x AND
    y``, a condition written twice kept once) when that compiles. Only for a query
    without subqueries, whose clauses can be found without a parser."""
    blank = _blank_literals(sql)
    if compiles is None or not _one_select(blank):
        return Hint(WHERE_HINT, None)
    early = re.search(r"\bWHERE\b", blank, re.IGNORECASE)
    join = _JOIN.search(blank, early.end()) if early else None
    if early is None or join is None:
        return Hint(WHERE_HINT, None)
    ends = re.compile(r"\b(?:WHERE|GROUP\s+BY|HAVING|ORDER\s+BY|LIMIT)\b|;?\s*$", re.IGNORECASE)
    after = ends.search(blank, join.end())
    assert after is not None  # the pattern matches at the end of any text
    moved = _top_level_and(sql[early.end() : join.start()]) or []
    joins = sql[join.start() : after.start()].rstrip()
    tail = sql[after.start() :]
    later = re.match(r"\s*WHERE\b(?P<cond>.*?)(?=\b(?:GROUP\s+BY|HAVING|ORDER\s+BY|LIMIT)\b|;?\s*$)", tail, re.IGNORECASE | re.DOTALL)
    kept = _top_level_and(later.group("cond")) if later else []
    if not moved or kept is None:
        return Hint(WHERE_HINT, None)
    conditions = list(dict.fromkeys(moved + kept))
    rest = tail[later.end() :] if later else tail
    repaired = f"{sql[: early.start()].rstrip()} {joins} WHERE {' AND '.join(conditions)} {rest.strip()}".strip()
    if not compiles(repaired):
        return Hint(WHERE_HINT, None)
    return Hint(f"{WHERE_HINT} Corrected, it compiles:\n```sql\n{repaired}\n```", repaired)


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
        found = sources.get(_bare(qualifier).lower(), (None, ""))[0] if qualifier else None
        owners.add(found or next((t for t in used if _holder(t, _bare(column))), None))
    keys = {t: [c.name for c in t.columns if c.primary_key] for t in used}
    if _JOIN.search(_blank_literals(source)):
        owner = next(iter(owners)) if len(owners) == 1 else None
        if owner is not None and len(keys[owner]) == 1:
            return f"{_names_for(sources, owner)}.{keys[owner][0]}"
        return ", ".join(columns)
    if any(_bare(n.rpartition(".")[2]).lower() in {k.lower() for k in sum(keys.values(), [])} for n in columns):
        return None
    return ", ".join(columns)


def _top_level_split(text: str, separator: str) -> list[str]:
    """``text`` cut at each ``separator`` outside parentheses and string literals."""
    blank, depth, cuts = _blank_literals(text), 0, [-1]
    for i, ch in enumerate(blank):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and ch == separator:
            cuts.append(i)
    return [text[a + 1 : b] for a, b in zip(cuts, cuts[1:] + [len(text)])]


def _top_level_and(text: str) -> list[str] | None:
    """The conditions ``text`` joins with a top-level AND (``[]`` for none); None when it
    also has a top-level OR or a BETWEEN, which cutting at AND could change."""
    blank, depth, cuts = _blank_literals(text), 0, []
    for word in re.finditer(r"\(|\)|\b(?:AND|OR|BETWEEN)\b", blank, re.IGNORECASE):
        depth += {"(": 1, ")": -1}.get(word.group(), 0)
        if depth == 0 and word.group().upper() in ("OR", "BETWEEN"):
            return None
        if depth == 0 and word.group().upper() == "AND":
            cuts.append(word.span())
    edges = [0] + [x for span in cuts for x in span] + [len(text)]
    parts = [text[edges[i] : edges[i + 1]].strip() for i in range(0, len(edges), 2)]
    return [p for p in parts if p]


def _counted_table(schema: Schema, source: str, question: str | None) -> tuple[Table, ForeignKey, str] | bool | None:
    """For a query on one table (``source``) whose aggregate counts the rows of another:
    (table, its foreign key, what the query calls the table it references) when one table
    that references it is named by the question (``friends`` names ``Friend``); of several
    keys to it, the one on the referencing table's earliest column (the rows' owner:
    ``Friend.student_id``, not ``friend_id``). False when the question names another
    table that none of its keys link (the count needs a join no key says how to make);
    None when it names none."""
    one = re.fullmatch(rf"(?P<table>{_IDENT})(?:\s+(?:AS\s+)?(?P<alias>{_IDENT}))?", source, re.IGNORECASE)
    if one is None or question is None or (one.group("alias") or "").lower() in _NOT_ALIAS:
        return None
    owner = next((t for t in schema.tables if t.name.lower() == _bare(one.group("table")).lower()), None)
    if owner is None:
        return None
    written = _bare(one.group("alias") or one.group("table"))
    own = set(_name_words(owner.name))
    words = {w.lower().removesuffix("s") for w in re.findall(r"[A-Za-z]+", question)}
    mentioned = [
        t for t in schema.tables
        if t is not owner and any(w in words for w in _name_words(t.name) if w not in own and len(w) > 2)
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


def _name_words(table: str) -> list[str]:
    """The words of a table's name, lower case and singular: ``Degree_Programs`` -> degree, program."""
    return [p.lower().removesuffix("s") for p in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", table)]


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
    names = {t: _plain(t) for t in scope}
    names[start.name] = _names_for(sources, start)
    joined, here, steps = [], start.name, []
    for fk in path:
        there = fk.to_table if fk.from_table == here else fk.from_table
        if there in scope:
            return None
        names[there] = _plain(there)
        cond = f"{names[fk.from_table]}.{fk.from_column} = {names[fk.to_table]}.{fk.to_column}"
        steps.append(f" JOIN {names[there]} ON {cond}")
        joined.append(schema.table(there))
        here = there
    if _STAR.search(sql):
        return None
    column = _holder(target, written.rpartition(".")[2].strip('"`[]')) or ""
    repaired = _replace_reference(sql, written, f"{names[target.name]}.{column}")
    kept = [t for t, _ in sources.values()]
    for table in joined:
        for col in table.columns:
            holder = next((t for t in kept if _holder(t, col.name)), None)
            if holder is not None and col.name.lower() != column.lower():
                repaired = _replace_reference(repaired, col.name, f"{_names_for(sources, holder)}.{_holder(holder, col.name)}")
    # Each (sub)query that uses the column gets the join in its own FROM: a subquery such
    # as "(SELECT MIN(Horsepower) FROM car_names)" does not see the outer query's tables.
    anchors: set[int] = set()
    for use in _reference_pattern(f"{names[target.name]}.{column}").finditer(_blank_literals(repaired)):
        here = [(depth, m) for depth, t, m in _visible_sources(schema, repaired, use.start()) if t is start]
        if not here:
            return None
        anchor = max(here, key=lambda f: f[0])[1]
        if _bare(anchor.group("alias") or anchor.group("table")).lower() != _bare(names[start.name]).lower():
            return None  # that scope calls the table by another name than the join condition
        anchors.add(anchor.end())
    for end in sorted(anchors, reverse=True):
        repaired = repaired[:end] + "".join(steps) + repaired[end:]
    return repaired if anchors else None


def _plain(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_]\w*", name) else quote_identifier(name)


def _replace_reference(sql: str, written: str, replacement: str) -> str:
    """``sql`` with each whole-word occurrence of the column reference ``written`` replaced
    (outside string literals)."""
    return _substitute(sql, _reference_pattern(written), replacement)


def _substitute(sql: str, pattern: re.Pattern[str], replacement: str) -> str:
    """``sql`` with each match of ``pattern`` outside string literals replaced."""
    out, end = [], 0
    for match in pattern.finditer(_blank_literals(sql)):
        out += [sql[end : match.start()], replacement]
        end = match.end()
    return "".join(out) + sql[end:]


_TRAILING_LIMIT = re.compile(r"\bLIMIT\s+(\d+)\s*;?\s*$", re.IGNORECASE)
_NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve").split()


def without_limit(sql: str) -> str:
    """``sql`` without its trailing ``LIMIT n``.

    >>> without_limit("SELECT name FROM ship ORDER BY name LIMIT 5;")
    'SELECT name FROM ship ORDER BY name'
    """
    return _TRAILING_LIMIT.sub("", sql).rstrip()


def limit_hint(sql: str, question: str, shown_rows: int) -> str | None:
    """A hint for a query that ran and ends with ``LIMIT n`` (n > 1) where the question
    asks for no such number: a limit added to look at the rows (``run_query`` shows
    ``shown_rows`` anyway), which would cut the answer if submitted. ``LIMIT 1`` is left
    alone: it is how a superlative is written.

    >>> limit_hint("SELECT name FROM ship ORDER BY name DESC LIMIT 5", "List the names.", 5) is not None
    True
    >>> limit_hint("SELECT name FROM ship LIMIT 5", "What are the top five ships?", 5) is None
    True
    >>> print(limit_hint("SELECT name FROM ship LIMIT 10", "List the names.", 5))
    Hint: the question asks for no 10 rows, so a LIMIT 10 would cut the answer: run the query without it (results show the first 5 rows anyway).
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
            f"Hint: results show the first {n} rows anyway; the question asks for no {n} rows, "
            f"so a LIMIT {n} would cut the answer: run the query without it."
        )
    return (
        f"Hint: the question asks for no {n} rows, so a LIMIT {n} would cut the answer: run the query "
        f"without it (results show the first {shown_rows} rows anyway)."
    )
