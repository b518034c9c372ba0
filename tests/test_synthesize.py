"""Questions written for gold SQL that has none, kept when the model answers them back
right (issue 38's training data): the pipeline over real databases, a scripted model."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import SPIDER_DB
from sqlscout.backends.scripted import ScriptedBackend, ScriptTurn
from sqlscout.data.splits import SPIDER_DEV_DATABASES
from sqlscout.data.synthesize import read_gold_sql, sample_items, synthesize
from sqlscout.runner import RunMode, Runner, RunnerConfig

GOLD = "SELECT count(*) FROM singer\tconcert_singer\nSELECT  count(*)  FROM singer\tconcert_singer\nSELECT name FROM singer WHERE age > 40\tconcert_singer\nSELECT 1\ttrain_only_db\n"

WRITTEN = {"count(*)": "Question: How many singers are there?", "age > 40": "Which singers are older than 40?"}


def _reply(turn: ScriptTurn) -> str:
    if "You write the question a SQL query answers" in turn.prompt:
        return next(q for key, q in WRITTEN.items() if key in turn.prompt.rsplit("Query:", 1)[1])
    if "How many singers" in turn.prompt:
        return "```sql\nSELECT COUNT(*) FROM singer\n```"  # answered back right
    return "```sql\nSELECT name FROM singer\n```"  # answered back wrong: not checked


def test_questions_are_written_checked_by_execution_and_resumed(tmp_path: Path) -> None:
    gold = tmp_path / "gold.sql"
    gold.write_text(GOLD)
    items = read_gold_sql(gold)
    assert [(i.item_id, i.db_id) for i in items] == [("1", "concert_singer"), ("3", "concert_singer"), ("4", "train_only_db")]
    items = sample_items(items, None, 0, exclude_db_ids=frozenset({"train_only_db"}))
    out = tmp_path / "questions.jsonl"
    config = RunnerConfig(mode=RunMode.SINGLE_SHOT, max_batch=4)
    where = lambda db_id: SPIDER_DB / db_id / f"{db_id}.sqlite"  # noqa: E731
    with Runner(ScriptedBackend(_reply), config) as runner:
        records = list(synthesize(items, where, runner, out))
    assert [(r["question"], r["checked"]) for r in records] == [
        ("How many singers are there?", True), ("Which singers are older than 40?", False),
    ]
    assert [json.loads(line)["question_id"] for line in out.read_text().splitlines()] == ["1", "3"]
    with Runner(ScriptedBackend(_reply), config) as runner:
        assert list(synthesize(items, where, runner, out)) == []  # resumed: nothing left to write
    # The trainer reads the file as a JSONL benchmark: the checked question only, with its gold query.
    from sqlscout.data import load_tasks

    [task] = load_tasks("jsonl", out, db_root=SPIDER_DB)
    assert (task.question_id, task.question, task.gold_sql, task.db_id) == ("1", "How many singers are there?", "SELECT count(*) FROM singer", "concert_singer")
    # The training databases are kept apart from every Spider dev database.
    assert not SPIDER_DEV_DATABASES & {"department_management", "train_only_db"}


def test_gold_queries_on_missing_databases_are_left_out_after_the_draw(tmp_path: Path) -> None:
    """Spider's train_gold.sql names baseball_1 and soccer_1, whose files are not in its
    folder: the command stopped at the first of them, on every resume."""
    import subprocess
    import sys

    from sqlscout.data.synthesize import present_items

    gold = tmp_path / "gold.sql"
    gold.write_text(GOLD)
    items = sample_items(read_gold_sql(gold), None, 0)
    kept, missing = present_items(items, lambda db_id: SPIDER_DB / db_id / f"{db_id}.sqlite")
    assert [i.item_id for i in kept] == ["1", "3"] and missing == {"train_only_db": 1}
    only_missing = tmp_path / "missing.sql"
    only_missing.write_text("SELECT 1\ttrain_only_db\n")
    done = subprocess.run(
        [sys.executable, "-m", "sqlscout.cli.main", "questions", str(only_missing), "--db-root", str(SPIDER_DB),
         "--out", str(tmp_path / "q.jsonl")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no database of these gold queries is under" in done.stderr and "train_only_db" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
