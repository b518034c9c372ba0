"""sqlscout score: gold predictions, perturbed predictions against a reference
implementation of each semantics, the gold cache, the three input formats, the CLI."""

from __future__ import annotations

import itertools
import os
import json
import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from conftest import BIRD, SPIDER
from typer.testing import CliRunner

from sqlscout.cli.main import app
from sqlscout.data import load_tasks
from sqlscout.errors import DataError
from sqlscout.evaluation.perturb import VARIANTS, perturb
from sqlscout.evaluation.predictions import read_predictions
from sqlscout.evaluation.batch_score import Prediction, ScoreConfig, score_predictions
from sqlscout.scoring import Semantics
from sqlscout.scoring.compare import _parsed_order_by, has_top_level_order_by
from sqlscout.env.task import Task


@pytest.fixture(scope="module")
def spider_dev(data_dir):
    return load_tasks("spider", SPIDER, missing_db="skip")


# -- a direct, independent implementation of the three semantics ---------------------


def _reference_rows(db: Path, sql: str) -> list[tuple] | None:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        return conn.execute(sql).fetchall()
    except (sqlite3.Error, sqlite3.Warning):
        return None
    finally:
        conn.close()


def _ordered_by_text(sql: str) -> bool:
    """Top-level ORDER BY: drop quoted text, then everything inside parentheses."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "''", sql)
    while re.search(r"\([^()]*\)", text):
        text = re.sub(r"\([^()]*\)", "", text)
    return re.search(r"\border\s+by\b", text, re.I) is not None


def reference_verdicts(db: Path, pred: str, gold: str) -> tuple[bool, bool, bool]:
    p, g = _reference_rows(db, pred), _reference_rows(db, gold)
    if p is None or g is None:
        return (False, False, False)
    official = set(p) == set(g)
    strict = p == g if _ordered_by_text(gold) else Counter(p) == Counter(g)
    if not p and not g:
        spider = True
    elif len(p) != len(g) or len(p[0]) != len(g[0]):
        spider = False
    else:
        ordered = "order by" in gold.lower()
        spider = False
        for perm in itertools.permutations(range(len(p[0]))):
            moved = [tuple(row[i] for i in perm) for row in p]
            if (moved == g) if ordered else (Counter(moved) == Counter(g)):
                spider = True
                break
    return (official, strict, spider)


# -- gold and perturbed predictions on Spider dev ------------------------------------


def test_gold_as_predictions_scores_100_percent_under_every_semantics(spider_dev):
    run = score_predictions([Prediction(t, t.gold_sql) for t in spider_dev])  # the default: decided as it goes
    assert len(run.verdicts) == 972
    for semantics in (Semantics.OFFICIAL, Semantics.STRICT, Semantics.SPIDER):  # computed for every prediction
        assert all(v.correct(semantics) for v in run.verdicts), semantics
    suite = score_predictions([Prediction(t, t.gold_sql) for t in spider_dev], ScoreConfig(semantics=Semantics.TEST_SUITE))
    assert all(v.test_suite for v in suite.verdicts)  # decided when asked for
    # The scorer runs both queries as the official script rewrites them.
    undistinct = [Prediction(t, (t.gold_sql or "").replace("DISTINCT", "")) for t in spider_dev if "DISTINCT" in (t.gold_sql or "")]
    as_written = score_predictions(undistinct, ScoreConfig(semantics=Semantics.SPIDER, workers=1)).verdicts
    rewritten = score_predictions(undistinct, ScoreConfig(semantics=Semantics.TEST_SUITE, workers=1)).verdicts
    assert all(v.test_suite for v in rewritten) and sum(not v.spider for v in as_written) > 10
    summary = run.summary(("easy", "medium", "hard", "extra"))
    assert summary.total.accuracy == 1.0 and set(summary.by_difficulty) == {"easy", "medium", "hard", "extra"}


def test_perturbed_predictions_agree_with_a_direct_implementation(spider_dev):
    predictions = [Prediction(t, perturb(t.gold_sql, i + shift)) for shift in (0, 4) for i, t in enumerate(spider_dev)]
    run = score_predictions(predictions, ScoreConfig(workers=2))
    mismatches = []
    seen = Counter()
    for prediction, verdict in zip(predictions, run.verdicts):
        expected = reference_verdicts(prediction.task.db_path, prediction.sql, prediction.task.gold_sql)
        got = (verdict.official, verdict.strict, verdict.spider)
        seen[got] += 1
        if got != expected:
            mismatches.append((prediction.task.question_id, prediction.sql, got, expected))
    assert not mismatches, mismatches[:5]
    # The perturbations do separate the semantics from one another.
    assert {(True, True, True), (False, False, False), (True, False, False), (False, False, True)} <= set(seen)


def test_top_level_order_by_shortcut_agrees_with_the_parser(data_dir):
    queries = [line.split("\t")[0] for f in ("dev_gold.sql", "train_gold.sql") for line in (SPIDER / f).read_text().splitlines()]
    queries += [r["SQL"] for r in json.loads((BIRD / "dev.json").read_text())]
    queries = [q for q in queries if "order" in q.lower()]
    queries += [perturb(q, i) for i, q in enumerate(queries)]
    queries += ["SELECT a FROM t UNION SELECT a FROM u ORDER BY a", "SELECT 'order by' FROM t", "SELECT a FROM t -- order by a"]
    assert [has_top_level_order_by(q) for q in queries] == [_parsed_order_by(q) for q in queries]


# -- the gold cache ------------------------------------------------------------------


def test_gold_results_are_cached_and_predictions_still_run(spider_dev, tmp_path):
    tasks = spider_dev[:300]
    predictions = [Prediction(t, perturb(t.gold_sql, i)) for i, t in enumerate(tasks)]
    config = ScoreConfig(workers=2, cache_dir=tmp_path)
    cold = score_predictions(predictions, config)
    warm = score_predictions(predictions, config)
    assert cold.gold_runs > warm.gold_runs == 0
    assert cold.gold_runs + cold.gold_cache_hits + cold.gold_repeats == len(tasks)
    assert warm.gold_cache_hits + warm.gold_repeats == len(tasks) and warm.gold_cache_hits > 0
    assert warm.verdicts == cold.verdicts
    # Predictions are executed again unless asked otherwise: a changed database shows.
    everything = ScoreConfig(workers=1, cache_dir=tmp_path, cache_predictions=True)
    assert score_predictions(predictions, everything).verdicts == cold.verdicts
    assert score_predictions(predictions, everything).verdicts == cold.verdicts


def test_a_cached_gold_result_is_keyed_by_database_content(tmp_path, make_db):
    db = make_db("CREATE TABLE t (x INT); INSERT INTO t VALUES (1);", name="one")
    task = Task("0", "x?", db, gold_sql="SELECT x FROM t")
    config = ScoreConfig(workers=1, cache_dir=tmp_path / "cache")
    assert score_predictions([Prediction(task, "SELECT 1")], config).verdicts[0].official
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE t SET x = 2")
    conn.close()
    again = score_predictions([Prediction(task, "SELECT 1")], config)
    assert again.gold_runs == 1 and not again.verdicts[0].official


def test_runaway_predictions_stop_at_the_deadline(chinook_path):
    task = Task("0", "n?", chinook_path, gold_sql="SELECT count(*) FROM Track")
    runaway = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT max(n) FROM r"
    run = score_predictions([Prediction(task, runaway)], ScoreConfig(workers=1, timeout_s=0.3))
    assert run.verdicts[0].outcome.value == "parsable" and "timed out" in (run.verdicts[0].pred_error or "")


# -- input formats -------------------------------------------------------------------


def _bird_file(path: Path, entries: dict) -> Path:
    path.write_text(json.dumps(entries))
    return path


def test_bird_format_on_a_bird_layout(bird_layout, tmp_path):
    tasks = load_tasks("bird", bird_layout)
    entries = {str(i): f"{t.gold_sql}\t----- bird -----\t{t.db_id}" for i, t in enumerate(tasks) if i % 5}
    read = read_predictions(_bird_file(tmp_path / "p.json", entries), tasks)
    assert read.source == "bird" and read.unanswered == sum(1 for i in range(len(tasks)) if i % 5 == 0)
    run = score_predictions(read.predictions, ScoreConfig(workers=1))
    summary = run.summary(("simple", "moderate", "challenging"))
    assert summary.total.correct == len(entries)
    assert list(summary.by_difficulty) == ["simple", "moderate", "challenging"]


@pytest.mark.parametrize(
    "entries, message",
    [
        ({"9999": "SELECT 1\t----- bird -----\tconcert_singer"}, r"key '9999': no question at index 9999"),
        ({"x": "SELECT 1\t----- bird -----\tconcert_singer"}, r"key 'x': not a question index"),
        ({"0": "SELECT 1"}, r"key '0': missing the separator"),
        ({"0": ["SELECT 1"]}, r"key '0': expected a string"),
        ({"0": "SELECT 1\t----- bird -----\tpets_1"}, r"key '0': predicted on database 'pets_1' but question 0 is on 'concert_singer'"),
    ],
)
def test_broken_bird_predictions_are_named(bird_layout, tmp_path, entries, message):
    tasks = load_tasks("bird", bird_layout)
    with pytest.raises(DataError, match=message):
        read_predictions(_bird_file(tmp_path / "p.json", entries), tasks)


def test_jsonl_predictions_and_their_errors(spider_dev, tmp_path):
    file = tmp_path / "p.jsonl"
    file.write_text(json.dumps({"question_id": 0, "sql": spider_dev[0].gold_sql}) + "\n" + json.dumps({"question_id": "1", "sql": None}) + "\n")
    read = read_predictions(file, spider_dev, only_predicted=True)
    assert [(p.task.question_id, p.sql is None) for p in read.predictions] == [("0", False), ("1", True)]
    for line, message in [
        ("{oops", "line 3: not valid JSON"),
        (json.dumps({"question_id": "99999", "sql": "SELECT 1"}), "line 3: unknown question_id 99999"),
        (json.dumps({"question_id": 0, "sql": "SELECT 1"}), "line 3: question_id 0 was already predicted on line 1"),
        (json.dumps({"question_id": 2}), "line 3: missing field 'sql'"),
    ]:
        broken = tmp_path / "broken.jsonl"
        broken.write_text(file.read_text() + line + "\n")
        with pytest.raises(DataError, match=re.escape(message)):
            read_predictions(broken, spider_dev)
    with pytest.raises(DataError, match="no such file or run directory"):
        read_predictions(tmp_path / "nope.jsonl", spider_dev)


def test_a_run_directory_of_sqlscout_eval(spider_dev, tmp_path):
    from sqlscout.evaluation import EvalConfig, RunDir, run_eval, scripted_source

    tasks = spider_dev[:6]
    answers = {t.question_id: t.gold_sql if i % 2 else "SELECT 1" for i, t in enumerate(tasks)}

    def policy(job, turn):
        return json.dumps({"tool": "submit_sql", "args": {"sql": answers[job.task.question_id]}})

    out = tmp_path / "run"
    run_eval(tasks, EvalConfig("spider", "scripted"), scripted_source(policy), out)
    with open(out / "episodes.jsonl", "a") as handle:
        handle.write('{"key": "torn')  # a run killed mid-write
    read = read_predictions(out)
    assert read.source == "run" and [p.task.question_id for p in read.predictions] == [t.question_id for t in tasks]
    run = score_predictions(read.predictions, ScoreConfig(workers=1))
    stored = [r.verdict for r in RunDir(out).read_records()]
    assert [v.official for v in run.verdicts] == [v.official for v in stored] == [bool(i % 2) for i in range(6)]
    (out / "episodes.jsonl").write_text("{}\n")
    with pytest.raises(DataError, match="line 1: not an episode record"):
        read_predictions(out)


# -- the command ---------------------------------------------------------------------


def test_score_command_prints_the_table_and_json(bird_layout, tmp_path):
    tasks = load_tasks("bird", bird_layout)
    file = _bird_file(
        tmp_path / "p.json",
        {str(i): f"{perturb(t.gold_sql or '', i)}\t----- bird -----\t{t.db_id}" for i, t in enumerate(tasks)},
    )
    args = ["score", str(file), "--benchmark", "bird", "--data", str(bird_layout), "--cache-dir", str(tmp_path / "c")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert re.search(r"simple.*moderate.*challenging.*total", result.output)
    assert f"{len(tasks)}" in result.output and "official semantics" in result.output
    as_json = CliRunner().invoke(app, [*args, "--json", "--semantics", "strict", "--verdicts", str(tmp_path / "v.jsonl")])
    data = json.loads(as_json.stdout)
    assert data["semantics"] == "strict" and data["total"]["count"] == len(tasks) and data["gold_runs"] == 0
    lines = (tmp_path / "v.jsonl").read_text().splitlines()
    assert len(lines) == len(tasks) and sum(json.loads(x)["correct"] for x in lines) == data["total"]["correct"]
    expected = sum(reference_verdicts(t.db_path, perturb(t.gold_sql or "", i), t.gold_sql or "")[1] for i, t in enumerate(tasks))
    assert data["total"]["correct"] == expected


def test_score_command_errors_are_one_line(tmp_path, bird_layout):
    runner = CliRunner()
    result = runner.invoke(app, ["score", str(tmp_path / "p.json"), "--benchmark", "bird"])
    assert result.exit_code == 2 and "needs --benchmark and --data" in result.output
    (tmp_path / "p.json").write_text("{not json")
    result = runner.invoke(app, ["score", str(tmp_path / "p.json"), "--benchmark", "bird", "--data", str(bird_layout)])
    assert result.exit_code == 2 and "not valid JSON" in result.output
    result = runner.invoke(app, ["score", str(tmp_path / "p.json"), "--benchmark", "nope", "--data", str(bird_layout)])
    assert result.exit_code == 2 and "unknown benchmark" in result.output


def test_variants_are_all_used():
    assert len({name for name, _ in VARIANTS}) == len(VARIANTS) >= 8


def test_score_command_on_sqale_and_on_a_run_directory(sqale_layout, spider_dev, tmp_path):
    from sqlscout.evaluation import EvalConfig, run_eval, scripted_source

    cache = tmp_path / "cache"
    tasks = load_tasks("sqale", sqale_layout, cache_dir=cache)
    file = tmp_path / "p.jsonl"
    file.write_text("".join(json.dumps({"question_id": t.question_id, "sql": t.gold_sql}) + "\n" for t in tasks))
    args = ["score", str(file), "--benchmark", "sqale", "--data", str(sqale_layout), "--cache-dir", str(cache), "--json"]
    data = json.loads(CliRunner().invoke(app, args).stdout)
    assert data["total"] == {"count": len(tasks), "correct": len(tasks), "accuracy": 1.0}
    assert list(data["by_difficulty"]) == [level for level in ("simple", "moderate", "hard") if level in data["by_difficulty"]]

    def policy(job, turn):
        return json.dumps({"tool": "submit_sql", "args": {"sql": job.task.gold_sql}})

    run_eval(spider_dev[:4], EvalConfig("spider", "scripted"), scripted_source(policy), tmp_path / "run")
    result = CliRunner().invoke(app, ["score", str(tmp_path / "run"), "--cache-dir", str(cache)])
    assert result.exit_code == 0 and re.search(r"easy.*total", result.output) and "100.00" in result.output
    assert "drop --benchmark" in CliRunner().invoke(app, ["score", str(tmp_path / "run"), "--benchmark", "spider"]).output


# -- what makes it fast changes no answer ----------------------------------------------


def _corpus() -> list[str]:
    queries = [line.split("\t")[0] for f in ("dev_gold.sql", "train_gold.sql") for line in (SPIDER / f).read_text().splitlines()]
    queries += [r["SQL"] for r in json.loads((BIRD / "dev.json").read_text())]
    return queries


def test_the_reused_parser_gives_what_sqlglot_parse_gives(data_dir):
    import sqlglot

    from sqlscout.scoring.parsing import parse_sqlite

    queries = _corpus()[::7]
    # Perturbations include syntax errors, so failures and successes alternate.
    queries += [perturb(q, i) for i, q in enumerate(queries)] + ["", "SELEC", "SELECT (", "Ada", "SELECT 1; SELECT 2", "'x"]

    def fresh(sql):
        try:
            return [t.sql() if t is not None else None for t in sqlglot.parse(sql, read="sqlite")]
        except Exception as exc:  # noqa: BLE001 - the type is what is compared
            return type(exc).__name__

    def reused(sql):
        try:
            return [t.sql() if t is not None else None for t in parse_sqlite(sql)]
        except Exception as exc:  # noqa: BLE001
            return type(exc).__name__

    assert [reused(q) for q in queries] == [fresh(q) for q in queries]


def test_match_all_is_results_match_under_each_semantics(data_dir):
    rows = [[], [(1,)], [(1,), (1,)], [(1,), (2,)], [(2,), (1,)], [(1, "a"), (2, "b")], [("a", 1), ("b", 2)],
            [(2, "b"), (1, "a")], [(1.0,), (2,)], [(None,), (2,)], [(2, "b"), (1, "a"), (1, "a")]]
    golds = ["SELECT a FROM t", "SELECT a FROM t ORDER BY a", "SELECT a FROM (SELECT a FROM t ORDER BY a)",
             "SELECT a FROM t WHERE b = 'order by'"]
    from sqlscout.scoring.compare import match_all, results_match

    for pred, gold, sql in itertools.product(rows, rows, golds):
        expected = tuple(results_match(s, pred, gold, sql) for s in (Semantics.OFFICIAL, Semantics.STRICT, Semantics.SPIDER))
        assert match_all(pred, gold, sql) == expected, (pred, gold, sql)
        assert match_all(pred, gold, sql, top_level_order=has_top_level_order_by(sql)) == expected


def test_small_workloads_stay_in_this_process_and_long_ones_move_to_a_pool(spider_dev, monkeypatch):
    import sqlscout.evaluation.batch_score as scorer

    predictions = [Prediction(t, perturb(t.gold_sql, i)) for i, t in enumerate(spider_dev[:400])]
    here = score_predictions(predictions)
    assert here.workers == 1
    # Pretend every question takes long: after the first slice the rest goes to a pool.
    monkeypatch.setattr(scorer, "_worth_a_pool", lambda elapsed, done, total: total - done > 0)
    moved = score_predictions(predictions, ScoreConfig(workers=None))
    assert moved.workers == (os.cpu_count() or 1)
    assert moved.verdicts == here.verdicts
    assert score_predictions(predictions, ScoreConfig(workers=2)).verdicts == here.verdicts


def test_progress_is_reported_as_questions_are_scored(spider_dev):
    seen = []
    predictions = [Prediction(t, t.gold_sql) for t in spider_dev[:300]]
    score_predictions(predictions, ScoreConfig(workers=1), progress=lambda done, total, correct: seen.append((done, total, correct)))
    assert seen[-1] == (300, 300, 300) and len(seen) > 3
    assert [d for d, _, _ in seen] == sorted(d for d, _, _ in seen)


# -- the cache's files -----------------------------------------------------------------


def test_one_cache_file_per_database_holding_results_and_order(spider_dev, tmp_path):
    from sqlscout.scoring.result_cache import ResultCache

    tasks = spider_dev[:120]
    predictions = [Prediction(t, perturb(t.gold_sql, i)) for i, t in enumerate(tasks)]
    score_predictions(predictions, ScoreConfig(workers=1, cache_dir=tmp_path))
    cache = ResultCache(tmp_path)
    databases = {t.db_path for t in tasks}
    bundles = sorted(p.name for p in cache.folder.glob("*.marshal") if p.name != "files.marshal")
    assert bundles == sorted(f"{cache.database_hash(d)}-{cache.max_rows}.marshal" for d in databases)
    for task in tasks:
        bundle = cache.results(cache.database_hash(task.db_path))
        assert bundle.get(task.gold_sql).rows == _reference_rows(task.db_path, task.gold_sql)
    # The ORDER BY question is kept for the gold queries whose comparison asked it.
    asked = [t.gold_sql for t in tasks if cache.results(cache.database_hash(t.db_path)).top_level_order(t.gold_sql) is not None]
    assert asked and all(cache.results(cache.database_hash(t.db_path)).top_level_order(t.gold_sql) == _ordered_by_text(t.gold_sql)
                         for t in tasks if t.gold_sql in asked)


def test_big_results_get_a_file_of_their_own_and_writers_merge(tmp_path):
    from sqlscout.scoring.result_cache import SPILL_CELLS, ResultCache
    from sqlscout.scoring import ExecResult

    big = ExecResult(("n",), [(i,) for i in range(SPILL_CELLS + 1)])
    first, second = ResultCache(tmp_path), ResultCache(tmp_path)
    first.put_many([("h", "SELECT big", big), ("h", "SELECT 1", ExecResult(("1",), [(1,)]))])
    second.results("h")  # loaded before the first wrote more: its write must not lose that
    first.put_many([("h", "SELECT 2", ExecResult(("2",), [(2,)]))])
    second.put_many([("h", "SELECT 3", ExecResult(("3",), [(3,)]))])
    fresh = ResultCache(tmp_path)
    assert [fresh.get("h", f"SELECT {n}").rows for n in (1, 2, 3)] == [[(1,)], [(2,)], [(3,)]]
    assert fresh.get("h", "SELECT big").rows == big.rows
    bundle_file = fresh.folder / f"h-{fresh.max_rows}.marshal"
    assert bundle_file.stat().st_size < 10_000 and len(list(bundle_file.with_suffix("").iterdir())) == 1
    bundle_file.write_bytes(b"damaged")
    assert ResultCache(tmp_path).get("h", "SELECT 1") is None  # a damaged file reads as empty
    ResultCache(tmp_path).put_many([("h", "SELECT 1", ExecResult(("1",), [(1,)]))])
    assert ResultCache(tmp_path).get("h", "SELECT 1").rows == [(1,)]
