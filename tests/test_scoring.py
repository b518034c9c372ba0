"""Execution comparison under the three semantics and the outcome tiers (SPEC §5).

Data-driven: tests/data/scoring_cases.jsonl holds (pred SQL, gold SQL) pairs with the
expected match under ``official``, ``strict`` and ``spider`` and the outcome tier, run
on the fixture database built from tests/data/scoring_fixture.sql.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sqlscout.env.sandbox import Database
from sqlscout.scoring import (
    ExecResult,
    Outcome,
    Semantics,
    Verdict,
    execute_for_scoring,
    has_top_level_order_by,
    parses,
    score_sql,
)

DATA = Path(__file__).parent / "data"
CASES = [json.loads(line) for line in (DATA / "scoring_cases.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def fixture_db(tmp_path_factory: pytest.TempPathFactory) -> Database:
    import sqlite3

    path = tmp_path_factory.mktemp("scoring") / "scoring.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript((DATA / "scoring_fixture.sql").read_text())
    conn.close()
    with Database(path) as db:
        yield db


def test_cases_cover_what_the_issue_lists() -> None:
    ids = " ".join(c["id"] for c in CASES)
    for topic in ("duplicates", "order", "null", "int_equals_float", "column_order", "empty", "tie"):
        assert topic in ids
    # Every semantics disagrees with another one somewhere, or the cases prove little.
    for a, b in (("official", "strict"), ("strict", "spider"), ("official", "spider")):
        assert any(c[a] != c[b] for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_scoring_cases(fixture_db: Database, case: dict) -> None:
    scored = score_sql(fixture_db, case["pred"], case["gold"])
    verdict = scored.verdict
    got = {s: verdict.correct(s) for s in ("official", "strict", "spider")}
    assert got == {s: case[s] for s in ("official", "strict", "spider")}, case.get("why")
    assert verdict.outcome.value == case["outcome"]
    # The outcome under each semantics follows its own match (test-suite, which runs
    # rewritten queries, has its cases in test_fidelity.py).
    for semantics in (Semantics.OFFICIAL, Semantics.STRICT, Semantics.SPIDER):
        under = score_sql(fixture_db, case["pred"], case["gold"], gold=scored.gold, semantics=semantics).verdict
        if case["outcome"] in ("equivalent", "executable"):
            assert under.outcome is (Outcome.EQUIVALENT if case[semantics.value] else Outcome.EXECUTABLE)
        else:
            assert under.outcome.value == case["outcome"]


def test_verdict_records_errors_and_row_counts(fixture_db: Database) -> None:
    verdict = score_sql(fixture_db, "SELECT nme FROM person", "SELECT name FROM person").verdict
    assert verdict.pred_error == "SQL error: no such column: nme"
    assert verdict.pred_rows is None and verdict.gold_rows == 5 and verdict.gold_error is None
    assert Verdict.from_dict(json.loads(json.dumps(verdict.to_dict()))) == verdict


def test_a_cached_gold_result_is_used_as_given(fixture_db: Database) -> None:
    gold = execute_for_scoring(fixture_db, "SELECT name FROM person")
    assert gold.ok and len(gold.rows) == 5
    fake = ExecResult(("name",), [("Ada",)])
    assert score_sql(fixture_db, "SELECT 'Ada'", "SELECT name FROM person", gold=fake).verdict.official
    assert not score_sql(fixture_db, "SELECT 'Ada'", "SELECT name FROM person", gold=gold).verdict.official


def test_scoring_deadline_and_row_cap(fixture_db: Database) -> None:
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    result = execute_for_scoring(fixture_db, endless, timeout_s=0.2)
    assert result.timed_out and not result.ok
    capped = execute_for_scoring(fixture_db, "SELECT * FROM person, pet", max_rows=10)
    assert capped.error == "result has more than 10 rows" and not capped.ok
    scored = score_sql(fixture_db, endless, "SELECT 1", timeout_s=0.2)
    assert scored.verdict.outcome is Outcome.PARSABLE and scored.pred.timed_out


def test_outcome_ranks() -> None:
    ranked = sorted(Outcome, key=lambda o: o.rank, reverse=True)
    assert ranked == [Outcome.EQUIVALENT, Outcome.EXECUTABLE, Outcome.PARSABLE, Outcome.INVALID]


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT a FROM t ORDER BY a", True),
        ("select a from t order by a desc limit 3", True),
        ("SELECT a FROM (SELECT a FROM t ORDER BY a)", False),
        ("SELECT a FROM t WHERE b = 'order by'", False),
        ("SELECT a FROM t UNION SELECT a FROM u ORDER BY a", True),
        ("WITH x AS (SELECT a FROM t ORDER BY a) SELECT a FROM x", False),
        ("SELECT a FROM t ORDER BY", True),  # unparsable: the text fallback decides
    ],
)
def test_top_level_order_by(sql: str, expected: bool) -> None:
    assert has_top_level_order_by(sql) is expected


def test_parsable_means_sqlglot_parses_it_as_sqlite() -> None:
    assert parses("SELECT name FROM singer WHERE age > 3")
    assert parses("SELECT nosuchcolumn FROM nosuchtable")
    assert not parses("SELECT FROM WHERE")
    assert not parses("Ada") and not parses("42") and not parses("x = 1") and not parses("*")
    assert parses("VALUES (1)") and parses("DELETE FROM t")  # statements, even if refused later
    assert not parses(None) and not parses("   ")


MANY_ROWS = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 12000) SELECT i FROM n"


def test_a_gold_query_is_held_to_the_scoring_row_cap_not_the_sandboxs(fixture_db: Database, tmp_path: Path) -> None:
    """GoldResults passed no row cap, and execute_for_scoring took None as the sandbox's
    interactive 10,000 rows: a gold of 12,000 rows was an error ("more than None rows")
    while the same prediction ran, so eval and the trainer scored it wrong."""
    from sqlscout.scoring.gold import GoldResults

    gold, _ = GoldResults().get(fixture_db, MANY_ROWS)
    assert gold.ok and len(gold.rows) == 12000
    assert score_sql(fixture_db, MANY_ROWS, MANY_ROWS, gold=gold).verdict.official
    assert execute_for_scoring(fixture_db, MANY_ROWS, max_rows=None, timeout_s=None).ok


def test_a_result_past_the_size_cap_is_a_resource_limit_that_is_not_cached(tmp_path: Path) -> None:
    import sqlite3

    from sqlscout.env.sandbox import SandboxConfig
    from sqlscout.scoring.result_cache import ResultCache

    path = tmp_path / "one.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    with Database(path, SandboxConfig(max_result_bytes=1_000_000, max_value_bytes=100_000)) as db:
        big = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50) SELECT zeroblob(90000) FROM n"
        result = execute_for_scoring(db, big)
        assert result.resource_limit and not result.ok and "larger than 1,000,000 bytes" in result.error
        as_gold = score_sql(db, "SELECT 1", big).verdict
        assert as_gold.resource_limit == "gold" and as_gold.to_dict()["resource_limit"] == "gold"
        assert score_sql(db, big, "SELECT 1").verdict.resource_limit == "prediction"
        assert "resource_limit" not in score_sql(db, "SELECT 1", "SELECT 1").verdict.to_dict()
        assert Verdict.from_dict(as_gold.to_dict()) == as_gold
    cache = ResultCache(tmp_path / "cache")
    cache.put_many([("h", big, result), ("h", "SELECT 1", ExecResult(("1",), [(1,)]))])
    fresh = ResultCache(tmp_path / "cache")
    assert fresh.get("h", big) is None and fresh.get("h", "SELECT 1").ok
