"""Execution-guided selection over real databases: Spider's concert_singer and Chinook."""

from __future__ import annotations


import pytest

from conftest import CHINOOK, spider_db
from sqlscout.env.sandbox import Database
from sqlscout.evaluation.selection import Candidate, pick_group, select_by_execution
from sqlscout.scoring.verdict import execute_for_scoring
from sqlscout.scoring import official_match


@pytest.fixture(scope="module")
def concert() -> Database:
    with Database(spider_db("concert_singer")) as db:
        yield db


def test_the_largest_group_of_equal_results_wins(concert: Database) -> None:
    queries = [
        "SELECT name FROM singer WHERE age > 40",  # wrong: a different set of rows
        "SELECT name FROM singer ORDER BY age DESC",
        "SELECT Name FROM singer",  # same rows as the one above, other order
        "SELECT DISTINCT name FROM singer",  # same set, duplicates dropped
    ]
    pick = select_by_execution(queries, concert)
    assert pick.group == (1, 2, 3) and pick.votes == 3 and pick.ran
    assert pick.sql == "SELECT Name FROM singer" and pick.index == 2  # the group's shortest query
    assert pick.groups == 2


def test_ties_go_to_queries_that_ran_then_to_the_shortest(concert: Database) -> None:
    failing = "SELECT nme FROM singer"
    ran = "SELECT COUNT(*) FROM singer"
    pick = select_by_execution([failing, failing, ran, "SELECT count(*)   FROM singer AS s"], concert)
    assert pick.ran and pick.sql == ran and pick.group == (2, 3)
    longer, shorter = "SELECT name FROM stadium WHERE capacity > 5000", "SELECT name FROM singer WHERE age < 30"
    alone = select_by_execution([longer, shorter], concert)
    assert alone.sql == shorter and alone.votes == 1 and alone.groups == 2


def test_failures_group_only_with_the_same_text_and_unanswered_samples_do_not_vote(concert: Database) -> None:
    pick = select_by_execution([None, "SELECT nope FROM singer", "  SELECT nope   FROM singer", "SELECT x FROM y", ""], concert)
    assert not pick.ran and pick.votes == 2 and pick.group == (1, 2)
    empty = select_by_execution([None, "  "], concert)
    assert (empty.sql, empty.index, empty.votes) == (None, None, 0)


def test_a_write_or_a_timeout_never_wins_over_a_result() -> None:
    with Database(CHINOOK) as db:
        slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c"
        pick = select_by_execution(["DELETE FROM Album", slow, "SELECT COUNT(*) FROM Album"], db, timeout_s=0.2)
        assert pick.sql == "SELECT COUNT(*) FROM Album" and pick.ran
        assert db.execute("SELECT COUNT(*) FROM Album").rows == [(347,)]  # nothing was deleted


def test_the_chosen_query_answers_like_its_group(concert: Database) -> None:
    # Whatever member answers, the official metric scores it as the group.
    queries = ["SELECT country FROM singer", "SELECT DISTINCT country FROM singer ORDER BY country", "SELECT 1"]
    pick = select_by_execution(queries, concert)
    rows = [execute_for_scoring(concert, queries[i]).rows for i in pick.group]
    assert all(official_match(rows[0], r) for r in rows)


def test_pick_group_is_pure_and_deterministic() -> None:
    a, b = Candidate("A", True, "SELECT 1"), Candidate("B", True, "SELECT 22")
    assert pick_group([b, a]) == (1,)  # a tie of ones: the shortest query
    assert pick_group([a, b, b]) == (1, 2)
    assert pick_group([None, None]) == ()
