"""Benchmark folders in other benchmarks' layouts, built from real Spider databases.

There are no BIRD ``.sqlite`` files and no SQaLe parquet files on this disk, so tests
build them: a BIRD-layout folder (``dev.json`` in BIRD's format beside
``dev_databases/<db>/<db>.sqlite`` copies of Spider databases), and a SQaLe-layout
folder (``queries/`` and ``schemas/`` parquet files with the columns the ``sqale``
package reads) whose databases are Spider ones serialised as DDL plus rows.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from sqlscout.data.sqale import SQALE_PHRASINGS
from sqlscout.data.spider_hardness import hardness
from sqlscout.scoring import tables_used

SQALE_SPLITS = {"test": ("concert_singer", "pets_1"), "train": ("employee_hire_evaluation",)}
BIRD_DBS = ("concert_singer", "pets_1", "employee_hire_evaluation")
_SQALE_LEVEL = {"easy": "simple", "medium": "moderate", "hard": "hard", "extra": "hard"}
_BIRD_LEVEL = {"easy": "simple", "medium": "moderate", "hard": "challenging", "extra": "challenging"}
PHRASINGS = SQALE_PHRASINGS


def spider_questions(spider: Path, db_ids: tuple[str, ...]) -> list[dict]:
    """Spider dev records on ``db_ids``, each with its position in dev.json."""
    records = json.loads((spider / "dev.json").read_text())
    return [{**r, "index": i} for i, r in enumerate(records) if r["db_id"] in db_ids]


def build_bird_layout(spider: Path, out: Path, db_ids: tuple[str, ...] = BIRD_DBS) -> Path:
    """A BIRD-layout folder: ``dev.json`` and ``dev_databases/`` (copies of Spider DBs)."""
    questions = spider_questions(spider, db_ids)
    records = [
        {
            "question_id": n,
            "db_id": q["db_id"],
            "question": q["question"],
            "evidence": f"{q['db_id']} tables: {', '.join(sorted(tables_used(q['query'])))}" if n % 3 else "",
            "SQL": q["query"],
            "difficulty": _BIRD_LEVEL[hardness(q["sql"])],
        }
        for n, q in enumerate(questions)
    ]
    out.mkdir(parents=True, exist_ok=True)
    (out / "dev.json").write_text(json.dumps(records, indent=1))
    for db in db_ids:
        target = out / "dev_databases" / db / f"{db}.sqlite"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(spider / "database" / db / f"{db}.sqlite", target)
    return out


def _phrasings(question: str, tables: list[str], n: int) -> dict[str, str]:
    lowered = question[0].lower() + question[1:]
    styles = {
        "verbose": question,
        "evidence_supported": f"{question} (The data is in the tables {', '.join(tables)}.)",
        "structured": f"Task: answer a question. Question: {question}",
        "requirements_list": f"Requirements:\n- {question}\n- Return only the columns asked for.",
        "short_ambiguous": " ".join(question.split()[:5]) + "?",
        "short_high_level": f"Overview: {lowered}",
        "casual": f"hey, quick one: {lowered}",
        "spelling_grammar_mistakes": question.replace("the", "teh").replace("What", "Wat"),
    }
    if n % 7 == 3:  # the real data has placeholder phrasings the package drops
        styles["short_ambiguous"] = "..."
    return styles


def _serialise_schema(db_file: Path) -> tuple[str, str]:
    """(full_schema, schema_content) of a database: its DDL, and rows as JSON objects."""
    conn = sqlite3.connect(f"file:{db_file}?mode=ro", uri=True)
    try:
        tables = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY rowid").fetchall()
        content: dict[str, list[dict]] = {}
        for name, _ in tables:
            cursor = conn.execute(f'SELECT * FROM "{name}"')
            columns = [d[0] for d in cursor.description]
            content[name] = [dict(zip(columns, row)) for row in cursor]
    finally:
        conn.close()
    return ";\n".join(sql for _, sql in tables) + ";", json.dumps(content)


def build_sqale_layout(spider: Path, out: Path) -> Path:
    """A SQaLe-layout folder: ``queries/data/<split>-00000-of-00001.parquet`` and the
    same under ``schemas/``, with the hub datasets' columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for split, db_ids in SQALE_SPLITS.items():
        queries = {k: [] for k in (
            "question_id", "schema_id", "difficulty", "questions", "sql",
            "relevant_tables", "number_of_relevant_tables", "execution_result",
        )}
        for n, q in enumerate(spider_questions(spider, db_ids)):
            tables = sorted(tables_used(q["query"]))
            with sqlite3.connect(f"file:{spider / 'database' / q['db_id'] / (q['db_id'] + '.sqlite')}?mode=ro", uri=True) as conn:
                result = [list(r) for r in conn.execute(q["query"]).fetchmany(5)]
            queries["question_id"].append(f"{split}-q{q['index']}")
            queries["schema_id"].append(f"spider_{q['db_id']}")
            queries["difficulty"].append(_SQALE_LEVEL[hardness(q["sql"])])
            queries["questions"].append(json.dumps(_phrasings(q["question"], tables, n)))
            queries["sql"].append(q["query"])
            queries["relevant_tables"].append(json.dumps(tables))
            queries["number_of_relevant_tables"].append(len(tables))
            queries["execution_result"].append(json.dumps(result, default=str))
        schemas = {"schema_id": [], "full_schema": [], "schema_content": []}
        for db in db_ids:
            ddl, content = _serialise_schema(spider / "database" / db / f"{db}.sqlite")
            schemas["schema_id"].append(f"spider_{db}")
            schemas["full_schema"].append(ddl)
            schemas["schema_content"].append(content)
        for name, columns in (("queries", queries), ("schemas", schemas)):
            target = out / name / "data" / f"{split}-00000-of-00001.parquet"
            target.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.table(columns), target)
    return out
