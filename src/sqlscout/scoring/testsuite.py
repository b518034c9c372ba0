"""The ``test-suite`` semantics: what taoyds/test-suite-sql-eval's ``evaluation.py
--etype exec`` decides, with its defaults (no value plugging, DISTINCT removed).

Written from a reading of the official script's behaviour, not from its code. Before
running anything the official script rewrites the queries:

- in the prediction, every ``value`` becomes ``1``: the text, wherever it stands, so an
  alias ``AS value``, a column ``total_value`` and a string ``'values'`` change too
  (the script's placeholder step is a plain ``str.replace``; the ``spider`` semantics is
  the corrected mode that leaves them alone);
- in both queries ``> =``, ``< =`` and ``! =`` lose their inner space;
- in both queries every ``DISTINCT`` keyword is removed (its default; the SQL is cut to
  its first statement by the same step, as its tokenizer returns statements);
- in both queries ``YEAR(CURDATE())`` becomes ``2020``.

Then both run, and the results are equal when they have the same number of rows and
columns, the rows hold the same values each (sorted by ``str(value) + str(type)``: a
set comparison of those, or a list comparison when the gold SQL's text contains
``order by``), and some permutation of the predicted columns makes the two results
equal as bags of rows (as lists under ``order by``). Two empty results are equal:
:func:`sqlscout.scoring.compare.test_suite_match`.

>>> test_suite_sql("SELECT DISTINCT name FROM t WHERE age > = value AND id < 9", prediction=True)
'SELECT  name FROM t WHERE age >= 1 AND id < 9'
>>> test_suite_sql("SELECT count(*) AS value FROM t WHERE kind = 'values'", prediction=True)
"SELECT count(*) AS 1 FROM t WHERE kind = '1s'"
"""

from __future__ import annotations

import re

__all__ = ["test_suite_sql"]

_CUR_YEAR = re.compile(r"YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*", re.I)
_WORD = re.compile(r"[\w$#]+")


def test_suite_sql(sql: str, *, prediction: bool) -> str:
    """``sql`` as the official script runs it (``prediction``: the predicted query,
    which alone has every ``value`` replaced). Rewriting twice changes nothing more."""
    if prediction:
        sql = sql.replace("value", "1")
    sql = sql.strip()
    sql = sql.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")
    sql = _first_statement_without_distinct(sql)
    return _CUR_YEAR.sub("2020", sql)


def _first_statement_without_distinct(sql: str) -> str:
    """The first statement (through its ``;``) with every ``DISTINCT`` word removed;
    quoted strings, quoted names and comments are left as they are."""
    out: list[str] = []
    at, end = 0, len(sql)
    while at < end:
        char = sql[at]
        if char in "'\"`":
            close = _closing_quote(sql, at, char)  # an unclosed quote is a character of its own
            out.append(sql[at:close])
            at = close
        elif char == "[":
            close = sql.find("]", at + 1)
            close = end if close < 0 else close + 1
            out.append(sql[at:close])
            at = close
        elif sql.startswith("--", at):
            newline = sql.find("\n", at)
            close = end if newline < 0 else newline + 1
            out.append(sql[at:close])
            at = close
        elif sql.startswith("/*", at) and sql.find("*/", at + 2) >= 0:
            close = sql.find("*/", at + 2) + 2
            out.append(sql[at:close])
            at = close
        elif char == ";":
            out.append(";")
            break
        else:
            word = _WORD.match(sql, at)
            if word is None:
                out.append(char)
                at += 1
                continue
            text = word.group()
            # ':distinct' and '@distinct' are placeholders, one token each.
            placeholder = at > 0 and sql[at - 1] in ":@"
            if text.lower() != "distinct" or placeholder:
                out.append(text)
            at = word.end()
    return "".join(out)


def _closing_quote(sql: str, start: int, quote: str) -> int:
    """Index just past the quoted token opened at ``start`` (doubled quotes and, in
    strings, backslash escapes stay inside); just past the quote when it is unclosed."""
    at = start + 1
    while at < len(sql):
        char = sql[at]
        if char == "\\" and quote != "`":
            at += 2
            continue
        if char == quote:
            if at + 1 < len(sql) and sql[at + 1] == quote:
                at += 2
                continue
            return at + 1
        at += 1
    return start + 1
