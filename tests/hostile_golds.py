"""Questions whose gold SQL returns more than any cap allows, on a small database: what
`eval` must get through without dying (tests/test_isolation.py, tests/test_openai_backend.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

BLOBS = "SELECT " + ", ".join(f"zeroblob(1000000) AS b{i}" for i in range(2000))  # one row, 2 GB
ROWS = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 999999) SELECT "
        + ", ".join(f"i AS c{k}" for k in range(97)) + " FROM n")  # fmt: skip
BENIGN = [("ok", "How many rows are in t?", "SELECT count(*) FROM t"), ("ok2", "What is the largest a in t?", "SELECT max(a) FROM t")]
HOSTILE = BENIGN + [("blobs", "Give one row of big blobs.", BLOBS), ("rows", "List a million rows.", ROWS)]


def write_questions(folder: Path, name: str, questions: list[tuple[str, str, str]]) -> Path:
    """``folder/h.sqlite`` (one table of 100 rows, made once) and ``folder/NAME.jsonl``
    holding ``questions`` (id, question, gold SQL) on it; the JSONL's path."""
    database = folder / "h.sqlite"
    if not database.exists():
        with sqlite3.connect(database) as conn:
            conn.execute("CREATE TABLE t (a INTEGER)")
            conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100)])
        conn.close()
    data = folder / f"{name}.jsonl"
    data.write_text("".join(json.dumps({"question_id": q, "question": text, "db_id": "h", "sql": sql}) + "\n" for q, text, sql in questions))
    return data
