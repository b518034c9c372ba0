"""Schema-size conditions: reduced databases built from real Spider databases."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import SPIDER, spider_db, needs_shared_data

from sqlscout.data import load_tasks
from sqlscout.data.conditions import Condition, apply_condition
from sqlscout.data.ddl import strip_foreign_keys
from sqlscout.data.subset import build_subset, table_names
from sqlscout.errors import ConfigError, DataError
from sqlscout.scoring import tables_used
from sqlscout.env.task import Task


@pytest.fixture(scope="module")
def spider_dev(data_dir):
    return load_tasks("spider", SPIDER, missing_db="skip")


def _rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute(sql).fetchall()


def test_gold_condition_answers_every_spider_gold_query_as_the_full_database(spider_dev, tmp_path):
    reduced = apply_condition(spider_dev, "gold", tmp_path)
    for full, gold in zip(spider_dev, reduced):
        assert gold.condition == "gold" and gold.meta["source_db_path"] == str(full.db_path)
        assert {t.lower() for t in table_names(gold.db_path)} == tables_used(full.gold_sql)
        assert _rows(gold.db_path, gold.gold_sql) == _rows(full.db_path, full.gold_sql), full.question_id


def test_distractors_are_gold_plus_k_others_chosen_by_the_seed(spider_dev, tmp_path):
    tasks = [t for t in spider_dev if t.db_id == "car_1"]  # 6 tables
    first = apply_condition(tasks, "distractors:2", tmp_path, seed=7)
    again = apply_condition(tasks, Condition("distractors", 2), tmp_path, seed=7)
    assert [t.db_path for t in first] == [t.db_path for t in again]
    other_seeds = {tuple(apply_condition(tasks[:1], "distractors:2", tmp_path, seed=s)[0].meta["kept_tables"]) for s in range(8)}
    assert len(other_seeds) > 1
    for task in first:
        kept = {t.lower() for t in table_names(task.db_path)}
        gold = tables_used(task.gold_sql)
        assert gold <= kept and len(kept - gold) == task.meta["distractors"] == min(2, 6 - len(gold))
        assert task.condition == "distractors:2"
    everything = apply_condition(tasks[:1], "distractors:50", tmp_path)[0]
    assert len(table_names(everything.db_path)) == 6  # fewer others than K: all kept


@needs_shared_data
def test_reduced_databases_keep_foreign_keys_among_kept_tables_only(tmp_path):
    source = spider_db("college_1")  # table constraints written without commas between them
    build_subset(source, ["CLASS", "COURSE"], tmp_path / "sub.sqlite")
    with sqlite3.connect(tmp_path / "sub.sqlite") as conn:
        fks = conn.execute("PRAGMA foreign_key_list(CLASS)").fetchall()
        ddl = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'CLASS'").fetchone()[0]
    assert [(fk[2], fk[3]) for fk in fks] == [("COURSE", "CRS_CODE")]
    assert "EMPLOYEE" not in ddl and "REFERENCES COURSE(CRS_CODE)" in ddl


def test_every_spider_table_can_be_cut_out(data_dir, tmp_path):
    """Keeping each table alone, and all but each one, gives a database that matches the
    source table for table (build_subset checks columns, row counts and foreign keys)."""
    for db in ("chinook_1", "college_1", "products_for_hire", "restaurants", "customers_campaigns_ecommerce"):
        names = table_names(spider_db(db))
        for name in names:
            build_subset(spider_db(db), [name], tmp_path / f"{db}-{name}-only.sqlite")
            build_subset(spider_db(db), [n for n in names if n != name], tmp_path / f"{db}-{name}-not.sqlite")


@pytest.mark.parametrize(
    "ddl, dropped, expected",
    [
        ("CREATE TABLE t (a INT REFERENCES x(id), b INT)", {"x"}, "CREATE TABLE t (a INT, b INT)"),
        ("CREATE TABLE t (a INT CONSTRAINT fk REFERENCES [X] ON DELETE CASCADE NOT NULL)", {"x"}, "CREATE TABLE t (a INT NOT NULL)"),
        ("CREATE TABLE t (a INT, FOREIGN KEY (a) REFERENCES `x`(id) DEFERRABLE INITIALLY DEFERRED)", {"x"}, "CREATE TABLE t (a INT)"),
        (
            "CREATE TABLE t (a INT, b INT, PRIMARY KEY (a)\nFOREIGN KEY (a) REFERENCES x(id),\nFOREIGN KEY (b) REFERENCES y(id)\n)",
            {"x"},
            "CREATE TABLE t (a INT, b INT, PRIMARY KEY (a),\nFOREIGN KEY (b) REFERENCES y(id)\n)",
        ),
        (
            "CREATE TABLE t (a INT, b INT,\nFOREIGN KEY (a) REFERENCES x(id)\nFOREIGN KEY (b) REFERENCES y(id)\n)",
            {"x", "y"},
            "CREATE TABLE t (a INT, b INT\n)",
        ),
        ("CREATE TABLE t (a INT, FOREIGN KEY (a) REFERENCES y(id))", {"x"}, "CREATE TABLE t (a INT, FOREIGN KEY (a) REFERENCES y(id))"),
        ("CREATE TABLE t (\"x\" INT DEFAULT 'REFERENCES x', b INT) -- REFERENCES x", {"x"}, "CREATE TABLE t (\"x\" INT DEFAULT 'REFERENCES x', b INT) -- REFERENCES x"),
    ],
)
def test_strip_foreign_keys(ddl, dropped, expected):
    assert strip_foreign_keys(ddl, dropped) == expected
    sqlite3.connect(":memory:").execute(expected)


def test_condition_cache_is_reused(spider_dev, tmp_path):
    tasks = spider_dev[:20]
    first = apply_condition(tasks, "gold", tmp_path)
    stamps = {t.db_path: t.db_path.stat().st_mtime_ns for t in first}
    assert len(stamps) < len(first)  # questions on the same tables share a file
    apply_condition(tasks, "gold", tmp_path)
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    full = apply_condition(tasks, "full", tmp_path)
    assert [t.db_path for t in full] == [t.db_path for t in tasks] and {t.condition for t in full} == {"full"}


@pytest.mark.parametrize("text", ["distractors", "distractors:x", "distractors:0", "gold:2", "some"])
def test_bad_conditions(text):
    with pytest.raises(ConfigError):
        Condition.parse(text)


def test_gold_sql_without_tables_cannot_be_reduced(tmp_path):
    task = Task("q1", "one?", spider_db("concert_singer"), gold_sql="SELECT 1")
    with pytest.raises(DataError, match="question q1: its gold SQL reads no table"):
        apply_condition([task], "gold", tmp_path)


def test_an_unparsable_gold_query_still_gets_its_tables(data_dir, tmp_path):
    """Spider-DK's question 76 misses a comma, so sqlglot cannot parse it; the tables
    after FROM/JOIN are kept, and every condition holds the same questions."""
    from conftest import SPIDER_DK

    tasks = load_tasks("spider-dk", SPIDER_DK, missing_db="skip")
    assert not tables_used(tasks[76].gold_sql)
    reduced = apply_condition(tasks, "gold", tmp_path)
    assert len(reduced) == len(tasks) and reduced[76].meta["kept_tables"] == ["Student", "Has_Pet"]
