"""Loaders on the real benchmark files (and BIRD/SQaLe layouts built from Spider databases)."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from conftest import BIRD, SPIDER, SPIDER_DK

from sqlscout.data import load_tasks
from sqlscout.errors import ConfigError, DataError


def _rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute(sql).fetchall()


# -- Spider -----------------------------------------------------------------------


def test_spider_dev_matches_the_gold_file_and_the_published_hardness_split(data_dir):
    tasks = load_tasks("spider", SPIDER, missing_db="keep")
    gold = [line.split("\t") for line in (SPIDER / "dev_gold.sql").read_text().splitlines() if line.strip()]
    assert len(tasks) == len(gold) == 1034
    assert [(t.gold_sql, t.db_id) for t in tasks] == [(sql, db) for sql, db in gold]
    assert [t.question_id for t in tasks] == [str(i) for i in range(1034)]
    # The split every Spider paper reports for dev.
    assert Counter(t.difficulty for t in tasks) == {"easy": 248, "medium": 446, "hard": 174, "extra": 166}


def test_spider_missing_database_is_an_error_unless_skipped(data_dir):
    with pytest.raises(DataError, match=r"62 questions .*wta_1.*--missing-db skip"):
        load_tasks("spider", SPIDER)
    tasks = load_tasks("spider", SPIDER, missing_db="skip")
    assert len(tasks) == 972 and all(t.db_path.is_file() for t in tasks)
    assert "wta_1" not in {t.db_id for t in tasks}


def test_spider_filters_and_limit(data_dir):
    tasks = load_tasks("spider", SPIDER / "dev.json", difficulty=["hard", "extra"], limit=5, missing_db="skip")
    assert len(tasks) == 5 and {t.difficulty for t in tasks} <= {"hard", "extra"}
    with pytest.raises(ConfigError, match="easy, medium, hard, extra"):
        load_tasks("spider", SPIDER, difficulty="simple")


def test_spider_dk_merges_its_databases_with_spiders(data_dir):
    tasks = load_tasks("spider-dk", SPIDER_DK, missing_db="skip", db_root=SPIDER / "database")
    raw = json.loads((SPIDER_DK / "Spider-DK.json").read_text())
    assert len(tasks) == sum(r["db_id"] != "wta_1" for r in raw) == 473
    by_db = {t.db_id: t.db_path for t in tasks}
    assert by_db["new_pets_1"] == SPIDER_DK / "database" / "new_pets_1" / "new_pets_1.sqlite"
    assert by_db["car_1"] == SPIDER / "database" / "car_1" / "car_1.sqlite"
    assert {t.meta["dk_type"] for t in tasks} >= {"0", "1", "2"}
    # Gold queries run on the database they are resolved to (all but the upstream typo).
    first = tasks[0]
    assert _rows(first.db_path, first.gold_sql) == _rows(by_db["new_concert_singer"], "SELECT count(*) FROM singer")


# -- BIRD -------------------------------------------------------------------------


def test_bird_dev_json_parses_without_databases(data_dir):
    tasks = load_tasks("bird", BIRD, missing_db="keep")
    raw = json.loads((BIRD / "dev.json").read_text())
    assert len(tasks) == len(raw) == 1534
    assert [t.question_id for t in tasks] == [str(r["question_id"]) for r in raw]
    assert Counter(t.difficulty for t in tasks) == Counter(r["difficulty"] for r in raw)
    assert tasks[0].evidence == raw[0]["evidence"]
    assert tasks[0].db_path == BIRD / "dev_databases" / "california_schools" / "california_schools.sqlite"
    assert all(t.evidence is None for t in load_tasks("bird", BIRD, evidence=False, missing_db="keep"))
    with pytest.raises(DataError, match="california_schools"):
        load_tasks("bird", BIRD)


def test_bird_mini_dev_keeps_every_record_in_order(data_dir):
    tasks = load_tasks("bird", BIRD, split="mini-dev", missing_db="keep")
    gold = [line.rsplit("\t", 1) for line in (BIRD / "mini_dev_sqlite_gold.sql").read_text().splitlines() if line.strip()]
    assert [(t.gold_sql, t.db_id) for t in tasks] == [(sql, db) for sql, db in gold]
    ids = [t.question_id for t in tasks]
    assert len(ids) == len(set(ids)) == 500
    assert ids[484:489] == ["137", "138", "129", "137#2", "138#2"]  # upstream repeats two records


def test_bird_layout_built_from_spider_runs(bird_layout):
    tasks = load_tasks("bird", bird_layout, difficulty="challenging")
    assert tasks and {t.difficulty for t in tasks} == {"challenging"}
    for task in tasks[:5]:
        assert task.db_path.parent.parent == bird_layout / "dev_databases"
        _rows(task.db_path, task.gold_sql)
    evidence = {t.evidence for t in load_tasks("bird", bird_layout)}
    assert None in evidence and len(evidence) > 1  # empty evidence reads as none


# -- SQaLe ------------------------------------------------------------------------


def test_sqale_through_the_package_materialises_databases_once(sqale_layout, tmp_path):
    tasks = load_tasks("sqale", sqale_layout, cache_dir=tmp_path)
    assert tasks and {t.phrasing for t in tasks} == {"verbose"}
    assert {t.db_id for t in tasks} == {"spider_concert_singer", "spider_pets_1"}
    stamps = {t.db_path: t.db_path.stat().st_mtime_ns for t in tasks}
    # The materialised database answers the gold query as the Spider original does.
    for task in tasks[::7]:
        original = SPIDER / "database" / task.db_id[7:] / f"{task.db_id[7:]}.sqlite"
        assert sorted(map(repr, _rows(task.db_path, task.gold_sql))) == sorted(map(repr, _rows(original, task.gold_sql)))
    again = load_tasks("sqale", sqale_layout, cache_dir=tmp_path)
    assert again == tasks
    assert {t.db_path: t.db_path.stat().st_mtime_ns for t in again} == stamps  # not rebuilt


def test_sqale_phrasings_difficulty_and_split(sqale_layout, tmp_path):
    verbose = load_tasks("sqale", sqale_layout, cache_dir=tmp_path)
    everything = load_tasks("sqale", sqale_layout, cache_dir=tmp_path, phrasing="all")
    placeholders = sum(1 for n in range(len(verbose)) if n % 7 == 3)  # see benchmark_fixtures
    assert len(everything) == 8 * len(verbose) - placeholders
    assert len({t.question_id for t in everything}) == len(everything)
    casual = load_tasks("sqale", sqale_layout, cache_dir=tmp_path, phrasing="casual", difficulty="hard")
    assert casual and all(t.question.startswith("hey, quick one") and t.difficulty == "hard" for t in casual)
    train = load_tasks("sqale", sqale_layout, cache_dir=tmp_path, split="train", limit=4)
    assert len(train) == 4 and {t.db_id for t in train} == {"spider_employee_hire_evaluation"}
    with pytest.raises(ConfigError, match="unknown phrasing"):
        load_tasks("sqale", sqale_layout, cache_dir=tmp_path, phrasing="formal")
    with pytest.raises(ConfigError, match="simple, moderate, hard"):
        load_tasks("sqale", sqale_layout, cache_dir=tmp_path, difficulty="challenging")
    with pytest.raises(DataError, match="queries/ and schemas/"):
        load_tasks("sqale", tmp_path, cache_dir=tmp_path)


# -- generic JSONL ----------------------------------------------------------------


def _write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def test_sqale_phrasings_are_the_packages_styles():
    """The flag is validated against a copy of the package's styles (no pyarrow import)."""
    from sqale.deserialize import STYLES

    from sqlscout.data.sqale import SQALE_PHRASINGS

    assert SQALE_PHRASINGS == tuple(STYLES)


def test_jsonl_resolves_db_path_and_db_id(tmp_path, chinook_path):
    db_root = SPIDER / "database"
    file = _write_jsonl(
        tmp_path / "q.jsonl",
        [
            {"question": "How many artists?", "sql": "SELECT count(*) FROM Artist", "db_path": str(chinook_path)},
            {"question": "How many singers?", "sql": "SELECT count(*) FROM singer", "db_id": "concert_singer",
             "evidence": "singers are rows of singer", "difficulty": "easy", "question_id": "q-7", "source": "me"},
        ],
    )
    first, second = load_tasks("jsonl", file, db_root=db_root)
    assert (first.question_id, first.db_path, first.db_id) == ("0", chinook_path, "Chinook_Sqlite")
    assert (second.question_id, second.db_id, second.difficulty, second.meta) == ("q-7", "concert_singer", "easy", {"source": "me"})
    assert second.db_path == db_root / "concert_singer" / "concert_singer.sqlite"
    assert second.evidence and load_tasks("jsonl", file, db_root=db_root, evidence=False)[1].evidence is None


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"question": "q", "sql": "SELECT 1"', r"line 2: not valid JSON"),
        ('["question"]', r"line 2: expected a JSON object"),
        ('{"sql": "SELECT 1", "db_id": "concert_singer"}', r"line 2: missing field 'question'"),
        ('{"question": "q", "sql": 3, "db_id": "concert_singer"}', r"line 2: field 'sql' must be a string"),
        ('{"question": "q", "sql": "SELECT 1"}', r"line 2: needs 'db_path' .* or 'db_id'"),
        ('{"question": "q", "sql": "SELECT 1", "db_id": "nope_db"}', r"1 questions use databases that are not there: nope_db"),
    ],
)
def test_jsonl_broken_records_are_named(tmp_path, line, message):
    good = {"question": "q", "sql": "SELECT 1", "db_id": "concert_singer"}
    file = _write_jsonl(tmp_path / "q.jsonl", [good, line])
    with pytest.raises(DataError, match=message):
        load_tasks("jsonl", file, db_root=SPIDER / "database")


# -- errors common to every benchmark ---------------------------------------------


def test_missing_files_and_bad_records_are_named(tmp_path):
    with pytest.raises(DataError, match=r"dev\.json: no such file"):
        load_tasks("spider", tmp_path)
    (tmp_path / "dev.json").write_text('[{"db_id": "concert_singer", "question": "q"}]')
    with pytest.raises(DataError, match=r"dev\.json record 0: missing field 'query'"):
        load_tasks("spider", tmp_path, missing_db="keep")
    (tmp_path / "tables.json").write_text('[{"db_id": "other"}]')
    (tmp_path / "dev.json").write_text('[{"db_id": "concert_singer", "question": "q", "query": "SELECT 1"}]')
    with pytest.raises(DataError, match=r"record 0: unknown database 'concert_singer'"):
        load_tasks("spider", tmp_path, missing_db="keep")
    (tmp_path / "dev.json").write_text('{"not": "a list"}')
    with pytest.raises(DataError, match="expected a JSON list"):
        load_tasks("bird", tmp_path / "dev.json")
    (tmp_path / "dev.json").write_text('[{"question_id": 0, "db_id": "d", "question": "q", "SQL": "SELECT 1", "difficulty": "easy"}]')
    with pytest.raises(DataError, match=r"record 0: field 'difficulty' is 'easy'; expected one of simple"):
        load_tasks("bird", tmp_path, missing_db="keep")


def test_bad_arguments_are_config_errors():
    with pytest.raises(ConfigError, match="unknown benchmark"):
        load_tasks("wikisql", ".")
    with pytest.raises(ConfigError, match="SQaLe only"):
        load_tasks("spider", SPIDER, phrasing="casual")
    with pytest.raises(ConfigError, match="no split"):
        load_tasks("bird", BIRD, split="test")
    with pytest.raises(ConfigError, match="cache folder"):
        load_tasks("sqale", None)
    with pytest.raises(ConfigError, match="missing_db"):
        load_tasks("spider", SPIDER, missing_db="ignore")


DOCUMENTED = [
    "sqlscout.data.records", "sqlscout.data.jsonl", "sqlscout.data.ddl", "sqlscout.data.subset",
    "sqlscout.data.conditions", "sqlscout.data.spider_hardness", "sqlscout.evaluation.batch_score",
    "sqlscout.scoring.result_cache", "sqlscout.evaluation.perturb", "sqlscout.data.meta_cache",
    "sqlscout.scoring.parsing",
]


@pytest.mark.parametrize("module_name", DOCUMENTED)
def test_docstring_examples_run(module_name, data_dir, tmp_path, monkeypatch):
    import doctest
    import importlib

    # Examples open ../shared/data/... as from a checkout's root.
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(data_dir, target_is_directory=True)
    (tmp_path / "checkout").mkdir()
    # ...and the package's own files (src/sqlscout/data/chinook) as from the same root.
    (tmp_path / "checkout" / "src").symlink_to(Path(__file__).resolve().parents[1] / "src", target_is_directory=True)
    monkeypatch.chdir(tmp_path / "checkout")
    module = importlib.import_module(module_name)
    results = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert results.attempted > 0 and results.failed == 0


def test_spider_files_are_read_once_into_the_cache_folder(tmp_path, data_dir):
    import os

    folder = tmp_path / "spider"
    folder.mkdir()
    (folder / "database").symlink_to(SPIDER / "database", target_is_directory=True)
    (folder / "tables.json").write_bytes((SPIDER / "tables.json").read_bytes())
    records = json.loads((SPIDER / "dev.json").read_text())
    (folder / "dev.json").write_text(json.dumps(records))
    cache = tmp_path / "cache"
    fresh = load_tasks("spider", folder, missing_db="skip")
    first = load_tasks("spider", folder, missing_db="skip", cache_dir=cache)
    second = load_tasks("spider", folder, missing_db="skip", cache_dir=cache)
    assert [t.to_dict() for t in fresh] == [t.to_dict() for t in first] == [t.to_dict() for t in second]
    assert len(list(cache.glob("benchmarks-py*/*.marshal"))) == 1
    # A changed file is read again.
    records[0]["question"] = "How many singers are there, really?"
    (folder / "dev.json").write_text(json.dumps(records))
    os.utime(folder / "dev.json", ns=(1, 1))
    assert load_tasks("spider", folder, missing_db="skip", cache_dir=cache)[0].question == records[0]["question"]
    # A broken file is the error it always was, never an answer from the cache.
    (folder / "dev.json").write_text("{oops")
    with pytest.raises(DataError, match="not valid JSON"):
        load_tasks("spider", folder, missing_db="skip", cache_dir=cache)
