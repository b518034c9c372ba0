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
