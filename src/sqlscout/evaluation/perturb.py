"""Wrong-on-purpose variants of a gold query, for checking a scorer against itself.

Each variant changes the result in a way some semantics notice and others do not:
duplicated rows (official ignores them, strict does not), reordered rows (only an
ordered comparison notices), swapped columns (only Spider's column permutation
forgives them), a cut-off result, an empty one, a syntax error, an unknown column.
``perturb(sql, n)`` picks the variant by ``n``, so a benchmark gets a fixed, varied set
of predictions from its gold queries.

>>> perturb("SELECT name, age FROM singer ORDER BY age", 1)
'SELECT * FROM (SELECT name, age FROM singer ORDER BY age) UNION ALL SELECT * FROM (SELECT name, age FROM singer ORDER BY age)'
>>> [name for name, _ in VARIANTS][:3]
['same', 'doubled', 'reversed']
"""

from __future__ import annotations

import re
from typing import Callable

__all__ = ["VARIANTS", "perturb"]

_ORDER_DIR = re.compile(r"\b(ASC|DESC)\b", re.I)
_SELECT_LIST = re.compile(r"^\s*SELECT\s+(?!DISTINCT\b)(?P<a>[\w.\"`]+)\s*,\s*(?P<b>[\w.\"`]+)(?P<rest>\s+FROM\b)", re.I)


def _reversed(sql: str) -> str:
    """ORDER BY directions flipped (or DESC added to the last ORDER BY key)."""
    if _ORDER_DIR.search(sql):
        return _ORDER_DIR.sub(lambda m: "ASC" if m.group(1).upper() == "DESC" else "DESC", sql)
    if re.search(r"\border\s+by\b", sql, re.I):
        match = re.search(r"\s+LIMIT\b", sql, re.I)
        return sql[: match.start()] + " DESC" + sql[match.start() :] if match else sql + " DESC"
    return f"SELECT * FROM ({sql}) ORDER BY 1 DESC"


def _swapped(sql: str) -> str:
    """The first two selected columns swapped, when the SELECT list starts plainly."""
    return _SELECT_LIST.sub(lambda m: f"SELECT {m.group('b')}, {m.group('a')}{m.group('rest')}", sql, count=1)


VARIANTS: list[tuple[str, Callable[[str], str]]] = [
    ("same", lambda sql: sql),
    ("doubled", lambda sql: f"SELECT * FROM ({sql}) UNION ALL SELECT * FROM ({sql})"),
    ("reversed", _reversed),
    ("swapped", _swapped),
    ("first_row", lambda sql: f"SELECT * FROM ({sql}) LIMIT 1"),
    ("empty", lambda sql: f"SELECT * FROM ({sql}) WHERE 0"),
    ("distinct", lambda sql: f"SELECT DISTINCT * FROM ({sql})"),
    ("syntax_error", lambda sql: sql.replace("SELECT", "SELEC", 1) if "SELECT" in sql else "SELEC " + sql),
    ("unknown_column", lambda sql: f"SELECT no_such_column FROM ({sql})"),
]


def perturb(sql: str, n: int) -> str:
    """Variant ``n % len(VARIANTS)`` of ``sql`` (a trailing semicolon is dropped first)."""
    sql = sql.strip().rstrip(";").strip()
    return VARIANTS[n % len(VARIANTS)][1](sql)
