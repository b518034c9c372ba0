"""sqlglot's SQLite parser, built once per thread.

``sqlglot.parse(sql, read="sqlite")`` builds a dialect, a tokenizer and a parser on
every call, which costs about as much as parsing a short query. Scoring parses many
(the *parsable* tier of predictions that do not run, the top-level ORDER BY of gold
queries), so each thread keeps one tokenizer and one parser; both reset themselves at
every call, so the trees are the ones ``sqlglot.parse`` gives.

>>> [type(tree).__name__ for tree in parse_sqlite("SELECT 1; SELECT 2")]
['Select', 'Select']
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["parse_sqlite"]

_local = threading.local()


def parse_sqlite(sql: str) -> list[Any]:
    """What ``sqlglot.parse(sql, read="sqlite")`` returns (or raises), with this
    thread's tokenizer and parser."""
    pair = getattr(_local, "pair", None)
    if pair is None:
        from sqlglot.dialects.dialect import Dialect

        dialect = Dialect.get_or_raise("sqlite")
        pair = _local.pair = (dialect.tokenizer(), dialect.parser())
    tokenizer, parser = pair
    return parser.parse(tokenizer.tokenize(sql), sql)
