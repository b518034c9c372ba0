"""Reading a query: the tables its ``FROM`` clauses name, the aliases it gives them and
which of them a name can see (read with sqlglot's parser and scopes, in the engine's
dialect; with regular expressions only where the query does not parse), its literals
blanked out, the conditions its top-level ``AND`` joins, and one name written in it
replaced by another.

The shared ground of :mod:`sqlscout.assist.hints` (the repair hints for a failed
``run_query``) and :mod:`sqlscout.assist.clause_repairs` (the repairs that move a clause).

>>> sql = "SELECT name FROM t WHERE name = 'a JOIN b'"
>>> blank_literals(sql).count("JOIN"), len(blank_literals(sql)) == len(sql)
(0, True)
>>> top_level_and("a = 1 AND (b = 2 AND c = 3)")
['a = 1', '(b = 2 AND c = 3)']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlscout.env.schema import Schema, Table, quote_identifier

QUOTED = r"\"[^\"]+\"|`[^`]+`|\[[^\]]+\]"  # a quoted name, in any of SQLite's three quotes
IDENT = rf"(?:{QUOTED}|[A-Za-z_][\w$]*)"
JOIN = re.compile(r"\b(?:(?:LEFT|RIGHT|FULL|INNER|CROSS|NATURAL)\s+(?:OUTER\s+)?)?JOIN\b", re.IGNORECASE)
NOT_ALIAS = frozenset(
    "where on join inner left right full outer cross natural group order limit having union "
    "intersect except using window as select from and or not offset values".split()
)
# A table named after FROM, JOIN or a comma, with its alias when it has one. A keyword is
# never taken for an alias: after "SELECT a, b" the FROM that follows must stay a FROM.
SOURCE = re.compile(
    rf"(?:\bFROM|\bJOIN|,)\s+(?P<table>{IDENT})(?!\s*\.)"  # not "t.col" in a list
    rf"(?:\s+(?:AS\s+)?(?!(?:{'|'.join(sorted(NOT_ALIAS))})\b)(?P<alias>{IDENT}))?",
    re.IGNORECASE,
)
COMPOUND = re.compile(r"\b(?:UNION|INTERSECT|EXCEPT)\b", re.IGNORECASE)


def corrected(sql: str) -> str:
    """The end of a hint that shows its repaired query, which compiles."""
    return f" Corrected, it compiles:\n```sql\n{sql}\n```"


@dataclass(frozen=True)
class Hint:
    text: str
    repaired: str | None  # the repaired query the text shows, when one compiles


def bare(name: str) -> str:
    return name.strip('"`[]')


def query_sources(schema: Schema, sql: str, at: int | None = None) -> dict[str, tuple[Table, str]]:
    """The tables ``sql`` reads, keyed by the lower-cased name it refers to them by (the
    alias, and the table's own name), with that name as written. With ``at``, only those
    a name at that offset can see: the FROM of its own (sub)query and of the queries
    around it, not of a subquery beside or inside it nor of another arm of a compound query."""
    found: list[tuple[int, Table, str | None]] = []  # (nesting depth, table, alias)
    for depth, table, match in visible_sources(schema, sql, at):
        alias = match.group("alias")
        found.append((depth, table, bare(alias) if alias and bare(alias).lower() not in NOT_ALIAS else None))
    if at is not None:
        found.sort(key=lambda f: -f[0])  # the nearest FROM first: it is the one a name resolves in
    sources: dict[str, tuple[Table, str]] = {}
    for _, table, alias in found:
        sources.setdefault(table.name.lower(), (table, table.name))
        if alias:
            sources.setdefault(alias.lower(), (table, alias))
    return sources


def visible_sources(
    schema: Schema, sql: str, at: int | None, dialect: str = "sqlite"
) -> list[tuple[int, Table, SourceRef | re.Match[str]]]:
    """(nesting depth, table, where it is written) of each table ``sql`` reads; with
    ``at`` (the offset of a name in ``sql``), only those that name can see: its own
    (sub)query's and those of the queries around it, not a subquery's beside or inside it
    nor another arm's of a compound query (``UNION``, ``INTERSECT``, ``EXCEPT``). Read with
    sqlglot's scopes; a query it cannot parse is read with regular expressions."""
    parsed = _parsed_sources(schema, sql, at, dialect)
    return parsed if parsed is not None else _pattern_sources(schema, sql, at)


@dataclass(frozen=True)
class SourceRef:
    """Where a table a query reads is written: its name's span and its alias's (``end``
    inclusive offsets become Python's exclusive ones), read as a regular-expression
    match of :data:`SOURCE` is (``group``, ``start``, ``end``)."""

    sql: str
    table: tuple[int, int]
    alias: tuple[int, int] | None

    def group(self, name: str) -> str | None:
        span = self.table if name == "table" else self.alias
        return None if span is None else self.sql[span[0] : span[1]]

    def start(self, name: str = "table") -> int:
        return (self.table if name == "table" else self.alias or self.table)[0]

    def end(self, name: str | None = None) -> int:
        if name == "table":
            return self.table[1]
        return (self.alias or self.table)[1]


def _parsed_sources(
    schema: Schema, sql: str, at: int | None, dialect: str
) -> list[tuple[int, Table, SourceRef | re.Match[str]]] | None:
    """:func:`visible_sources` through sqlglot; None when the query does not parse (or its
    tables carry no positions)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError
    from sqlglot.optimizer.scope import traverse_scope

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
        scopes = traverse_scope(tree)
    except (SqlglotError, ValueError, KeyError, RecursionError):
        return None
    tables = {t.name.lower(): t for t in schema.tables}
    seen: set[int] | None = None
    if at is not None:
        for scope in scopes:
            if any(_start(c) == at for c in scope.columns):
                chain, node = set(), scope
                while node is not None:
                    chain.add(id(node))
                    node = node.parent
                seen = chain
                break
        if seen is None:
            return None  # the name is not a column sqlglot placed: read the text instead
    found: list[tuple[int, Table, SourceRef | re.Match[str]]] = []
    for scope in scopes:
        if seen is not None and id(scope) not in seen:
            continue
        depth, node = 0, scope.parent
        while node is not None:
            depth, node = depth + 1, node.parent
        for source in scope.sources.values():
            if not isinstance(source, exp.Table) or not isinstance(source.this, exp.Identifier):
                continue
            table = tables.get(source.name.lower())
            where = source.this.meta
            if table is None or "start" not in where:
                continue
            alias = source.args.get("alias")
            alias_meta = alias.this.meta if alias is not None and isinstance(alias.this, exp.Identifier) else {}
            alias_span = (alias_meta["start"], alias_meta["end"] + 1) if "start" in alias_meta else None
            found.append((depth, table, SourceRef(sql, (where["start"], where["end"] + 1), alias_span)))
    found.sort(key=lambda f: f[2].start())
    return found


def _start(column: object) -> int | None:
    """Where a column reference begins in the text: its qualifier's offset, or its name's."""
    from sqlglot import exp

    assert isinstance(column, exp.Column)
    first = column.args.get("table") or column.this
    return first.meta.get("start") if isinstance(first, exp.Identifier) else None


def _pattern_sources(schema: Schema, sql: str, at: int | None) -> list[tuple[int, Table, SourceRef | re.Match[str]]]:
    """:func:`visible_sources` by regular expressions, for a query sqlglot cannot parse."""
    tables = {t.name.lower(): t for t in schema.tables}
    spans = _paren_spans(sql)
    seen_from = None if at is None else [sp for sp in spans if sp[0] < at < sp[1]]
    breaks = [(m.start(), _innermost(spans, m.start())) for m in COMPOUND.finditer(blank_literals(sql))]
    found: list[tuple[int, Table, SourceRef | re.Match[str]]] = []
    for match in SOURCE.finditer(sql):
        table = tables.get(bare(match.group("table")).lower())
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


def column_of(table: Table, column: str) -> str | None:
    """``column``'s real spelling in ``table``, or None."""
    for c in table.columns:
        if c.name.lower() == column.lower():
            return c.name
    return None


def names_for(sources: dict[str, tuple[Table, str]], table: Table) -> str:
    """What the query calls ``table``: its alias when it has one."""
    aliases = [spelled for t, spelled in sources.values() if t is table and spelled != table.name]
    return aliases[0] if aliases else table.name


def one_select(blank: str) -> bool:
    """Whether a query (string literals blanked) has one SELECT: no subquery, whose clauses
    the rewrites here could not tell from the outer query's."""
    return len(re.findall(r"\bSELECT\b", blank, re.IGNORECASE)) == 1


def is_named(table: str, question: str) -> bool:
    """Whether every word of a table's name (``PlaylistTrack``: playlist, track) is in
    ``question``, plural or not."""
    words = {w.lower().removesuffix("s") for w in re.findall(r"[A-Za-z]+", question)}
    parts = name_words(table)
    return bool(parts) and all(p in words for p in parts)


def name_words(table: str) -> list[str]:
    """The words of a table's name, lower case and singular: ``Degree_Programs`` -> degree, program."""
    return [p.lower().removesuffix("s") for p in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", table)]


_SELF_COMPARISON = re.compile(r"(?<![\w.$])([\w$]+\.[\w$]+)\s*(?:=|<>|!=)\s*\1(?![\w$.])", re.IGNORECASE)


def self_comparisons(sql: str) -> set[str]:
    """Columns compared with themselves (``T1.ArtistId = T1.ArtistId``): a repair that
    makes one has turned a join condition into nothing, however well it compiles."""
    return {m.group(1).lower() for m in _SELF_COMPARISON.finditer(blank_literals(sql))}


def reference(sql: str, written: str) -> int | None:
    """The offset of the first use of the column reference ``written`` outside string
    literals, or None."""
    match = reference_pattern(written).search(blank_literals(sql))
    return match.start() if match else None


def reference_pattern(written: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w.$])" + re.escape(written) + r"(?![\w$])(?!\s*\()", re.IGNORECASE)


def blank_literals(sql: str) -> str:
    """``sql`` with the insides of its string literals blanked, offsets kept."""
    return re.sub(r"'(?:[^']|'')*'", lambda m: "'" + " " * (len(m.group()) - 2) + "'", sql)


def plain_name(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_]\w*", name) else quote_identifier(name)


def replace_reference(sql: str, written: str, replacement: str) -> str:
    """``sql`` with each whole-word occurrence of the column reference ``written`` replaced
    (outside string literals)."""
    return substitute(sql, reference_pattern(written), replacement)


def substitute(sql: str, pattern: re.Pattern[str], replacement: str) -> str:
    """``sql`` with each match of ``pattern`` outside string literals replaced."""
    out, end = [], 0
    for match in pattern.finditer(blank_literals(sql)):
        out += [sql[end : match.start()], replacement]
        end = match.end()
    return "".join(out) + sql[end:]


def top_level_split(text: str, separator: str) -> list[str]:
    """``text`` cut at each ``separator`` outside parentheses and string literals."""
    blank, depth, cuts = blank_literals(text), 0, [-1]
    for i, ch in enumerate(blank):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and ch == separator:
            cuts.append(i)
    return [text[a + 1 : b] for a, b in zip(cuts, cuts[1:] + [len(text)])]


def top_level_and(text: str) -> list[str] | None:
    """The conditions ``text`` joins with a top-level AND (``[]`` for none); None when it
    also has a top-level OR or a BETWEEN, which cutting at AND could change."""
    blank, depth, cuts = blank_literals(text), 0, []
    for word in re.finditer(r"\(|\)|\b(?:AND|OR|BETWEEN)\b", blank, re.IGNORECASE):
        depth += {"(": 1, ")": -1}.get(word.group(), 0)
        if depth == 0 and word.group().upper() in ("OR", "BETWEEN"):
            return None
        if depth == 0 and word.group().upper() == "AND":
            cuts.append(word.span())
    edges = [0] + [x for span in cuts for x in span] + [len(text)]
    parts = [text[edges[i] : edges[i + 1]].strip() for i in range(0, len(edges), 2)]
    return [p for p in parts if p]
