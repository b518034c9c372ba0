"""What a database holds: tables, columns, foreign keys, read once per file.

Names are matched case-insensitively; an unknown name raises :class:`UnknownName`,
whose message lists close matches so a model can correct itself.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence

from sqlscout.errors import QueryError, SqlscoutError

__all__ = ["Column", "ForeignKey", "Schema", "Table", "SchemaSource", "UnknownName", "quote_identifier", "read_schema"]


class UnknownName(SqlscoutError):
    """A table or column name that the database does not have."""


def quote_identifier(name: str) -> str:
    """Quote a SQLite identifier safely.

    >>> print(quote_identifier('my "table'))
    "my ""table"
    """
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    primary_key: bool
    not_null: bool


@dataclass(frozen=True)
class ForeignKey:
    """``from_table.from_column`` references ``to_table.to_column``."""

    from_table: str
    from_column: str
    to_table: str
    to_column: str

    def join_condition(self) -> str:
        return (
            f"{quote_identifier(self.from_table)}.{quote_identifier(self.from_column)} = "
            f"{quote_identifier(self.to_table)}.{quote_identifier(self.to_column)}"
        )

    def plain_condition(self) -> str:
        """The join condition as a model reads it, names unquoted."""
        return f"{self.from_table}.{self.from_column} = {self.to_table}.{self.to_column}"

    def __str__(self) -> str:
        return f"{self.from_table}.{self.from_column} -> {self.to_table}.{self.to_column}"


@dataclass(frozen=True)
class Table:
    name: str
    create_sql: str
    columns: tuple[Column, ...]
    is_view: bool = False
    error: str | None = None  # why its columns could not be read (a broken view, a missing module)

    def column(self, name: str) -> Column:
        """The column called ``name`` (any case), or :class:`UnknownName` with close matches."""
        by_lower = {c.name.lower(): c for c in self.columns}
        found = by_lower.get(name.strip().strip('"`[]').lower())
        if found is None:
            raise UnknownName(_unknown("column", name, [c.name for c in self.columns], f" in table {self.name}"))
        return found

    @property
    def key(self) -> str | None:
        """The name of its primary key when that is one column, else None."""
        keys = [c.name for c in self.columns if c.primary_key]
        return keys[0] if len(keys) == 1 else None


@dataclass(frozen=True)
class Schema:
    """Tables in definition order, with the foreign keys between them."""

    tables: tuple[Table, ...]
    foreign_keys: tuple[ForeignKey, ...]

    @property
    def table_names(self) -> list[str]:
        return [t.name for t in self.tables]

    def table(self, name: str) -> Table:
        """The table called ``name`` (any case, optional quotes), or :class:`UnknownName`."""
        key = name.strip().strip('"`[]').lower()
        for table in self.tables:
            if table.name.lower() == key:
                return table
        raise UnknownName(_unknown("table", name, self.table_names))

    def references(self, table: str) -> list[ForeignKey]:
        """Foreign keys declared by ``table`` (it references others)."""
        key = table.lower()
        return [fk for fk in self.foreign_keys if fk.from_table.lower() == key]

    def referenced_by(self, table: str) -> list[ForeignKey]:
        """Foreign keys of other tables that point at ``table``."""
        key = table.lower()
        return [fk for fk in self.foreign_keys if fk.to_table.lower() == key]

    def join_path(self, table_a: str, table_b: str) -> list[ForeignKey] | None:
        """The shortest chain of foreign keys linking two tables (either direction).

        Returns ``[]`` for the same table and ``None`` when no chain exists. Ties are
        broken by definition order, so the answer is deterministic.
        """
        start, goal = self.table(table_a).name, self.table(table_b).name
        if start == goal:
            return []
        neighbours: dict[str, list[tuple[str, ForeignKey]]] = {t.name: [] for t in self.tables}
        for fk in self.foreign_keys:
            neighbours[fk.from_table].append((fk.to_table, fk))
            neighbours[fk.to_table].append((fk.from_table, fk))
        previous: dict[str, tuple[str, ForeignKey] | None] = {start: None}
        frontier = deque([start])
        while frontier:
            here = frontier.popleft()
            for there, fk in neighbours[here]:
                if there in previous:
                    continue
                previous[there] = (here, fk)
                if there == goal:
                    chain: list[ForeignKey] = []
                    node = goal
                    while (step := previous[node]) is not None:
                        node, edge = step
                        chain.append(edge)
                    return chain[::-1]
                frontier.append(there)
        return None

    def create_statements(self, names: frozenset[str] | None = None) -> str:
        """Every ``CREATE TABLE`` statement, for the full-schema prompt; with ``names``, those
        of the tables so named only, in schema order."""
        chosen = self.tables if names is None else [t for t in self.tables if t.name in names]
        return "\n\n".join(t.create_sql.strip().rstrip(";") + ";" for t in chosen)

    def joining(self, names: frozenset[str]) -> frozenset[str]:
        """``names`` (exact table names) and every table on the shortest foreign-key path
        between two of them: the link tables a query over them would need."""
        joined = set(names)
        ordered = sorted(names)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                for fk in self.join_path(a, b) or []:
                    joined |= {fk.from_table, fk.to_table}
        return frozenset(joined)

    def neighbours(self, names: frozenset[str]) -> frozenset[str]:
        """The tables one foreign key away from ``names`` (exact table names), either way
        (those they reference and those that reference them), ``names`` left out."""
        near = {fk.to_table for fk in self.foreign_keys if fk.from_table in names}
        near |= {fk.from_table for fk in self.foreign_keys if fk.to_table in names}
        return frozenset(near - names)


def _unknown(kind: str, name: str, known: list[str], where: str = "") -> str:
    import difflib  # only for a name that is not there

    close = difflib.get_close_matches(name.lower(), [k.lower() for k in known], n=3, cutoff=0.5)
    by_lower = {k.lower(): k for k in known}
    hint = f" Did you mean: {', '.join(by_lower[c] for c in close)}?" if close else ""
    listing = "" if close or len(known) > 30 else f" Known {kind}s: {', '.join(known)}."
    return f"Unknown {kind} '{name}'{where}.{hint}{listing}"


class _Rows(Protocol):
    rows: Sequence[tuple[Any, ...]]


class SchemaSource(Protocol):
    """What :func:`read_schema` reads through: the sandbox's :class:`~sqlscout.env.sandbox.Database`
    (a protocol, so that this module does not import the sandbox that imports it)."""

    path: Path

    def execute(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None) -> _Rows: ...


# The tables SQLite itself keeps in sqlite_schema (AUTOINCREMENT counters, ANALYZE statistics).
SQLITE_INTERNAL_TABLES = ("sqlite_sequence", "sqlite_stat1", "sqlite_stat2", "sqlite_stat3", "sqlite_stat4")


def read_schema(db: SchemaSource) -> Schema:
    """Introspect ``db`` through its read-only connection."""
    try:
        entries = db.execute(
            # SQLite's own tables, by name: a user table whose name starts with "sqlite_"
            # (a file written with writable_schema, another tool) is shown like any other.
            "SELECT name, type, sql FROM sqlite_master WHERE type IN ('table', 'view') "
            f"AND name NOT IN ({', '.join(repr(n) for n in SQLITE_INTERNAL_TABLES)}) ORDER BY rowid",
            max_rows=1_000_000,
            timeout_s=60,
        ).rows
    except QueryError as exc:
        raise SqlscoutError(f"{db.path}: cannot read the schema ({exc})") from None
    tables: list[Table] = []
    for name, kind, sql in entries:
        create = sql or f"CREATE TABLE {quote_identifier(name)} (...)"
        try:
            info = db.execute(f"PRAGMA table_info({quote_identifier(name)})", max_rows=100_000).rows
        except QueryError as exc:
            # One broken view or virtual table of an unknown module must not hide the rest.
            tables.append(Table(name, create, (), is_view=kind == "view", error=str(exc)))
            continue
        columns = tuple(Column(str(r[1]), str(r[2] or ""), bool(r[5]), bool(r[3])) for r in info)
        tables.append(Table(name, create, columns, is_view=kind == "view"))
    by_lower = {t.name.lower(): t for t in tables}
    foreign_keys: list[ForeignKey] = []
    seen: set[tuple[str, str, str, str]] = set()
    for table in tables:
        if table.is_view or table.error:
            continue
        try:
            rows = db.execute(f"PRAGMA foreign_key_list({quote_identifier(table.name)})", max_rows=100_000).rows
        except QueryError:
            continue
        for _id, _seq, target, from_col, to_col in (r[:5] for r in rows):
            target_table = by_lower.get(str(target).strip('"`[]').lower())
            if target_table is None:
                continue  # dangling declaration (some Spider files have them)
            to_name = _resolve_target_column(target_table, to_col)
            from_name = _canonical_column(table, from_col)
            if to_name is None or from_name is None:
                continue
            key = (table.name, from_name, target_table.name, to_name)
            if key not in seen:
                seen.add(key)
                foreign_keys.append(ForeignKey(*key))
    return Schema(tuple(tables), tuple(foreign_keys))


def _canonical_column(table: Table, name: object) -> str | None:
    if name is None:
        return None
    try:
        return table.column(str(name)).name
    except UnknownName:
        return None


def _resolve_target_column(table: Table, name: object) -> str | None:
    if name is not None:
        return _canonical_column(table, name)
    return table.key
