"""The eight tools a model calls to explore a database (SPEC §3).

Each tool is a plain typed function, defined once. Its name, description and argument
schema — what prompts, docs and function-calling APIs show — are generated from the
signature and the docstring, so the spec can never drift from the code. A bad call
never raises out of :func:`call_tool`: it becomes an error observation.

>>> TOOLS["describe_table"].signature()
'describe_table(table_name)'
>>> TOOLS["sample_rows"].spec()["function"]["parameters"]["required"]
['table_name']
"""

from __future__ import annotations

import difflib
import inspect
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from sqlscout.errors import QueryError, QueryRefused, SqlscoutError, ToolArgumentError
from sqlscout.env.engine_errors import ErrorCategory, classify, engine_of
from sqlscout.env.render import Table, render_table
from sqlscout.env.sandbox import Database
from sqlscout.env.schema import quote_identifier

__all__ = ["TOOLS", "Tool", "ToolOutcome", "ToolParam", "call_tool", "tool_specs"]

RUN_QUERY_ROWS = 5
SAMPLE_ROWS_MAX = 20
DISTINCT_VALUES_MAX = 50

# Argument names small models use instead of ours; accepted silently.
_ALIASES = {
    "table": "table_name",
    "name": "table_name",
    "tablename": "table_name",
    "column": "column_name",
    "columnname": "column_name",
    "query": "sql",
    "sql_query": "sql",
    "n": "limit",
    "k": "limit",
    "from_table": "table_a",
    "to_table": "table_b",
}


@dataclass(frozen=True)
class ToolParam:
    name: str
    type: type
    description: str
    default: Any = inspect.Parameter.empty

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty

    def json_type(self) -> str:
        return {int: "integer", str: "string", float: "number", bool: "boolean"}[self.type]


@dataclass(frozen=True)
class ToolOutcome:
    """What one call produced: the observation text and what the episode must know."""

    text: str
    ok: bool
    elapsed_s: float = 0.0
    ends_episode: bool = False
    sql: str | None = None  # the query for run_query / submit_sql
    data: dict[str, Any] | None = None  # a result table's columns, rows, truncated, row_count


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    params: tuple[ToolParam, ...]
    function: Callable[..., str]
    ends_episode: bool = False

    def signature(self) -> str:
        """``name(arg, arg)`` as the prompt lists it."""
        return f"{self.name}({', '.join(p.name for p in self.params)})"

    def spec(self) -> dict[str, Any]:
        """An OpenAI-style function spec (JSON schema of the arguments)."""
        properties = {}
        for p in self.params:
            prop: dict[str, Any] = {"type": p.json_type(), "description": p.description}
            if not p.required:
                prop["default"] = p.default
            properties[p.name] = prop
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": properties,
                    "required": [p.name for p in self.params if p.required],
                },
            },
        }

    def bind(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Check and coerce model-given arguments; raise ToolArgumentError on a problem."""
        wanted = {p.name: p for p in self.params}
        bound: dict[str, Any] = {}
        for key, value in args.items():
            name = key if key in wanted else _ALIASES.get(key.lower().replace("-", "_"), key)
            if name not in wanted:
                continue  # tolerate stray arguments rather than fail the call
            bound[name] = _coerce(self.name, wanted[name], value)
        for p in self.params:
            if p.name not in bound:
                if p.required:
                    raise ToolArgumentError(
                        f"{self.name} needs the argument '{p.name}'; call it as "
                        f'{{"tool": "{self.name}", "args": {{{_example_args(self)}}}}}.'
                    )
                bound[p.name] = p.default
        return bound


def _example_args(t: Tool) -> str:
    return ", ".join(f'"{p.name}": ...' for p in t.params if p.required)


def _coerce(tool_name: str, param: ToolParam, value: Any) -> Any:
    if param.type is int:
        if isinstance(value, bool):
            raise ToolArgumentError(f"{tool_name}: '{param.name}' must be a whole number.")
        try:
            return int(value)
        except (TypeError, ValueError, OverflowError):  # OverflowError: int(float("inf"))
            raise ToolArgumentError(f"{tool_name}: '{param.name}' must be a whole number, got {value!r}.") from None
    if param.type is str:
        if isinstance(value, (dict, list)) or value is None:
            raise ToolArgumentError(f"{tool_name}: '{param.name}' must be a string, got {value!r}.")
        return str(value)
    return value


_ARG_LINE = re.compile(r"^\s*(\w+)(?:\s*\([^)]*\))?:\s*(.+)$")


def _tool(*, ends_episode: bool = False) -> Callable[[Callable[..., str]], Tool]:
    def wrap(fn: Callable[..., str]) -> Tool:
        doc = inspect.getdoc(fn) or ""
        summary, _, rest = doc.partition("\n\n")
        arg_docs: dict[str, str] = {}
        if "Args:" in rest:
            for line in rest.split("Args:", 1)[1].splitlines():
                if m := _ARG_LINE.match(line):
                    arg_docs[m.group(1)] = m.group(2).strip()
        hints = inspect.get_annotations(fn, eval_str=True)
        params = tuple(
            ToolParam(name, hints[name], arg_docs.get(name, ""), p.default)
            for name, p in list(inspect.signature(fn).parameters.items())[1:]
        )
        return Tool(fn.__name__, " ".join(summary.split()), params, fn, ends_episode)

    return wrap


# -- the tools -------------------------------------------------------------------
# Each takes the database first; the rest of the signature is the model's arguments.


@_tool()
def list_tables(db: Database) -> str:
    """List the names of all tables in the database."""
    names = db.schema.table_names
    return "\n".join(names) if names else "(the database has no tables)"


@_tool()
def describe_table(db: Database, table_name: str) -> str:
    """Show a table's CREATE TABLE statement (its columns, types and keys).

    Args:
        table_name: the table to describe.
    """
    table = db.schema.table(table_name)
    if table.error:
        return f"{table.create_sql.strip()}\n-- This {'view' if table.is_view else 'table'} cannot be read: {table.error}"
    return table.create_sql.strip()


@_tool()
def foreign_keys(db: Database, table_name: str) -> str:
    """Show a table's foreign keys in both directions: what it references and what references it.

    Args:
        table_name: the table whose foreign keys to show.
    """
    table = db.schema.table(table_name)
    refs = db.schema.references(table.name)
    back = db.schema.referenced_by(table.name)
    lines = [f"{table.name} references:"]
    lines += [f"  {fk}" for fk in refs] or ["  (nothing)"]
    lines.append(f"{table.name} is referenced by:")
    lines += [f"  {fk}" for fk in back] or ["  (nothing)"]
    return "\n".join(lines)


@_tool()
def join_path(db: Database, table_a: str, table_b: str) -> str:
    """Find the shortest chain of foreign-key joins between two tables.

    Args:
        table_a: the table to start from.
        table_b: the table to reach.
    """
    a, b = db.schema.table(table_a).name, db.schema.table(table_b).name
    chain = db.schema.join_path(a, b)
    if chain is None:
        return f"No foreign-key path connects {a} and {b}."
    if not chain:
        return f"{a} and {b} are the same table."
    lines = [f"Shortest join path from {a} to {b} ({len(chain)} join{'s' if len(chain) > 1 else ''}):"]
    lines += [f"  {fk.plain_condition()}" for fk in chain]
    return "\n".join(lines)


@_tool()
def sample_rows(db: Database, table_name: str, limit: int = 5) -> str:
    """Show a few rows of a table.

    Args:
        table_name: the table to sample.
        limit: how many rows (default 5, at most 20).
    """
    table = db.schema.table(table_name)
    n = max(1, min(limit, SAMPLE_ROWS_MAX))
    result = db.execute(f"SELECT * FROM {quote_identifier(table.name)} LIMIT {n}")
    return render_table(result.columns, result.rows, note=_capped_note(limit, n, SAMPLE_ROWS_MAX))


@_tool()
def distinct_values(db: Database, table_name: str, column_name: str, limit: int = 20) -> str:
    """Show the distinct values of a column, most frequent first, with their counts.

    Args:
        table_name: the table holding the column.
        column_name: the column whose values to list.
        limit: how many values (default 20, at most 50).
    """
    table = db.schema.table(table_name)
    column = table.column(column_name)
    n = max(1, min(limit, DISTINCT_VALUES_MAX))
    col = quote_identifier(column.name)
    result = db.execute(
        f"SELECT {col}, COUNT(*) AS count FROM {quote_identifier(table.name)} "
        f"GROUP BY {col} ORDER BY count DESC, {col} LIMIT {n + 1}"
    )
    return render_table(result.columns, result.rows[:n], more_rows=len(result.rows) > n, note=_capped_note(limit, n, DISTINCT_VALUES_MAX))


def _capped_note(asked: int, used: int, most: int) -> str:
    """Say so when the limit asked for was not the one used (a silent 20 for 50 misleads)."""
    if asked == used:
        return ""
    return f"(limit is at most {most}; used {used})" if asked > most else "(limit is at least 1; used 1)"


@_tool()
def run_query(db: Database, sql: str) -> str:
    """Run one read-only SQL query and see its first 5 rows.

    Args:
        sql: one SQLite SELECT statement.
    """
    try:
        result = db.execute(sql, max_rows=RUN_QUERY_ROWS)
    except QueryError as exc:
        hint = _name_hint(db, str(exc))
        if hint:
            raise type(exc)(f"{exc}. {hint}") from None
        raise
    return render_table(result.columns, result.rows, more_rows=result.truncated)


HINT_TABLES = 4  # the most tables a hint names for one column


def _name_hint(db: Database, message: str) -> str | None:
    """Close matches for the unknown table or column the engine names in ``message``
    (each engine words it its own way: :mod:`sqlscout.env.engine_errors`).

    Small models guess names (``students`` for ``student``); the same hint the
    name-taking tools give turns a dead end into a one-round fix.
    """
    category, written = classify(message, engine_of(db))
    if written is None or category not in (ErrorCategory.UNKNOWN_TABLE, ErrorCategory.UNKNOWN_COLUMN):
        return None
    kind = "table" if category is ErrorCategory.UNKNOWN_TABLE else "column"
    name = written.rsplit(".", 1)[-1].strip("\"'`[]")
    schema = db.schema
    if kind == "table":
        known = schema.table_names
        shown = {n.lower(): n for n in known}
    else:
        # every table that has the column: a name that several tables share (``Name``) named
        # with the first table only sent a join's wrong alias to a table the query never read
        holders: dict[str, list[str]] = {}
        for table in schema.tables:
            for column in table.columns:
                holders.setdefault(column.name.lower(), []).append(f"{table.name}.{column.name}")
        shown = {n: ", ".join(h[:HINT_TABLES]) for n, h in holders.items()}
        known = list(shown.values())
    close = difflib.get_close_matches(name.lower(), list(shown), n=3, cutoff=0.6)
    if close:
        return f"Did you mean: {', '.join(shown[c] for c in close)}?"
    if kind == "table" and len(known) <= 30:
        return f"The tables are: {', '.join(known)}."
    return "Call list_tables and describe_table to see the real names." if kind == "table" else None


@_tool(ends_episode=True)
def submit_sql(db: Database, sql: str) -> str:
    """Submit your final SQL query as the answer; this ends the episode.

    Args:
        sql: the final SQLite SELECT statement answering the question.
    """
    check_submittable(db, sql)
    return "Submitted."


def check_submittable(db: Database, sql: str) -> None:
    """Refuse an answer that is not one read-only statement; anything else may be submitted.

    The statement is compiled, not run (``EXPLAIN``), so the authorizer sees it. A syntax
    error or unknown column does not stop a submission: that answer is simply wrong.
    """
    if not sql.strip():
        raise ToolArgumentError("submit_sql needs a non-empty SQL query.")
    try:
        db.compile(sql)
    except QueryRefused:
        raise
    except QueryError:
        pass


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        list_tables, describe_table, foreign_keys, join_path,
        sample_rows, distinct_values, run_query, submit_sql,
    )
}


def tool_specs() -> list[dict[str, Any]]:
    """Function-calling specs of all eight tools, in prompt order."""
    return [t.spec() for t in TOOLS.values()]


def call_tool(db: Database, name: str, args: Mapping[str, Any]) -> ToolOutcome:
    """Run one tool call; every failure becomes an error observation (``ok=False``)."""
    start = time.perf_counter()
    tool = TOOLS.get(name)
    sql = args.get("sql") if isinstance(args.get("sql"), str) else None
    if tool is None:
        text = f"Error: unknown tool '{name}'. Available tools: {', '.join(TOOLS)}."
        return ToolOutcome(text, ok=False, elapsed_s=time.perf_counter() - start)
    try:
        bound = tool.bind(args)
        sql = bound.get("sql", sql)
        text = tool.function(db, **bound)
    except SqlscoutError as exc:
        return ToolOutcome(f"Error: {exc}", ok=False, elapsed_s=time.perf_counter() - start, sql=sql)
    data = text.as_dict() if isinstance(text, Table) else None
    return ToolOutcome(
        str(text), ok=True, elapsed_s=time.perf_counter() - start, ends_episode=tool.ends_episode, sql=sql, data=data
    )
