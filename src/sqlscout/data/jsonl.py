"""The generic format: one JSON object per line.

Fields: ``question`` and ``sql`` (required; ``query``, Spider's name, is taken for
``sql``); ``db_path`` or ``db_id`` (one of them); ``evidence``, ``difficulty``,
``question_id`` (optional; the default id is the line's number among the file's
questions, from 0). A line with ``"checked": false`` is left out: ``sqlscout questions``
writes it for a question that failed its check by execution, and keeps it in the file
only so that a resumed run does not write it again. A relative ``db_path`` is read relative to
the JSONL file; a ``db_id`` is looked up under the database root as
``<root>/<db_id>/<db_id>.sqlite`` or ``<root>/<db_id>.sqlite`` (or ``.db``). Any other
field is kept in ``meta``.

>>> import json, tempfile, os
>>> folder = tempfile.mkdtemp()
>>> with open(os.path.join(folder, "q.jsonl"), "w") as f:
...     _ = f.write(json.dumps({"question": "How many singers?", "sql": "SELECT count(*) FROM singer",
...                             "db_path": "concert.sqlite", "tag": "demo"}) + "\\n")
>>> [task] = load_jsonl(os.path.join(folder, "q.jsonl"), missing_db="keep")
>>> task.question_id, task.db_path.name, task.meta
('0', 'concert.sqlite', {'tag': 'demo'})
"""

from __future__ import annotations

from pathlib import Path

from sqlscout.data.databases import MissingDb, check_databases, find_database
from sqlscout.data.records import Record, read_jsonl
from sqlscout.errors import DataError
from sqlscout.env.task import Task

__all__ = ["load_jsonl"]

_FIELDS = frozenset({"question", "sql", "query", "checked", "db_path", "db_id", "evidence", "difficulty", "question_id"})


def load_jsonl(
    path: str | Path,
    *,
    db_root: str | Path | None = None,
    evidence: bool = True,
    missing_db: MissingDb | str = MissingDb.ERROR,
) -> list[Task]:
    path = Path(path).expanduser()
    root = Path(db_root).expanduser() if db_root is not None else None
    tasks: list[Task] = []
    seen: dict[str, str] = {}
    for record in read_jsonl(path, "JSONL questions file"):
        if record.data.get("checked") is False:
            continue
        task = _task(record, len(tasks), path.parent, root, evidence)
        if task.question_id in seen:
            raise record.error(f"question_id {task.question_id} repeats {seen[task.question_id]}.")
        seen[task.question_id] = record.where
        tasks.append(task)
    if not tasks:
        raise DataError(f"{path}: holds no questions.")
    return check_databases(tasks, missing_db, path)


def _task(record: Record, index: int, folder: Path, root: Path | None, evidence: bool) -> Task:
    db_path = record.text("db_path", required=False)
    db_id = record.text("db_id", required=False)
    resolved: Path | str
    if db_path is not None and "://" in db_path:
        resolved = db_path  # a database URL (postgresql://, duckdb://, mysql://): docs/engines.md
    elif db_path is not None:
        resolved = folder / Path(db_path).expanduser()
    elif db_id is not None:
        if root is None:
            raise record.error(f"db_id '{db_id}' needs a database root (--db-root) to find its file.")
        resolved = find_database(db_id, [root], flat=True)
    else:
        raise record.error("needs 'db_path' (a SQLite file or a database URL) or 'db_id' (a database under --db-root).")
    note = record.text("evidence", required=False)
    sql = record.text("query" if "query" in record.data and "sql" not in record.data else "sql")
    return Task(
        question_id=record.ident("question_id", required=False) or str(index),
        question=record.text("question") or "",
        db_path=resolved,
        gold_sql=sql,
        evidence=note if evidence else None,
        difficulty=record.text("difficulty", required=False),
        db_id=db_id,
        benchmark="jsonl",
        meta={k: v for k, v in record.data.items() if k not in _FIELDS},
    )
