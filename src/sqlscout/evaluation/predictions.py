"""Reading predictions to score: the official BIRD format, JSONL, or a run directory.

- **BIRD** (``.json``): ``{"0": "SQL\\t----- bird -----\\tdb_id", ...}``, keyed by the
  question's position in the benchmark file (what the official scripts pair by). The
  ``db_id`` after the separator must be the question's database.
- **JSONL** (``.jsonl``): one ``{"question_id": ..., "sql": ...}`` per line (``sql`` may be
  null: no answer); an optional ``db_id`` is checked like BIRD's.
- **A run directory** of ``sqlscout eval``: each line of ``episodes.jsonl`` is an episode
  record (its ``episode`` holds the task and ``final_sql``) or a bare episode result.
  The tasks come from the records themselves, one prediction per episode; a torn last
  line (a run killed mid-write) is ignored, as ``--resume`` would redo it.

Questions of the benchmark with no prediction are scored as unanswered, and counted.
Every problem — a key that is no question, a line that is not JSON, a prediction for the
wrong database, a question predicted twice — raises :class:`~sqlscout.errors.DataError`
naming the file and the entry.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from sqlscout.data.records import decode_json, read_json, read_jsonl
from sqlscout.errors import DataError
from sqlscout.evaluation.batch_score import Prediction
from sqlscout.env.task import Task
from sqlscout.scoring.verdict import has_statement

__all__ = ["BIRD_SEPARATOR", "PredictionSet", "read_predictions"]

BIRD_SEPARATOR = "\t----- bird -----\t"
EPISODES_FILE = "episodes.jsonl"


@dataclass
class PredictionSet:
    """What was read: one prediction per question (or per episode), and how many
    questions of the benchmark had none (those are in ``predictions`` with ``sql`` None).
    ``warnings`` say where the official scripts would read the file differently."""

    predictions: list[Prediction]
    unanswered: int
    source: str  # "bird", "jsonl" or "run"
    warnings: list[str] = field(default_factory=list)

    @property
    def tasks(self) -> list[Task]:
        return [p.task for p in self.predictions]


def read_predictions(
    path: str | os.PathLike[str], tasks: Sequence[Task] | None = None, *, only_predicted: bool = False
) -> PredictionSet:
    """Read ``path`` (format chosen by what it is) and pair it with ``tasks``.

    ``tasks`` (the benchmark's questions) is required for BIRD and JSONL files; a run
    directory carries its own. ``only_predicted`` leaves unanswered questions out.
    """
    path = Path(path).expanduser()
    if path.is_dir():
        return _read_run(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file or run directory; pass a predictions file or a run directory.")
    if tasks is None:
        raise DataError(f"{path}: a predictions file needs the benchmark it answers (--benchmark and --data).")
    warnings: list[str] = []
    if _looks_like_bird(path):
        answers = _read_bird(path, tasks, warnings)
        source = "bird"
    else:
        answers = _read_jsonl(path, tasks)
        source = "jsonl"
    predictions = [Prediction(t, answers.get(i)) for i, t in enumerate(tasks) if i in answers or not only_predicted]
    unanswered = sum(1 for i in range(len(tasks)) if answers.get(i) is None)
    if source == "bird" and len(answers) < len(tasks) and not only_predicted:
        warnings.append(
            f"{path}: {len(tasks) - len(answers)} of {len(tasks)} questions have no entry; sqlscout counts them "
            "wrong, BIRD's official scripts score only the entries the file has (--only-predicted does the same)."
        )
    return PredictionSet(predictions, 0 if only_predicted else unanswered, source, warnings)


def _looks_like_bird(path: Path) -> bool:
    if path.suffix == ".json":
        return True
    if path.suffix == ".jsonl":
        return False
    with open(path, encoding="utf-8", errors="replace") as handle:
        head = handle.read(4096).lstrip()
    # A JSON object spanning the file (BIRD) rather than one object per line (JSONL).
    first_line = head.split("\n", 1)[0]
    try:
        decode_json(first_line)
        return False
    except ValueError:
        return head.startswith("{")


def _read_bird(path: Path, tasks: Sequence[Task], warnings: list[str]) -> dict[int, str | None]:
    # As pairs: a plain JSON object keeps only the last of two equal keys.
    data = read_json(path, "BIRD predictions file", object_pairs_hook=_Pairs)
    if not isinstance(data, _Pairs):
        raise DataError(f"{path}: expected a JSON object {{\"0\": \"SQL\\t----- bird -----\\tdb_id\", ...}}.")
    position = {int(t.meta.get("index", i)): i for i, t in enumerate(tasks)}
    answers: dict[int, str | None] = {}
    keys: dict[int, str] = {}
    out_of_order: list[tuple[int, str]] = []
    for entry, (key, value) in enumerate(data):
        try:
            index = int(key)
        except ValueError:
            raise DataError(f"{path} key {key!r}: not a question index (the official format is keyed 0, 1, 2, ...).") from None
        if index in keys:
            raise DataError(
                f"{path}: keys {keys[index]!r} and {key!r} both name question {index}; keep one prediction per question."
            )
        keys[index] = key
        if index != entry:
            out_of_order.append((entry, key))
        if index not in position:
            raise DataError(f"{path} key {key!r}: no question at index {index} (the benchmark has {len(tasks)}).")
        if not isinstance(value, str):
            raise DataError(f"{path} key {key!r}: expected a string 'SQL\\t----- bird -----\\tdb_id', found {type(value).__name__}.")
        sql, sep, db_id = value.rpartition(BIRD_SEPARATOR)
        if not sep:
            raise DataError(f"{path} key {key!r}: missing the separator '\\t----- bird -----\\t' before the db_id.")
        task = tasks[position[index]]
        if db_id.strip() != task.db_id:
            raise DataError(
                f"{path} key {key!r}: predicted on database '{db_id.strip()}' but question {task.question_id} "
                f"is on '{task.db_id}'; do the predictions and the benchmark (--benchmark, --split) match?"
            )
        answers[position[index]] = sql if has_statement(sql) else None
    if out_of_order:
        entry, key = out_of_order[0]
        warnings.append(
            f"{path}: {len(out_of_order)} entries are not keyed by their place in the file (first: entry {entry} has "
            f"key {key!r}). sqlscout pairs each prediction with the question its key names; BIRD's official scripts "
            "ignore the keys and pair by file order, so they would score this file differently."
        )
    return answers


class _Pairs(list):
    """A JSON object as its (key, value) pairs in file order, repeated keys included."""


def _read_jsonl(path: Path, tasks: Sequence[Task]) -> dict[int, str | None]:
    position = {t.question_id: i for i, t in enumerate(tasks)}
    answers: dict[int, str | None] = {}
    seen: dict[int, str] = {}
    for record in read_jsonl(path, "JSONL predictions file"):
        question_id = record.ident("question_id")
        assert question_id is not None
        if question_id not in position:
            raise record.error(f"unknown question_id {question_id} (not in the benchmark's {len(tasks)} questions).")
        index = position[question_id]
        if index in seen:
            raise record.error(f"question_id {question_id} was already predicted on {seen[index]}.")
        seen[index] = record.where
        if "sql" not in record.data:
            raise record.error("missing field 'sql' (use null for no answer).")
        sql = record.text("sql", required=False, allow_empty=True)
        db_id = record.text("db_id", required=False)
        if db_id is not None and db_id != tasks[index].db_id:
            raise record.error(f"predicted on database '{db_id}' but question {question_id} is on '{tasks[index].db_id}'.")
        answers[index] = sql if has_statement(sql) else None
    return answers


def _read_run(folder: Path) -> PredictionSet:
    from sqlscout.evaluation.store import RunDir, read_whole_lines  # only runs need it (it loads the record types)

    file = RunDir(folder).stored_episodes()  # episodes.jsonl, or a run kept compressed
    if file is None:
        raise DataError(f"{folder}: not a run directory (no {EPISODES_FILE}); run `sqlscout eval --out {folder}` first.")

    predictions = []
    for number, line in read_whole_lines(file):  # a torn last line is skipped
        try:
            data = decode_json(line)
            episode = data.get("episode", data)
            task = Task.from_dict(episode["task"])
            sql = episode.get("final_sql")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise DataError(f"{file} line {number}: not an episode record ({type(exc).__name__}: {exc}).") from None
        if sql is not None and not isinstance(sql, str):
            raise DataError(f"{file} line {number}: final_sql must be a string or null.")
        predictions.append(Prediction(task, sql))
    if not predictions:
        raise DataError(f"{file}: holds no finished episodes yet.")
    return PredictionSet(predictions, 0, "run")
