"""Spider 1.0 (Yu et al., 2018): ``dev.json``, ``tables.json``, ``database/<db>/<db>.sqlite``.

A question's id is its position in the split's file (``"0"`` .. ``"1033"`` for dev), the
order ``dev_gold.sql`` and every Spider predictions file use. Its difficulty is Spider's
own hardness (easy, medium, hard, extra), computed from the parsed query the file holds.

Example (paths relative to a checkout beside the shared data)::

    tasks = load_spider("../shared/data/spider", missing_db="skip")
    tasks[0].db_id, tasks[0].difficulty
    # -> ('concert_singer', 'easy')
"""

from __future__ import annotations

from pathlib import Path

from sqlscout.data.databases import MissingDb, check_databases, find_database
from sqlscout.data.meta_cache import cached_rows
from sqlscout.data.records import Record, read_json_list
from sqlscout.data.spider_hardness import hardness
from sqlscout.errors import ConfigError
from sqlscout.env.task import Task

__all__ = ["SPIDER_SPLITS", "known_db_ids", "load_spider", "spider_row", "spider_task"]

# split -> (question files, database folder)
SPIDER_SPLITS: dict[str, tuple[tuple[str, ...], str]] = {
    "dev": (("dev.json",), "database"),
    "train": (("train_spider.json", "train_others.json"), "database"),
    "test": (("test.json",), "test_database"),
}


def load_spider(
    path: str | Path,
    *,
    split: str = "dev",
    db_root: str | Path | None = None,
    missing_db: MissingDb | str = MissingDb.ERROR,
    cache_dir: str | Path | None = None,
) -> list[Task]:
    """Load a Spider split from the Spider folder (or the split's JSON file itself).

    ``db_root`` overrides the database folder (default: ``database/`` beside the JSON).
    With ``cache_dir``, what the files hold is kept there and read back while they are
    unchanged (:mod:`sqlscout.data.meta_cache`).
    """
    if split not in SPIDER_SPLITS:
        raise ConfigError(f"Spider has no split {split!r}; choose one of {', '.join(SPIDER_SPLITS)}")
    path = Path(path).expanduser()
    names, db_folder = SPIDER_SPLITS[split]
    files = [path] if path.suffix == ".json" else [path / name for name in names]
    folder = files[0].parent
    roots = [Path(db_root).expanduser()] if db_root is not None else [folder / db_folder]
    tables = folder / ("tables.json" if split != "test" else "test_tables.json")

    def read() -> list[tuple]:
        known = known_db_ids(tables)
        return [spider_row(record, known) for file in files for record in read_json_list(file, f"Spider {split} questions")]

    rows = cached_rows(cache_dir, "spider", [*files, tables], read)
    where = _Finder(roots)
    tasks = [
        Task(str(index), question, where(db_id), gold_sql=sql, difficulty=level, db_id=db_id, benchmark="spider",
             meta={"index": index})
        for index, (db_id, question, sql, level) in enumerate(rows)
    ]
    return check_databases(tasks, missing_db, files[0])


def known_db_ids(tables_json: Path) -> frozenset[str] | None:
    """The database ids ``tables.json`` lists, or None when the file is absent."""
    if not tables_json.is_file():
        return None
    return frozenset(r.text("db_id") or "" for r in read_json_list(tables_json, "Spider tables.json"))


def spider_row(record: Record, known: frozenset[str] | None) -> tuple[str, str, str | None, str | None]:
    """(db_id, question, gold SQL, hardness) of one Spider-format record."""
    db_id = record.text("db_id")
    assert db_id is not None
    if known is not None and db_id not in known:
        raise record.error(f"unknown database '{db_id}' (not in tables.json).")
    sql = record.text("query")
    parsed = record.data.get("sql")
    try:
        level = hardness(parsed) if isinstance(parsed, dict) else None
    except (KeyError, IndexError, TypeError, ValueError):
        raise record.error("field 'sql' is not a Spider parsed query.") from None
    return db_id, record.text("question") or "", sql, level


def spider_task(record: Record, index: int, roots: list[Path], known: frozenset[str] | None, benchmark: str) -> Task:
    """One Spider-format record as a Task (Spider-DK uses the same fields)."""
    db_id, question, sql, level = spider_row(record, known)
    return Task(
        question_id=str(index),
        question=question,
        db_path=find_database(db_id, roots),
        gold_sql=sql,
        difficulty=level,
        db_id=db_id,
        benchmark=benchmark,
        meta={"index": index},
    )


class _Finder:
    """:func:`find_database`, asked once per database (a benchmark has a few dozen)."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots
        self.found: dict[str, Path] = {}

    def __call__(self, db_id: str) -> Path:
        path = self.found.get(db_id)
        if path is None:
            path = self.found[db_id] = find_database(db_id, self.roots)
        return path
