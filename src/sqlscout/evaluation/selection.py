"""Execution-guided selection: answer with the query most samples agree on (issue 11 item 3).

N episodes of one question end in N final queries. Each is run on the database and the
queries are grouped by their result, compared as a set of rows (the official metric's
semantics, so order and duplicates do not split a group). The answer is the largest
group's query. Ties go to the group whose queries ran without error, then to the group
holding the shortest query, then to the group reached first; the group answers with its
shortest query. A query that fails forms a group only with the same text; an episode
without an answer does not vote.

>>> import sqlite3, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "t.sqlite")
>>> with sqlite3.connect(path) as conn:
...     _ = conn.executescript("CREATE TABLE t(a INT); INSERT INTO t VALUES (1), (2);")
>>> from sqlscout.env.sandbox import Database
>>> with Database(path) as db:
...     pick = select_by_execution(["SELECT a FROM t ORDER BY a DESC", "SELECT a FROM t", "SELECT 1", None], db)
>>> pick.sql, pick.votes, pick.group
('SELECT a FROM t', 2, (0, 1))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

from sqlscout.env.sandbox import Database
from sqlscout.evaluation.record import ResultPreview
from sqlscout.scoring.verdict import execute_for_scoring

__all__ = ["Candidate", "Selection", "pick_group", "select_by_execution"]


@dataclass(frozen=True)
class Candidate:
    """One sample's answer as the vote sees it: its result key (for a query that failed:
    its text with whitespace collapsed), whether it ran, its SQL."""

    key: Hashable
    ran: bool
    sql: str


@dataclass(frozen=True)
class Selection:
    """The chosen answer.

    Attributes:
        sql: the chosen query; None when no sample gave one.
        index: the position of that query among the candidates given.
        group: positions of every query in the winning group.
        votes: the size of the winning group.
        ran: whether the winning group's queries ran without error.
        groups: how many distinct results (and failed queries) there were.
    """

    sql: str | None
    index: int | None
    group: tuple[int, ...]
    votes: int
    ran: bool
    groups: int


def pick_group(candidates: Sequence[Candidate | None]) -> tuple[int, ...]:
    """Positions of the winning group (empty when every candidate is None), its
    shortest query first. The one ranking rule shared by answering and by maj@N."""
    groups: dict[tuple[bool, Hashable], list[int]] = {}
    for i, c in enumerate(candidates):
        if c is not None:
            groups.setdefault((c.ran, c.key), []).append(i)
    if not groups:
        return ()

    def shortest(members: list[int]) -> int:
        return min(members, key=lambda i: (len(candidates[i].sql), i))  # type: ignore[union-attr]

    def rank(item: tuple[tuple[bool, Hashable], list[int]]) -> tuple[int, int, int, int]:
        (ran, _), members = item
        return (-len(members), 0 if ran else 1, len(candidates[shortest(members)].sql), members[0])  # type: ignore[union-attr]

    _, members = min(groups.items(), key=rank)
    first = shortest(members)
    return (first, *(i for i in members if i != first))


def select_by_execution(queries: Sequence[str | None], db: Database, *, timeout_s: float | None = None) -> Selection:
    """Choose among the final queries of N samples by running them on ``db`` (see the module).

    ``timeout_s`` bounds each query (default: the scoring deadline). Identical queries
    run once.
    """
    results: dict[str, Candidate] = {}
    candidates: list[Candidate | None] = []
    for sql in queries:
        if sql is None or not sql.strip():
            candidates.append(None)
            continue
        if sql not in results:
            kwargs = {} if timeout_s is None else {"timeout_s": timeout_s}
            preview = ResultPreview.of(execute_for_scoring(db, sql, **kwargs))
            key = preview.fingerprint if preview else " ".join(sql.split())
            results[sql] = Candidate(key, preview is not None, sql)
        candidates.append(results[sql])
    order = pick_group(candidates)
    if not order:
        return Selection(None, None, (), 0, False, 0)
    keys = {(c.ran, c.key) for c in candidates if c is not None}
    winner = candidates[order[0]]
    assert winner is not None
    return Selection(winner.sql, order[0], tuple(sorted(order)), len(order), winner.ran, len(keys))
