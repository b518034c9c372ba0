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

import functools
import re
import threading
from typing import Any

__all__ = ["parse_sqlite", "parser_version"]

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


@functools.lru_cache(maxsize=1)
def parser_version() -> str | None:
    """The installed sqlglot's version, read from its files without importing it (that
    takes a sixth of a second), or None when it cannot be told. Answers worked out by
    sqlglot are cached under it (:mod:`sqlscout.scoring.result_cache`).

    >>> import sqlglot; parser_version() == sqlglot.__version__
    True
    """
    import importlib.util
    from pathlib import Path

    try:
        spec = importlib.util.find_spec("sqlglot")
        if spec is None or not spec.origin:
            return None
        text = Path(spec.origin).with_name("_version.py").read_text(encoding="utf-8")
    except (OSError, ImportError, ValueError):
        return None
    found = re.search(r"""^__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", text, re.M)
    return found.group(1) if found else None
