"""Removing foreign keys to dropped tables from a ``CREATE TABLE`` statement, text intact.

A database built for a schema-size condition keeps only some tables. Its ``CREATE
TABLE`` statements must not mention the dropped ones (``describe_table`` and
``foreign_keys`` would reveal them), yet everything else must stay byte for byte: the
model sees this text, and re-generating it changes meaning (``INT PRIMARY KEY`` is not
``INTEGER PRIMARY KEY`` in SQLite, and sqlglot writes the latter). So the statement is
tokenised, and only the foreign-key clauses that reference a dropped table are cut.

>>> strip_foreign_keys('CREATE TABLE t (a INT REFERENCES gone(id), b INT, FOREIGN KEY (b) REFERENCES kept(id))', {"gone"})
'CREATE TABLE t (a INT, b INT, FOREIGN KEY (b) REFERENCES kept(id))'
>>> strip_foreign_keys('CREATE TABLE t (a INT, b INT,\\n  FOREIGN KEY (b) REFERENCES "Gone" (id) ON DELETE SET NULL\\n)', {"gone"})
'CREATE TABLE t (a INT, b INT\\n)'
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

__all__ = ["strip_foreign_keys", "unquote"]

_TOKEN = re.compile(
    r"""(?P<skip>\s+|--[^\n]*|/\*.*?(?:\*/|$))
      | (?P<tok>"(?:[^"]|"")*"|`(?:[^`]|``)*`|\[[^\]]*\]|'(?:[^']|'')*'|[(),]|[^\s(),"'`\[]+)""",
    re.S | re.X,
)
_ACTIONS = {"CASCADE", "RESTRICT"}


def _tokens(sql: str) -> list[tuple[str, int, int]]:
    """(text, start, end) of each token, comments and whitespace left out."""
    return [(m.group("tok"), m.start(), m.end()) for m in _TOKEN.finditer(sql) if m.group("tok")]


def unquote(name: str) -> str:
    """An identifier without its quotes: ``"a""b"`` → ``a"b``, ``[x]`` → ``x``."""
    if len(name) >= 2 and name[0] in "\"`'" and name[-1] == name[0]:
        return name[1:-1].replace(name[0] * 2, name[0])
    if len(name) >= 2 and name[0] == "[" and name[-1] == "]":
        return name[1:-1]
    return name


def strip_foreign_keys(sql: str, dropped: Iterable[str]) -> str:
    """``sql`` without the foreign keys (column or table constraints) that reference a
    table in ``dropped`` (compared case-insensitively); the rest of the text untouched."""
    gone = {d.lower() for d in dropped}
    toks = _tokens(sql)
    cuts: list[tuple[int, int]] = []
    for item, comma in _body_items(toks):
        words = [t[0].upper() for t in item]
        bounds = _clause_starts(words) + [len(item)]
        clauses = list(zip(bounds, bounds[1:]))
        removed = []
        for k, (a, b) in enumerate(clauses):
            lead = a + 2 if words[a] == "CONSTRAINT" else a
            if words[lead : lead + 2] != ["FOREIGN", "KEY"]:
                cuts.extend(_column_reference_cuts(item[a:b], gone))
                continue
            ref = next((j for j in range(lead, b - 1) if words[j] == "REFERENCES"), None)
            if ref is not None and unquote(item[ref + 1][0]).lower() in gone:
                removed.append(k)
        if len(removed) == len(clauses):  # the whole item goes, with the comma before it
            cuts.append((comma[1] if comma is not None else item[0][1], item[-1][2]))
            continue
        kept_first = next(k for k in range(len(clauses)) if k not in removed)
        for k in removed:
            a, b = clauses[k]
            # A removed first clause is cut up to the first kept one, so that the comma
            # before the item now precedes that one.
            cuts.append((item[a][1], item[clauses[kept_first][0]][1] if k < kept_first else item[b - 1][2]))
    return _apply_cuts(sql, cuts)


def _apply_cuts(sql: str, cuts: list[tuple[int, int]]) -> str:
    merged: list[list[int]] = []
    for start, end in sorted(cuts):
        # Take the whitespace before a cut along with it, so no blank runs remain.
        while start > 0 and sql[start - 1].isspace():
            start -= 1
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in reversed(merged):
        sql = sql[:start] + sql[end:]
    return sql


def _body_items(toks: list[tuple[str, int, int]]) -> Iterator[tuple[list[tuple[str, int, int]], tuple[str, int, int] | None]]:
    """The top-level items of the column list, each with the comma token before it."""
    depth, item, prev_comma = 0, [], None
    for tok in toks:
        text = tok[0]
        if text == "(":
            depth += 1
            if depth == 1:
                continue
        elif text == ")":
            depth -= 1
            if depth == 0:
                if item:
                    yield item, prev_comma
                return
        elif text == "," and depth == 1:
            if item:
                yield item, prev_comma
            item, prev_comma = [], tok
            continue
        if depth >= 1:
            item.append(tok)


def _clause_starts(words: list[str]) -> list[int]:
    """Where an item's table constraints begin. SQLite accepts table constraints with no
    comma between them (``PRIMARY KEY (a) FOREIGN KEY (b) REFERENCES t``, as several
    Spider databases write them), so a ``FOREIGN KEY`` inside an item starts a new one."""
    starts, depth = [0], 0
    for j, word in enumerate(words):
        depth += word == "("
        depth -= word == ")"
        if j > 0 and depth == 0 and word == "FOREIGN" and words[j + 1 : j + 2] == ["KEY"]:
            start = j - 2 if j >= 2 and words[j - 2] == "CONSTRAINT" else j
            if start > 0:
                starts.append(start)
    return starts


def _column_reference_cuts(item: list[tuple[str, int, int]], gone: set[str]) -> list[tuple[int, int]]:
    cuts = []
    depth = 0
    i = 0
    while i < len(item):
        text = item[i][0]
        depth += text == "("
        depth -= text == ")"
        if depth == 0 and text.upper() == "REFERENCES" and i + 1 < len(item):
            start = i - 2 if i >= 2 and item[i - 2][0].upper() == "CONSTRAINT" else i
            end = _reference_clause_end(item, i + 1)
            if unquote(item[i + 1][0]).lower() in gone:
                cuts.append((item[start][1], item[end][2]))
            i = end
        i += 1
    return cuts


def _reference_clause_end(item: list[tuple[str, int, int]], name: int) -> int:
    """Index of the last token of a ``REFERENCES name [(cols)] [actions...]`` clause."""
    words = [t[0].upper() for t in item]
    end = name
    if end + 1 < len(item) and words[end + 1] == "(":
        depth = 0
        for j in range(end + 1, len(item)):
            depth += words[j] == "("
            depth -= words[j] == ")"
            if depth == 0:
                end = j
                break

    def at(k: int) -> str:
        return words[k] if k < len(words) else ""

    while True:
        k = end + 1
        if at(k) == "ON" and at(k + 1) in ("DELETE", "UPDATE"):
            action = at(k + 2)
            end = k + 3 if action in ("SET", "NO") else k + 2 if action in _ACTIONS else k + 1
        elif at(k) == "MATCH":
            end = k + 1
        elif at(k) == "NOT" and at(k + 1) == "DEFERRABLE":
            end = k + 1
        elif at(k) == "DEFERRABLE":
            end = k
        elif at(k) == "INITIALLY":
            end = k + 1
        else:
            return min(end, len(item) - 1)
