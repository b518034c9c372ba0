"""Fidelity of scoring: the Spider comparison's bounded column search, statement-free
answers, and the ``test-suite`` mode that reproduces the official test-suite evaluator.
"""

from __future__ import annotations

import random
import time

import pytest

from sqlscout.env.sandbox import Database
from sqlscout.scoring import Semantics, score_sql, spider_match
from sqlscout.scoring.compare import ComparisonTimeout


def _latin_values(n: int, swap: tuple[int, int] | None = None) -> str:
    """A cyclic n x n Latin square as a VALUES query; ``swap`` exchanges two symbols."""
    rows = []
    for i in range(n):
        row = [(i + j) % n for j in range(n)]
        if swap:
            a, b = swap
            row = [b if v == a else a if v == b else v for v in row]
        rows.append("(" + ", ".join(map(str, row)) + ")")
    return "VALUES " + ", ".join(rows)


def _latin_rows(n: int) -> list[tuple[int, ...]]:
    return [tuple((i + j) % n for j in range(n)) for i in range(n)]


def test_a_latin_square_with_two_symbols_swapped_is_compared_fast(make_db):
    # issue 13 item 3: every column holds the same values, so signatures alone cannot
    # tell the columns apart; the old search tried all 10! permutations (125 s).
    path = make_db("CREATE TABLE t (a INTEGER);")
    with Database(path) as db:
        start = time.perf_counter()
        scored = score_sql(db, _latin_values(10, swap=(0, 1)), _latin_values(10), semantics=Semantics.SPIDER, timeout_s=5)
        elapsed = time.perf_counter() - start
    assert not scored.verdict.spider
    assert elapsed < 1.0, elapsed


def test_a_permuted_latin_square_still_matches_fast():
    rng = random.Random(7)
    gold = _latin_rows(12)
    perm = list(range(12))
    rng.shuffle(perm)
    pred = [tuple(row[i] for i in perm) for row in gold]
    rng.shuffle(pred)
    start = time.perf_counter()
    assert spider_match(pred, gold, ordered=False)
    assert not spider_match(pred, gold, ordered=True) or pred == gold
    assert time.perf_counter() - start < 1.0


def test_identical_columns_are_tried_once():
    # Eleven copies of one column against ten copies plus another: no permutation fits,
    # and trying each copy in turn would take 10! steps.
    gold = [tuple([i] * 11) for i in range(30)]
    pred = [tuple([i] * 10 + [i + 1]) for i in range(30)]
    start = time.perf_counter()
    assert not spider_match(pred, gold, ordered=False)
    assert not spider_match(pred, gold, ordered=True)
    assert time.perf_counter() - start < 1.0


def test_the_column_search_stops_at_its_deadline():
    gold = _latin_rows(10)
    pred = [tuple(1 if v == 0 else 0 if v == 1 else v for v in row) for row in gold]
    with pytest.raises(ComparisonTimeout):
        spider_match(pred, gold, ordered=False, deadline=time.monotonic() - 1)


def test_column_search_agrees_with_brute_force_on_small_tables():
    import itertools
    from collections import Counter

    rng = random.Random(3)
    for _ in range(400):
        width = rng.randint(1, 4)
        height = rng.randint(1, 5)
        gold = [tuple(rng.randint(0, 2) for _ in range(width)) for _ in range(height)]
        if rng.random() < 0.5:
            perm = list(range(width))
            rng.shuffle(perm)
            pred = [tuple(r[i] for i in perm) for r in gold]
            rng.shuffle(pred)
            if rng.random() < 0.5:
                k = rng.randrange(height)
                pred[k] = tuple(rng.randint(0, 2) for _ in range(width))
        else:
            pred = [tuple(rng.randint(0, 2) for _ in range(width)) for _ in range(height)]
        for ordered in (False, True):
            want = any(
                ([tuple(r[i] for i in p) for r in pred] == gold)
                if ordered
                else Counter(tuple(r[i] for i in p) for r in pred) == Counter(gold)
                for p in itertools.permutations(range(width))
            )
            assert spider_match(pred, gold, ordered=ordered) == want, (pred, gold, ordered)


# -- answers that hold no statement (issue 12 item 3, issue 13 item 10) ---------------

NO_STATEMENT = ["", "   ", "\n\t", ";", " ; ;", "-- no answer", "/* nothing */", "-- a\n/* b */ ;", "/* unterminated"]
EMPTY_GOLD = "SELECT name FROM singer WHERE 1 = 0"


@pytest.fixture(scope="module")
def singer_db(tmp_path_factory):
    import sqlite3

    path = tmp_path_factory.mktemp("singer") / "singer.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(
            "CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, age INTEGER);"
            "INSERT INTO singer VALUES (1, 'Ada', 30), (2, 'Bo', 41), (3, 'Cy', NULL), (4, 'Di', 30);"
        )
    conn.close()
    with Database(path) as db:
        yield db


@pytest.mark.parametrize("text", NO_STATEMENT)
def test_an_answer_without_a_statement_is_invalid_under_every_semantics(singer_db, text):
    from sqlscout.scoring import REWARD_PRESETS, Outcome, reward

    for semantics in Semantics:
        scored = score_sql(singer_db, text, EMPTY_GOLD, semantics=semantics)
        assert scored.verdict.outcome is Outcome.INVALID, (text, semantics)
        assert not any(scored.verdict.correct(s) for s in Semantics)
        for config in REWARD_PRESETS.values():
            assert reward(scored, config, pred_sql=text, gold_sql=EMPTY_GOLD) == config.invalid


def test_has_statement():
    from sqlscout.scoring import has_statement

    assert not any(has_statement(t) for t in NO_STATEMENT)
    assert has_statement("SELECT 1 -- x") and has_statement("'-- not a comment'") and has_statement("/* a */ SELECT 1")


_filler = __import__("hypothesis").strategies.lists(
    __import__("hypothesis").strategies.sampled_from(
        [" ", "\n", "\t", ";", "-- no answer\n", "-- x", "/* nothing */", "/**/", "/* a\nb */", "--;\n"]
    ),
    max_size=8,
)


@pytest.mark.parametrize("gold", [EMPTY_GOLD, "SELECT name FROM singer ORDER BY name", "SELECT count(*) FROM singer"])
def test_no_statement_free_text_outranks_an_executable_query(singer_db, gold):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from sqlscout.scoring import REWARD_PRESETS, group_rewards

    executable = ["SELECT age FROM singer", "SELECT name FROM singer WHERE age > 100", "SELECT 1"]

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(parts=_filler, semantics=st.sampled_from(list(Semantics)), preset=st.sampled_from(sorted(REWARD_PRESETS)))
    def check(parts, semantics, preset):
        text = "".join(parts)
        config = REWARD_PRESETS[preset]
        from dataclasses import replace

        config = replace(config, semantics=semantics)
        group = [(score_sql(singer_db, sql, gold, semantics=semantics), sql) for sql in [text, text, *executable]]
        rewards = group_rewards(group, gold, config)
        assert group[0][0].verdict.outcome.value == "invalid"
        assert rewards[0] == config.invalid
        assert all(rewards[0] <= r for r in rewards[2:]), (text, rewards)

    check()


def test_has_statement_is_linear_on_long_comment_runs():
    from sqlscout.scoring import has_statement

    start = time.perf_counter()
    assert has_statement("-" * 200_000 + "\nSELECT 1")
    assert not has_statement("/*" + "*" * 200_000)
    assert time.perf_counter() - start < 0.5


# -- read-only table-valued pragmas (issue 13 item 11) ---------------------------------


def test_table_valued_pragmas_run_and_writes_stay_refused(tmp_path):
    import shutil

    from sqlscout.errors import QueryError
    from conftest import spider_db

    path = tmp_path / "concert_singer.sqlite"
    shutil.copyfile(spider_db("concert_singer"), path)
    before = path.read_bytes()
    with Database(path) as db:
        rows = db.execute("SELECT name FROM pragma_table_info('singer')").rows
        assert ("Name",) in rows
        assert db.execute("SELECT count(*) FROM pragma_index_list('singer')").rows == [(1,)]
        for sql in ("UPDATE sqlite_master SET sql = NULL", "PRAGMA writable_schema = 1", "DELETE FROM singer",
                    "SELECT * FROM pragma_writable_schema"):
            with pytest.raises(QueryError):
                db.execute(sql)
    assert path.read_bytes() == before


# -- the test-suite mode (issue 13 item 11) ------------------------------------------

TEST_SUITE_CASES = [
    # (pred, gold, test-suite, spider, why)
    ("SELECT age FROM singer", "SELECT DISTINCT age FROM singer", True, False, "DISTINCT removed from the gold"),
    ("SELECT count(age) FROM singer", "SELECT count(DISTINCT age) FROM singer", True, False, "count(DISTINCT x) becomes count(x)"),
    ("SELECT name FROM singer WHERE age > = 41", "SELECT name FROM singer WHERE age >= 41", True, False, "'> =' rewritten"),
    ("SELECT name FROM singer WHERE age ! = 41", "SELECT name FROM singer WHERE age <> 41", True, False, "'! =' rewritten"),
    ("SELECT count(*) FROM singer WHERE age > value AND 1 = 1", "SELECT count(*) FROM singer WHERE age > 1", True, False, "' value ' is 1"),
    # The script's str.replace("value", "1") reaches aliases, names and strings too (issue 40).
    ("SELECT count(*) AS value FROM singer", "SELECT count(*) FROM singer", False, True, "an alias 'value' becomes 'AS 1': a syntax error"),
    ("SELECT name AS value_name FROM singer", "SELECT name FROM singer", False, True, "'value_name' becomes '1_name': a syntax error"),
    ("SELECT count(*) FROM singer WHERE name <> 'values'", "SELECT count(*) FROM singer", True, True, "a string 'values' becomes '1s': the same rows here"),
    ("SELECT count(*) FROM singer; SELECT 1", "SELECT count(*) FROM singer", True, False, "first statement only"),
    ("SELECT 1.5, 1.0", "SELECT 1, 1.5", False, True, "rows sorted by their text first"),
    ("SELECT name, age FROM singer", "SELECT age, name FROM singer", True, True, "column permutation"),
    ("SELECT name FROM singer ORDER BY name DESC", "SELECT name FROM singer ORDER BY name", False, False, "order by: lists"),
    ("SELECT 'distinct'", "SELECT 'distinct'", True, True, "a string is kept"),
    ("SELECT age FROM singer", "SELECT DISTINCT age FROM singer", True, False, "bags after rewriting"),
]


@pytest.mark.parametrize("pred, gold, want, spider, why", TEST_SUITE_CASES, ids=[c[4] for c in TEST_SUITE_CASES])
def test_test_suite_mode_rewrites_and_compares_as_the_official_script(singer_db, pred, gold, want, spider, why):
    scored = score_sql(singer_db, pred, gold, semantics=Semantics.TEST_SUITE)
    assert scored.verdict.test_suite is want, why
    assert scored.verdict.correct("test-suite") is want
    assert score_sql(singer_db, pred, gold, semantics=Semantics.SPIDER).verdict.spider is spider, why
    assert score_sql(singer_db, pred, gold).verdict.test_suite is None  # not asked for


def test_test_suite_rewriting():
    from sqlscout.scoring.testsuite import test_suite_sql

    cases = {
        "SELECT DISTINCT a FROM t": "SELECT  a FROM t",
        "select distinct(a) from t": "select (a) from t",
        "SELECT t.distinct FROM t": "SELECT t. FROM t",
        "SELECT distinct_count FROM t": "SELECT distinct_count FROM t",
        "SELECT \"distinct\", [distinct], `distinct`, 'it''s distinct' FROM t": "SELECT \"distinct\", [distinct], `distinct`, 'it''s distinct' FROM t",
        "SELECT a FROM t -- distinct\n": "SELECT a FROM t -- distinct",
        "SELECT a FROM t; DROP TABLE t": "SELECT a FROM t;",
        "SELECT a FROM t WHERE y = YEAR(CURDATE())": "SELECT a FROM t WHERE y = 2020",
        "SELECT value FROM t": "SELECT 1 FROM t",
        "SELECT t.value FROM t": "SELECT t.1 FROM t",
        "SELECT a AS value FROM t WHERE b = 'values'": "SELECT a AS 1 FROM t WHERE b = '1s'",
        "SELECT Value FROM t": "SELECT Value FROM t",  # a plain str.replace: case matters
    }
    for sql, want in cases.items():
        assert test_suite_sql(sql, prediction=True) == want, sql
        assert test_suite_sql(want, prediction=True) == want  # idempotent
    assert test_suite_sql("SELECT a FROM t WHERE b = value AND c = 1", prediction=False).count("value") == 1


def test_bird_pair_timeout_rule(singer_db):
    from sqlscout.scoring import ExecResult

    sql = "SELECT count(*) FROM singer"
    # Each query within the timeout alone, the two together past it (running times given).
    pred, gold = ExecResult(("n",), [(4,)], elapsed_s=0.6), ExecResult(("n",), [(4,)], elapsed_s=0.6)
    per_query = score_sql(singer_db, sql, sql, pred=pred, gold=gold, timeout_s=1.0)
    pair = score_sql(singer_db, sql, sql, pred=pred, gold=gold, timeout_s=1.0, timeout_rule="pair")
    assert per_query.verdict.official and not pair.verdict.official
    assert pair.pred.timed_out and "BIRD" in (pair.verdict.pred_error or "")
    # Run for real: a quick pair is unaffected by the rule.
    assert score_sql(singer_db, sql, sql, timeout_s=30, timeout_rule="pair").verdict.official
    with pytest.raises(ValueError):
        score_sql(singer_db, "SELECT 1", "SELECT 1", timeout_rule="nope")


def test_score_command_under_test_suite_and_the_bird_timeout_rule(tmp_path):
    import json

    from conftest import SPIDER
    from typer.testing import CliRunner

    from sqlscout.cli.main import app
    from sqlscout.data import load_tasks

    tasks = [t for t in load_tasks("spider", SPIDER, missing_db="skip") if "DISTINCT" in (t.gold_sql or "").upper()][:12]
    file = tmp_path / "p.jsonl"
    # The gold queries without DISTINCT: right under test-suite, often wrong under spider.
    undistinct = [(t.gold_sql or "").replace("DISTINCT", "").replace("distinct", "") for t in tasks]
    file.write_text("".join(json.dumps({"question_id": t.question_id, "sql": s}) + "\n" for t, s in zip(tasks, undistinct)))
    args = ["score", str(file), "--benchmark", "spider", "--data", str(SPIDER), "--missing-db", "skip",
            "--only-predicted", "--json", "--cache-dir", str(tmp_path / "cache"), "--verdicts", str(tmp_path / "v.jsonl")]
    suite = json.loads(CliRunner().invoke(app, [*args, "--semantics", "test-suite"]).stdout)
    written = [json.loads(line) for line in (tmp_path / "v.jsonl").read_text().splitlines()]
    assert [w["sql"] for w in written] == undistinct  # as given, not as rewritten
    assert all(w["verdict"]["test_suite"] is True for w in written)
    spider = json.loads(CliRunner().invoke(app, [*args, "--semantics", "spider"]).stdout)
    assert suite["total"]["correct"] == len(tasks) > spider["total"]["correct"]
    pair = CliRunner().invoke(app, [*args, "--timeout-rule", "pair"])
    assert pair.exit_code == 0 and json.loads(pair.stdout)["gold_cache_hits"] == 0
    bad = CliRunner().invoke(app, [*args, "--timeout-rule", "both"])
    assert bad.exit_code == 2 and "--timeout-rule takes query or pair" in bad.output
