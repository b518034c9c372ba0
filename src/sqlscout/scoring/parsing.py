"""sqlglot's SQLite parser, built once per thread, and the questions scoring asks it.

``sqlglot.parse(sql, read="sqlite")`` builds a dialect, a tokenizer and a parser on
every call, which costs about as much as parsing a short query. Scoring parses many
(the *parsable* tier of predictions that do not run, the top-level ORDER BY of gold
queries), so each thread keeps one tokenizer and one parser; both reset themselves at
every call, so the trees are the ones ``sqlglot.parse`` gives.

The questions (:func:`statement_parses`: the parsable tier; :func:`order_by_parsed`: a
nested gold query's top-level ORDER BY) are answered here or, by a scorer that has not
imported sqlglot yet, in a helper process (:mod:`sqlscout.scoring.parse_helper`) that
runs :func:`serve` of this very file, so its answers are the ones this process would
give. This module imports only the standard library (sqlglot when a question is
asked), so that a helper starts in a few milliseconds.

>>> [type(tree).__name__ for tree in parse_sqlite("SELECT 1; SELECT 2")]
['Select', 'Select']
"""

from __future__ import annotations

import functools
import re
import sys
import threading
from typing import Any, Callable, Iterable, TextIO

__all__ = ["ORDER_BY", "order_by_parsed", "parse_sqlite", "parser_version", "serve", "sqlglot_loaded", "statement_parses"]

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


def sqlglot_loaded() -> bool:
    """Whether sqlglot's parser is imported in this process already (asking it here
    then costs only the parse)."""
    return "sqlglot.dialects.dialect" in sys.modules


# sqlglot's classes, looked up once (an import statement costs a microsecond a call).
_PARSE_ERRORS: tuple[type[BaseException], ...] = ()
_BARE: tuple[type, ...] = ()  # expressions that are no statement


def statement_parses(sql: str) -> bool:
    """Whether sqlglot parses ``sql`` (which holds a statement) as SQLite into something
    other than a bare expression: the parsable tier (:func:`sqlscout.scoring.parses`)."""
    global _PARSE_ERRORS, _BARE
    if not _BARE:
        from sqlglot import exp
        from sqlglot.errors import SqlglotError

        _PARSE_ERRORS = (SqlglotError, ValueError, RecursionError)
        _BARE = (exp.Condition, exp.Alias, exp.Identifier, exp.Star)
    try:
        trees = parse_sqlite(sql)
    except _PARSE_ERRORS:
        return False
    return any(t is not None and not isinstance(t, _BARE) for t in trees)


ORDER_BY = re.compile(r"\border\s+by\b", re.I)  # the words, wherever they stand


def order_by_parsed(sql: str) -> bool:
    """Whether sqlglot finds a top-level ORDER BY in ``sql``, or the text outside
    parentheses has one where sqlglot gives no tree
    (:func:`sqlscout.scoring.has_top_level_order_by` for nested queries)."""
    from sqlglot import exp

    # sqlglot.parse_one(sql, read="sqlite"), which raises on no tree and wraps several
    # statements in a Block (which has no ORDER BY).
    try:
        trees = parse_sqlite(sql)
    except Exception:  # noqa: BLE001 - sqlglot raises many types; fall back to text
        return order_by_outside_parens(sql)
    if not trees or trees[0] is None:
        return order_by_outside_parens(sql)
    return len(trees) == 1 and isinstance(trees[0].args.get("order"), exp.Order)


def order_by_outside_parens(sql: str) -> bool:
    depth = 0
    flat = []
    for ch in sql:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            flat.append(ch)
    return bool(ORDER_BY.search("".join(flat)))


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


ASK: dict[str, Callable[[str], bool]] = {"p": statement_parses, "o": order_by_parsed}  # the questions, by kind


def serve(questions: Iterable[str], answers: TextIO) -> None:
    """A helper's loop: one line per question (its kind, then the SQL as JSON), one line
    per answer (``1``, ``0``, or ``?`` where answering raised), in order."""
    import json

    ask = ASK
    for line in questions:
        try:
            answer = "1" if ask[line[0]](json.loads(line[1:])) else "0"
        except Exception:  # noqa: BLE001 - the asker answers this one itself
            answer = "?"
        answers.write(answer + "\n")
        answers.flush()
