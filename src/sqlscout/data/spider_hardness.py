"""Spider's difficulty levels (easy, medium, hard, extra), from the parsed query.

Spider's files hold each gold query parsed into a nested structure (``"sql"``); the
official evaluation sorts questions into four levels by counting its components. This
is that rule, written against the structure's documented layout, so a Spider score
table can be broken down the way Spider papers report it. Its quirks are kept on
purpose (e.g. the HAVING clause's ``and``/``or`` connectives count as aggregates), since
the point is to reproduce the published split: 248 / 446 / 174 / 166 on dev.

Layout reminders: a condition is ``[cond_unit, "and"|"or", cond_unit, ...]``; a
cond_unit is ``[not, op_id, val_unit, val1, val2]``; a val_unit is ``[unit_op,
col_unit, col_unit]``; a col_unit is ``[agg_id, column, distinct]``; ``select`` is
``[distinct, [[agg_id, val_unit], ...]]``; ``orderBy`` is ``[]`` or ``[dir, [val_unit, ...]]``.
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = ["SPIDER_LEVELS", "hardness"]

SPIDER_LEVELS = ("easy", "medium", "hard", "extra")

_LIKE = 9  # index of "like" in Spider's WHERE_OPS
_NO_AGG = 0  # index of "none" in Spider's AGG_OPS


def hardness(sql: dict[str, Any]) -> str:
    """Spider's level of one parsed query.

    >>> q = {"select": [False, [[3, [0, [0, 0, False], None]]]], "from": {"table_units": [["table_unit", 1]], "conds": []},
    ...      "where": [], "groupBy": [], "having": [], "orderBy": [], "limit": None,
    ...      "intersect": None, "union": None, "except": None}
    >>> hardness(q)
    'easy'
    """
    components = _components(sql)
    nested = len(_nested(sql))
    others = _others(sql)
    if components <= 1 and others == 0 and nested == 0:
        return "easy"
    if (others <= 2 and components <= 1 and nested == 0) or (components <= 2 and others < 2 and nested == 0):
        return "medium"
    if (
        (others > 2 and components <= 2 and nested == 0)
        or (2 < components <= 3 and others <= 2 and nested == 0)
        or (components <= 1 and others == 0 and nested <= 1)
    ):
        return "hard"
    return "extra"


def _conditions(sql: dict[str, Any]) -> list[Any]:
    return sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]


def _nested(sql: dict[str, Any]) -> list[dict[str, Any]]:
    """Subqueries in conditions, then the set-operation operands."""
    found = [v for cond in _conditions(sql) for v in (cond[3], cond[4]) if isinstance(v, dict)]
    return found + [sql[k] for k in ("intersect", "except", "union") if sql[k] is not None]


def _components(sql: dict[str, Any]) -> int:
    count = sum(1 for key in ("where", "groupBy", "orderBy") if sql[key])
    count += sql["limit"] is not None
    count += max(0, len(sql["from"]["table_units"]) - 1)  # joins
    connectives = sql["where"][1::2] + sql["from"]["conds"][1::2] + sql["having"][1::2]
    count += sum(1 for c in connectives if c == "or")
    count += sum(1 for cond in _conditions(sql) if cond[1] == _LIKE)
    return count


def _aggregated(units: Sequence[Any]) -> int:
    # The official rule tests unit[0] against "no aggregate" for every unit it is
    # given, whatever the unit is: for a cond_unit that is its NOT flag, and for the
    # "and"/"or" strings of HAVING their first letter. Kept to reproduce its levels.
    return sum(1 for unit in units if unit[0] != _NO_AGG)


def _others(sql: dict[str, Any]) -> int:
    aggregates = _aggregated(sql["select"][1]) + _aggregated(sql["where"][::2]) + _aggregated(sql["groupBy"])
    if sql["orderBy"]:
        units = sql["orderBy"][1]
        aggregates += _aggregated([u[1] for u in units if u[1]] + [u[2] for u in units if u[2]])
    aggregates += _aggregated(sql["having"])
    count = int(aggregates > 1)
    count += len(sql["select"][1]) > 1
    count += len(sql["where"]) > 1
    count += len(sql["groupBy"]) > 1
    return count
