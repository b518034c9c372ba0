"""The one gold-result cache: each (database, gold SQL) runs once, memory stays bounded,
and the shared disk cache is read and written."""

from __future__ import annotations

from pathlib import Path

from conftest import CHINOOK, spider_db
from sqlscout.env.sandbox import Database
from sqlscout.scoring.gold import GoldResults
from sqlscout.scoring.result_cache import ResultCache


def test_a_gold_query_runs_once_per_database() -> None:
    golds = GoldResults()
    chinook, singers = Database(CHINOOK), Database(spider_db("concert_singer"))
    first, source = golds.get(chinook, "SELECT COUNT(*) FROM Genre")
    assert (first.rows, source) == ([(25,)], "ran")
    again, source = golds.get(chinook, "SELECT COUNT(*) FROM Genre")
    assert again is first and source == "repeated"
    # The same text on another file is another gold result.
    assert golds.get(singers, "SELECT COUNT(*) FROM Genre")[0].error  # no Genre table there
    assert golds.get(singers, "SELECT COUNT(*) FROM singer")[1] == "ran"


def test_least_recently_used_results_go_first_and_big_ones_are_not_kept() -> None:
    golds = GoldResults(max_entries=2, max_cells=100)
    db = Database(CHINOOK)
    for n in (1, 2, 3):
        golds.get(db, f"SELECT {n}")
    assert golds.get(db, "SELECT 1")[1] == "ran"  # evicted by SELECT 3
    assert golds.get(db, "SELECT 3")[1] == "repeated"
    big = "SELECT TrackId, Name FROM Track"  # 3,503 rows x 2 columns: over the cell cap
    assert golds.get(db, big)[1] == "ran" and golds.get(db, big)[1] == "ran"


def test_results_are_shared_through_the_disk_cache(tmp_path: Path) -> None:
    db = Database(CHINOOK)
    writer = GoldResults.over_cache(ResultCache(tmp_path), write_through=True)
    assert writer.get(db, "SELECT COUNT(*) FROM Album")[1] == "ran"
    reader = GoldResults.over_cache(ResultCache(tmp_path))  # another run, another process
    result, source = reader.get(db, "SELECT COUNT(*) FROM Album")
    assert (result.rows, source) == ([(347,)], "cached")
    # Held back until flushed when not writing through.
    lazy = GoldResults.over_cache(ResultCache(tmp_path))
    lazy.get(db, "SELECT COUNT(*) FROM Artist")
    assert GoldResults.over_cache(ResultCache(tmp_path)).get(db, "SELECT COUNT(*) FROM Artist")[1] == "ran"
    lazy.flush()
    assert GoldResults.over_cache(ResultCache(tmp_path)).get(db, "SELECT COUNT(*) FROM Artist")[1] == "cached"


def test_parse_verdicts_are_kept_beside_the_results_by_sqlglot_version(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path)
    digest = cache.database_hash(CHINOOK)
    bundle = cache.results(digest)
    bundle.put_parsed("SELEC 1", "1.0", False)
    bundle.put_parsed("SELECT x FROM nope", "1.0", True)
    bundle.flush()
    again = ResultCache(tmp_path).results(digest)  # another run
    assert again.parsed("SELEC 1", "1.0") is False and again.parsed("SELECT x FROM nope", "1.0") is True
    assert again.parsed("SELEC 1", "2.0") is None  # another sqlglot: asked again
    again.put_parsed("SELEC 1", "2.0", True)
    again.flush()
    third = ResultCache(tmp_path).results(digest)
    assert third.parsed("SELEC 1", "2.0") is True and third.parsed("SELECT x FROM nope", "2.0") is None


def test_a_run_with_parse_verdicts_cached_gives_the_same_verdicts(tmp_path: Path) -> None:
    from sqlscout.env.task import Task
    from sqlscout.evaluation.batch_score import Prediction, ScoreConfig, score_predictions
    from sqlscout.scoring.verdict import parses

    sqls = ["SELECT count(*) FROM Genre", "SELEC count(*) FROM Genre", "SELECT nope FROM Genre", "DELETE FROM Genre",
            "Ada", "-- nothing", "SELECT count(*) FROM Genre WHERE 0"]
    preds = [Prediction(Task(str(i), "q", CHINOOK, gold_sql="SELECT count(*) FROM Genre"), s) for i, s in enumerate(sqls)]
    uncached = score_predictions(preds, ScoreConfig(workers=1)).verdicts
    first = score_predictions(preds, ScoreConfig(workers=1, cache_dir=tmp_path)).verdicts
    parses.cache_clear()
    second = score_predictions(preds, ScoreConfig(workers=1, cache_dir=tmp_path)).verdicts
    assert uncached == first == second
    assert [v.outcome.value for v in second] == ["equivalent", "invalid", "parsable", "invalid", "invalid", "invalid", "executable"]
    assert parses.cache_info().currsize == 0  # the second run asked sqlglot nothing
