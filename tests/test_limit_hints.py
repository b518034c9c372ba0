"""Repair hints (the ``repair_hints`` rule, once ``query_hints``) on a LIMIT the question
does not ask for (hints version 10): the query runs without it, in its place, on the real
Chinook file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import pytest

from assist_helpers import assisted
from conftest import CHINOOK
from sqlscout.env.episode import Episode
from sqlscout.env.sandbox import Database
from sqlscout.env.task import Task


@pytest.fixture(scope="module")
def db() -> Iterator[Database]:
    with Database(CHINOOK) as database:
        yield database


def test_a_limit_the_question_does_not_ask_for_is_dropped_before_the_query_runs(db: Database) -> None:
    # Version 10, from the 0.5B's Spider traces (hints v9): a query with a LIMIT added to
    # look at rows was told to drop it, but it was the only query that had run, so under
    # submit_tested nothing could be submitted; the model kept the LIMIT, looped or ran out
    # of rounds, and the final turn, which quoted that query as "the last query that ran",
    # answered with it: 6 of the 21 episodes that did not submit. The query now runs without
    # the LIMIT in its place, and that query is the one tested, submittable and quoted.
    listing = Task("q", "List the names of all genres.", CHINOOK, gold_sql="SELECT Name FROM Genre")
    plain = "SELECT Name FROM Genre ORDER BY Name"
    step = json.dumps({"tool": "run_query", "args": {"sql": plain + " LIMIT 5"}})
    ep = assisted(listing, db, repair_hints=True, submit_hint=True)
    shown = ep.step(step)
    assert shown.startswith("Ran without its LIMIT 5: results show the first 5 rows anyway")
    assert f"Result 1 of run_query(sql={plain!r}):" in shown and "submit that same query" in shown
    assert ep.rounds[0].calls[0].args == {"sql": plain} and ep.last_good_sql == plain
    held = assisted(listing, db, repair_hints=True, constrain=True, submit_tested=True)
    held.step(step)
    grammar = held.request().constraint
    assert grammar is not None and grammar.submittable == (plain,)
    top = Task("q", "What are the 5 longest tracks?", CHINOOK)
    asked = assisted(top, db, repair_hints=True).step(step)
    assert "Ran without" not in asked and "LIMIT 5" in asked  # the question asks for five
    one = json.dumps({"tool": "run_query", "args": {"sql": "SELECT Name FROM Genre LIMIT 1"}})
    assert "Ran without" not in assisted(listing, db, repair_hints=True).step(one)
    # Any other limit the question does not ask for (the 1.5B model added LIMIT 10 to look).
    ten = json.dumps({"tool": "run_query", "args": {"sql": "SELECT Name FROM Genre LIMIT 10"}})
    cut = assisted(listing, db, repair_hints=True, constrain=True, submit_tested=True)
    assert cut.step(ten).startswith("Ran without its LIMIT 10: the question asks for no 10 rows")
    assert cut.request().constraint.submittable == ("SELECT Name FROM Genre",)  # type: ignore[union-attr]
    # Without repair_hints the query runs as sent.
    assert "Ran without" not in Episode(listing, db).step(step)


def test_a_query_sent_again_with_its_dropped_limit_is_a_loop_that_submits(db: Database) -> None:
    # From the 0.5B's Spider traces: a query told to drop its LIMIT was copied back as it
    # was until the loop ended (6 of 100 episodes with hints v5). The copy runs without the
    # LIMIT too, so it repeats a call that ran: the loop asks to submit the tested query.
    task = Task("q", "List the titles of the albums of artist 1.", CHINOOK)
    rules = {"repair_hints": True, "end_on_repeat": True, "constrain": True, "guided_start": True, "submit_tested": True}
    ep = assisted(task, db, **rules)
    limited = "SELECT Title FROM Album WHERE ArtistId = 1 LIMIT 5"
    plain = "SELECT Title FROM Album WHERE ArtistId = 1"
    assert f"Result 1 of run_query(sql={plain!r})" in ep.step(json.dumps({"tool": "run_query", "args": {"sql": limited}}))
    assert ep.request().constraint.submittable == (plain,)  # type: ignore[union-attr]
    ep.step(json.dumps({"tool": "run_query", "args": {"sql": limited}}))
    grammar = ep.request().constraint
    assert grammar is not None and grammar.tools == ("submit_sql",) and grammar.submittable == (plain,)
    assert not ep.in_final_turn
    # A LIMIT the question asks for is kept, and a copy of it is a loop as before.
    asked = assisted(replace(task, question="Which are the first 5 titles of artist 1?"), db, **rules)
    asked.step(json.dumps({"tool": "run_query", "args": {"sql": limited}}))
    asked.step(json.dumps({"tool": "run_query", "args": {"sql": limited}}))
    assert asked.request().constraint.submittable == (limited,)  # type: ignore[union-attr]  # asked to submit it
