"""sqlglot's answers from a helper process, and the prediction results ``sqlscout score``
caches by default (issue 13 item 12: a cold run need not wait for sqlglot's import, a
warm run need not run the same predictions again) -- neither changes a verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import REPO, SPIDER

from sqlscout.data import load_tasks
from sqlscout.env.task import Task
from sqlscout.evaluation.batch_score import (
    SMALL_RESULT_CELLS,
    Prediction,
    ScoreConfig,
    score_predictions,
)
from sqlscout.evaluation.perturb import perturb
from sqlscout.scoring.parse_helper import ParseHelper, _kill, _waited
from sqlscout.scoring.parsing import order_by_parsed, statement_parses
from sqlscout.scoring.verdict import execute_for_scoring, parsed_by_engine, parses

ODD = [
    "SELECT 1", "SELEC name FROM singer", "Ada", "5", "x = 1", "SELECT 1; SELECT 2", "SELECT a FROM t -- c\n",
    "SELECT a\nFROM t\nORDER BY a", "SELECT a FROM (SELECT a FROM t ORDER BY a) LIMIT 3", "SELECT 'é' || \"名\" FROM t",
    "SELECT '\ud800' FROM t", "SELECT (((a FROM t", "SELECT a FROM t ORDER BY (SELECT 1)", "WITH x AS (SELECT 1) SELECT * FROM x",
    "SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", "DELETE FROM t", "SELECT * FROM t WHERE a IN (1, 2) ORDER BY a DESC",
]


@pytest.fixture(scope="module")
def spider_dev(data_dir):
    return load_tasks("spider", SPIDER, missing_db="skip")


_ASK_ALL = """
import json, sys
from sqlscout.scoring.parse_helper import ParseHelper
sqls = json.load(sys.stdin)
helper = ParseHelper()
tickets = [(helper.ask("p", sql), helper.ask("o", sql)) for sql in sqls]
forked, failed = isinstance(helper._child, int), helper._failed
answers = [[helper.answer(p), helper.answer(o)] for p, o in tickets]
helper.close()
print(json.dumps({"forked": forked, "failed": failed or helper._failed, "answers": answers,
                  "sqlglot": "sqlglot" in sys.modules}))
"""


def test_the_helper_answers_as_this_process_does(spider_dev):
    sqls = ODD + [perturb(t.gold_sql or "", i) for i, t in enumerate(spider_dev[:400])]
    expected = [[statement_parses(sql), order_by_parsed(sql)] for sql in sqls]
    assert {p for p, _ in expected} == {True, False} and {o for _, o in expected} == {True, False}
    # Forked: from a fresh process, where no other thread runs.
    out = subprocess.run([sys.executable, "-c", _ASK_ALL], input=json.dumps(sqls), capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO / "src")}, check=True)
    forked = json.loads(out.stdout)
    assert forked["forked"] and not forked["failed"] and not forked["sqlglot"]  # every answer from the helper
    assert forked["answers"] == expected
    # A new interpreter: another thread runs here, so forking is not safe.
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    helper = ParseHelper()
    try:
        tickets = [(helper.ask("p", sql), helper.ask("o", sql)) for sql in sqls]
        assert not isinstance(helper._child, int)
        answers = [[helper.answer(p), helper.answer(o)] for p, o in tickets]
        assert helper._child is not None and not helper._failed  # answered by the process, not here
    finally:
        release.set()
        helper.close()
    assert answers == expected


def test_a_helper_that_dies_or_cannot_start_is_answered_here(monkeypatch, tmp_path):
    helper = ParseHelper()
    first = helper.ask("p", "SELECT 1")
    assert helper.answer(first) is True
    _kill(helper._child)
    _waited(helper._child, None)
    later = [helper.ask("p", "SELEC x FROM t"), helper.ask("o", "SELECT a FROM (SELECT a FROM t) ORDER BY a")]
    assert [helper.answer(t) for t in later] == [False, True] and helper._failed
    helper.close()
    # A new interpreter (another thread runs) that cannot start.
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python-here"))
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        helper = ParseHelper()
        assert [helper.answer(helper.ask("p", sql)) for sql in ("SELECT 1", "SELEC 1")] == [True, False]
        assert helper._failed and helper._child is None
        helper.close()
    finally:
        release.set()


def test_a_cold_score_leaves_sqlglot_to_the_helper_with_the_same_verdicts(spider_dev, tmp_path):
    # Every variant of each question: many predictions do not run (the parsable tier),
    # and some results differ from a nested gold query's only in order (its ORDER BY).
    chosen = [(t.question_id, i) for i, t in enumerate(spider_dev[:600])]
    script = (
        "import json, sys\n"
        "from sqlscout.data import load_tasks\n"
        "from sqlscout.evaluation.batch_score import Prediction, ScoreConfig, score_predictions\n"
        "from sqlscout.evaluation.perturb import perturb\n"
        f"tasks = load_tasks('spider', {str(SPIDER)!r}, missing_db='skip')[:600]\n"
        "preds = [Prediction(t, perturb(t.gold_sql, i)) for i, t in enumerate(tasks)]\n"
        "run = score_predictions(preds, ScoreConfig(workers=1, cache_dir=sys.argv[1], semantics='strict'))\n"
        "print(json.dumps({'sqlglot': 'sqlglot' in sys.modules, 'verdicts': [v.to_dict() for v in run.verdicts]}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "cache")], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO / "src")}, check=True)
    result = json.loads(out.stdout)
    assert result["sqlglot"] is False
    here = score_predictions([Prediction(spider_dev[i], perturb(spider_dev[i].gold_sql or "", i)) for _, i in chosen],
                             ScoreConfig(workers=1, semantics="strict"))
    assert result["verdicts"] == [v.to_dict() for v in here.verdicts]
    outcomes = {v["outcome"] for v in result["verdicts"]}
    assert {"parsable", "invalid", "equivalent", "executable"} <= outcomes


def test_small_prediction_results_are_cached_when_asked_and_only_they(chinook_path, tmp_path):
    task = Task("0", "How many tracks?", chinook_path, gold_sql="SELECT count(*) FROM Track")
    sqls = ["SELECT count(*) FROM Album", "SELECT * FROM Track", "SELECT nope FROM Track", "SELECT count(*) FROM Track"]
    predictions = [Prediction(task, sql) for sql in sqls]
    plain = score_predictions(predictions, ScoreConfig(workers=1))
    config = ScoreConfig(workers=1, cache_dir=tmp_path, cache_prediction_cells=SMALL_RESULT_CELLS)
    first, second = score_predictions(predictions, config), score_predictions(predictions, config)
    # The album count and the error come back from the cache; the whole Track table
    # (3,503 rows of 9 columns) runs again; the gold query itself takes the gold result.
    assert (first.pred_cache_hits, second.pred_cache_hits) == (0, 2)
    assert plain.verdicts == first.verdicts == second.verdicts
    # Not asked (the library's default): every prediction runs again.
    assert score_predictions(predictions, ScoreConfig(workers=1, cache_dir=tmp_path)).pred_cache_hits == 0
    # BIRD's rule needs each prediction's running time: nothing small is cached for it.
    pair = ScoreConfig(workers=1, cache_dir=tmp_path / "pair", cache_prediction_cells=SMALL_RESULT_CELLS, timeout_rule="pair")
    assert [score_predictions(predictions, pair).pred_cache_hits for _ in range(2)] == [0, 0]


def _score_json(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-m", "sqlscout.cli.main", "score", *args, "--json"], capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")}, check=True)
    return json.loads(out.stdout)


def test_sqlscout_score_reuses_small_prediction_results_by_default(tmp_path: Path):
    gold = [line.split("\t")[0] for line in (SPIDER / "dev_gold.sql").read_text().splitlines()[:40]]
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps({"question_id": str(i), "sql": perturb(s, i + 1)}) + "\n"
                                   for i, s in enumerate(gold)))
    base = [str(predictions), "--benchmark", "spider", "--data", str(SPIDER), "--only-predicted", "--missing-db", "skip"]
    cold = _score_json([*base, "--cache-dir", str(tmp_path / "cache")])
    warm = _score_json([*base, "--cache-dir", str(tmp_path / "cache")])
    uncached = _score_json([*base, "--no-cache"])
    assert cold["prediction_cache_hits"] == 0 < warm["prediction_cache_hits"] and uncached["prediction_cache_hits"] == 0
    for key in ("total", "by_difficulty", "outcomes"):
        assert cold[key] == warm[key] == uncached[key]


def test_every_answer_of_a_cold_run_is_in_the_cache_after_it(spider_dev, tmp_path):
    # Questions on many databases (more than the cache holds in memory at once), so
    # answers also arrive for databases whose files were written already.
    from sqlscout.scoring.parsing import parser_version
    from sqlscout.scoring.result_cache import ResultCache

    tasks = spider_dev[:500]
    predictions = [Prediction(t, perturb(t.gold_sql or "", i)) for i, t in enumerate(tasks)]
    config = ScoreConfig(workers=1, cache_dir=tmp_path, cache_prediction_cells=SMALL_RESULT_CELLS)
    run = score_predictions(predictions, config)
    assert len({t.db_id for t in tasks}) > 8
    cache, version = ResultCache(tmp_path), parser_version()
    failed = [(p, v) for p, v in zip(predictions, run.verdicts) if v.outcome.value in ("parsable", "invalid")]
    assert len(failed) > 20
    asked = 0
    for prediction, verdict in failed:
        bundle = cache.results(cache.database_hash(prediction.task.db_path))
        result = bundle.get(prediction.sql or "")
        assert result is not None  # its result (an error) is cached
        if parsed_by_engine(result) is None and not result.refused:  # SQLite's parser said no: sqlglot was asked
            asked += 1
            assert bundle.parsed(prediction.sql or "", version) == (verdict.outcome.value == "parsable")
    assert asked > 10
    again = score_predictions(predictions, config)
    assert again.verdicts == run.verdicts and again.gold_runs == 0 and again.pred_cache_hits > 0


def test_sqlite_decides_the_parsable_tier_as_sqlglot_would_where_its_parser_accepted(spider_dev):
    """A prediction SQLite parsed but could not run (a missing name, a misuse) is
    parsable without asking sqlglot; one its parser refused goes to sqlglot. On perturbed
    Spider dev predictions the engine's answers equal sqlglot's wherever it gives one."""
    from sqlscout.env.sandbox import Database

    databases: dict = {}
    decided = agreed = undecided = 0
    try:
        for i, task in enumerate(spider_dev[:600]):
            sql = perturb(task.gold_sql or "", i)
            db = databases.get(task.db_path) or databases.setdefault(task.db_path, Database(task.db_path))
            result = execute_for_scoring(db, sql)
            if result.ok or result.refused:
                continue
            engine = parsed_by_engine(result)
            if engine is None:
                undecided += 1
                continue
            decided += 1
            agreed += engine == parses(sql)
    finally:
        for db in databases.values():
            db.close()
    assert decided > 30 and undecided > 30 and agreed == decided
