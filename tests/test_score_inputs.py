"""Scoring inputs (issue 13 item 10): duplicate BIRD keys, failing gold queries, missing
databases with BIRD-format files, the official scripts' pairing by file order, and
statement-free predictions."""

from __future__ import annotations

import json

import pytest
from conftest import CHINOOK, SPIDER, needs_shared_data
from typer.testing import CliRunner

from sqlscout.cli.main import app
from sqlscout.data import load_tasks
from sqlscout.errors import DataError
from sqlscout.evaluation.predictions import BIRD_SEPARATOR, read_predictions


def _bird(path, entries):
    path.write_text("{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in entries) + "}")
    return path


@pytest.fixture(scope="module")
def bird_tasks(bird_layout):
    return load_tasks("bird", bird_layout)


@pytest.mark.parametrize("keys", [("0", "00"), ("0", "0"), ("1", "+1")])
def test_two_keys_for_one_question_are_an_error(bird_tasks, tmp_path, keys):
    t = bird_tasks[int(keys[0])]
    entries = [(k, f"SELECT {n}{BIRD_SEPARATOR}{t.db_id}") for n, k in enumerate(keys)]
    with pytest.raises(DataError, match=r"both name question|twice"):
        read_predictions(_bird(tmp_path / "p.json", entries), bird_tasks)


def test_keys_out_of_file_order_warn_that_the_official_scripts_pair_differently(bird_tasks, tmp_path):
    entries = [(str(i), f"{t.gold_sql}{BIRD_SEPARATOR}{t.db_id}") for i, t in enumerate(bird_tasks)]
    in_order = read_predictions(_bird(tmp_path / "a.json", entries), bird_tasks)
    assert in_order.warnings == []
    swapped = [entries[1], entries[0], *entries[2:]]
    # Both are on one database here; the official script would pair entry 0 (key 1) with question 0.
    read = read_predictions(_bird(tmp_path / "b.json", swapped), bird_tasks)
    assert len(read.warnings) == 1 and "file order" in read.warnings[0] and "key '1'" in read.warnings[0]
    partial = read_predictions(_bird(tmp_path / "c.json", entries[:5]), bird_tasks)
    assert any("only-predicted" in w for w in partial.warnings)


@pytest.mark.parametrize("fmt", ["bird", "jsonl"])
def test_an_empty_and_a_comment_only_prediction_are_the_same(bird_tasks, tmp_path, fmt):
    texts = ["", "   ", "-- no answer", "/* nothing */", ";"]
    tasks = bird_tasks[: len(texts)]
    if fmt == "bird":
        file = _bird(tmp_path / "p.json", [(str(i), f"{s}{BIRD_SEPARATOR}{t.db_id}") for i, (s, t) in enumerate(zip(texts, tasks))])
    else:
        file = tmp_path / "p.jsonl"
        file.write_text("".join(json.dumps({"question_id": t.question_id, "sql": s}) + "\n" for s, t in zip(texts, tasks)))
    read = read_predictions(file, tasks)
    assert [p.sql for p in read.predictions] == [None] * len(texts)
    assert read.unanswered == len(texts)


def test_a_failing_gold_query_is_reported(tmp_path):
    questions = tmp_path / "q.jsonl"
    golds = ["SELECT count(*) FROM Genre", "SELECT nope FROM Genre", "SELECT Name FROM Genre WHERE GenreId = 1"]
    questions.write_text(
        "".join(json.dumps({"question": f"q{i}", "sql": g, "db_path": str(CHINOOK)}) + "\n" for i, g in enumerate(golds))
    )
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"question_id": str(i), "sql": g}) + "\n" for i, g in enumerate(golds)))
    args = ["score", str(preds), "--benchmark", "jsonl", "--data", str(questions), "--no-cache"]
    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0, text.output
    assert "1 gold query failed" in text.output and "question 1" in text.output and "no such column" in text.output
    data = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert data["gold_errors"] == [{"question_id": "1", "db_id": data["gold_errors"][0]["db_id"], "error": data["gold_errors"][0]["error"]}]
    assert "no such column" in data["gold_errors"][0]["error"] and data["total"]["correct"] == 2


@needs_shared_data
def test_missing_databases_skipped_with_a_bird_format_file(tmp_path, caplog):
    tasks = load_tasks("spider", SPIDER, missing_db="keep")
    file = _bird(tmp_path / "p.json", [(str(i), f"{t.gold_sql}{BIRD_SEPARATOR}{t.db_id}") for i, t in enumerate(tasks)])
    args = ["score", str(file), "--benchmark", "spider", "--data", str(SPIDER), "--missing-db", "skip", "--json", "--no-cache"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["total"] == {"count": 972, "correct": 972, "accuracy": 1.0}
    assert data["skipped_missing_db"] == 62


def test_an_empty_predictions_file_is_an_error_not_a_score_of_zero(tmp_path):
    import subprocess
    import sys

    from conftest import REPO

    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    env = {**__import__("os").environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "sqlscout.cli.main", "score", str(empty), "--benchmark", "spider", "--data", str(SPIDER),
         "--missing-db", "skip", "--no-cache"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and "holds no prediction for any question" in done.stderr, done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("error:")] == done.stderr.strip().splitlines()[-1:]


@pytest.mark.parametrize(
    "line,message",
    [
        ("[" * 100_000, "nested too deeply"),  # once a RecursionError traceback
        ('{"question_id": ' + "9" * 5000 + ', "sql": "SELECT 1"}', "a number longer than"),  # once a ValueError
        (json.dumps({"question_id": "7" * 5000, "question": "q", "db_path": str(CHINOOK), "sql": "SELECT 1"}), "ids are at most 200"),
    ],
)
def test_a_pathological_line_is_a_one_line_error(tmp_path, line, message):
    predictions = tmp_path / "bad.jsonl"
    predictions.write_text(line + "\n")
    result = CliRunner().invoke(app, ["score", str(predictions), "--benchmark", "spider", "--data", str(SPIDER), "--missing-db", "skip"])
    assert result.exit_code == 2 and not isinstance(result.exception, (RecursionError, ValueError)), result.exception
    assert message in result.output and len(result.output.strip().splitlines()) == 1, result.output
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(line + "\n")
    with pytest.raises(DataError, match=message):
        load_tasks("jsonl", tasks)
