"""Facts about one episode read off its stored trace: which tables it opened, which of
the gold query's literals it saw, how many distinct calls it made.

These are the per-episode ingredients of the run metrics (``docs/evaluation.md``
defines each one); nothing here runs SQL.

>>> sorted(gold_literals("SELECT name FROM singer WHERE country = \\"France\\" AND song LIKE '%Love%'"))
['France', 'Love']
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from sqlscout.env.trace import CallRecord, EpisodeResult
from sqlscout.errors import SqlscoutError
from sqlscout.scoring import tables_used
from sqlscout.env.tools import TOOLS

__all__ = ["EpisodeFacts", "episode_facts", "gold_literals", "opened_tables", "seen_literals"]

# Tools whose successful call shows a table's columns, keys or rows.
_TABLE_TOOLS = ("describe_table", "foreign_keys", "sample_rows", "distinct_values")


@dataclass(frozen=True)
class EpisodeFacts:
    """Per-episode quantities the run metrics average.

    Attributes:
        rounds: model turns, the forced final turn included.
        tool_rounds: model turns in which tools could be called (all but a forced final turn).
        tool_calls: calls the environment ran (identical calls within one round count once;
            ``submit_sql`` counts).
        distinct_calls: distinct (tool, arguments) pairs over the whole episode.
        gold_tables: tables the gold query reads (lower case); empty without gold SQL.
        opened_gold_tables: those of ``gold_tables`` the episode opened.
        literals: the gold query's string literals.
        literals_seen: those of ``literals`` that appeared in a tool's output.
    """

    rounds: int
    tool_rounds: int
    tool_calls: int
    distinct_calls: int
    gold_tables: frozenset[str]
    opened_gold_tables: frozenset[str]
    literals: frozenset[str]
    literals_seen: frozenset[str]

    @property
    def covers_gold_tables(self) -> bool | None:
        """Whether every gold table was opened; None when the gold query reads no table."""
        return self.opened_gold_tables == self.gold_tables if self.gold_tables else None

    @property
    def literal_recall(self) -> float | None:
        """Share of the gold literals seen; None when the gold query has none."""
        return len(self.literals_seen) / len(self.literals) if self.literals else None


def _calls(result: EpisodeResult) -> Iterable[CallRecord]:
    for round_ in result.rounds:
        yield from round_.calls


def _bound_args(call: CallRecord) -> dict[str, Any]:
    """The call's arguments under their canonical names (``table`` → ``table_name``...)."""
    tool = TOOLS.get(call.tool)
    if tool is None:
        return {}
    try:
        return tool.bind(call.args)
    except SqlscoutError:
        return {}


def opened_tables(result: EpisodeResult) -> frozenset[str]:
    """Tables (lower case) the episode opened: named in a successful ``describe_table``,
    ``foreign_keys``, ``sample_rows`` or ``distinct_values`` call, or read by a
    ``run_query`` that ran without error."""
    opened: set[str] = set()
    for call in _calls(result):
        if not call.ok:
            continue
        args = _bound_args(call)
        if call.tool in _TABLE_TOOLS and isinstance(args.get("table_name"), str):
            opened.add(args["table_name"].strip().strip('"`[]').lower())
        elif call.tool == "run_query" and isinstance(args.get("sql"), str):
            opened |= tables_used(args["sql"])
    return frozenset(opened)


def gold_literals(gold_sql: str | None) -> frozenset[str]:
    """The string values a gold query filters on.

    Single-quoted literals, with LIKE wildcards (``%``) stripped from both ends; and
    double-quoted names that SQLite reads as strings because they stand as the value of
    a comparison or an ``IN`` list (Spider writes ``country = "France"``). Empty strings
    are dropped.
    """
    if not gold_sql:
        return frozenset()
    import sqlglot
    from sqlglot import exp

    try:
        trees = [t for t in sqlglot.parse(gold_sql, read="sqlite") if t is not None]
    except Exception:  # noqa: BLE001 - an unparsable gold query has no literals we can name
        return frozenset()
    found: set[str] = set()
    comparisons = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike)
    for tree in trees:
        for literal in tree.find_all(exp.Literal):
            if literal.is_string:
                found.add(literal.this)
        for node in tree.find_all(*comparisons):
            value = node.expression
            if _is_bare_quoted_name(value, exp):
                found.add(value.name)
        for node in tree.find_all(exp.In):
            for value in node.expressions:
                if _is_bare_quoted_name(value, exp):
                    found.add(value.name)
    return frozenset(v for v in (s.strip("%") for s in found) if v.strip())


def _is_bare_quoted_name(node: Any, exp: Any) -> bool:
    if not isinstance(node, exp.Column) or node.table:
        return False
    identifier = node.this
    return isinstance(identifier, exp.Identifier) and bool(identifier.args.get("quoted"))


def seen_literals(result: EpisodeResult, literals: frozenset[str]) -> frozenset[str]:
    """Those ``literals`` that occur (case-insensitively, as substrings) in the output of
    any tool call other than ``submit_sql`` — what the model saw before answering."""
    if not literals:
        return frozenset()
    seen_text = "\n".join(c.output for c in _calls(result) if c.tool != "submit_sql").lower()
    return frozenset(v for v in literals if v.lower() in seen_text)


def episode_facts(result: EpisodeResult) -> EpisodeFacts:
    gold_sql = result.task.gold_sql
    gold_tables = tables_used(gold_sql) if gold_sql else frozenset()
    literals = gold_literals(gold_sql)
    calls = list(_calls(result))
    distinct = {json.dumps([c.tool, _bound_args(c) or c.args], sort_keys=True, default=str) for c in calls}
    return EpisodeFacts(
        rounds=len(result.rounds),
        tool_rounds=result.tool_rounds,
        tool_calls=len(calls),
        distinct_calls=len(distinct),
        gold_tables=gold_tables,
        opened_gold_tables=gold_tables & opened_tables(result),
        literals=literals,
        literals_seen=seen_literals(result, literals),
    )
