"""BIRD (Li et al., 2023): dev, mini-dev and train, with evidence on or off.

Layout: the split's JSON (``dev.json``, ``mini_dev_sqlite.json``, ``train.json``) beside
``dev_databases/<db>/<db>.sqlite`` (``train_databases`` for train). Fields: question_id,
db_id, question, evidence, SQL, difficulty (simple, moderate, challenging).
``meta["index"]`` is the record's position in the file: the official predictions format
(``{"0": "SQL\\t----- bird -----\\tdb_id", ...}``) is keyed by it.

Example (paths relative to a checkout beside the shared data)::

    tasks = load_bird("../shared/data/bird", missing_db="keep")
    tasks[0].question_id, tasks[0].difficulty
    # -> ('0', 'simple')
"""

from __future__ import annotations

from pathlib import Path

from sqlscout.data.databases import MissingDb, check_databases, find_database
from sqlscout.data.records import Record, read_json_list
from sqlscout.errors import ConfigError
from sqlscout.env.task import Task

__all__ = ["BIRD_LEVELS", "BIRD_SPLITS", "load_bird"]

BIRD_LEVELS = ("simple", "moderate", "challenging")
# split -> (questions file, database folder)
BIRD_SPLITS: dict[str, tuple[str, str]] = {
    "dev": ("dev.json", "dev_databases"),
    "mini-dev": ("mini_dev_sqlite.json", "dev_databases"),
    "train": ("train.json", "train_databases"),
}


def load_bird(
    path: str | Path,
    *,
    split: str = "dev",
    evidence: bool = True,
    db_root: str | Path | None = None,
    missing_db: MissingDb | str = MissingDb.ERROR,
) -> list[Task]:
    """Load a BIRD split from its folder (or the split's JSON file itself).

    ``evidence=False`` drops the evidence notes (BIRD's "without knowledge" setting).
    """
    if split not in BIRD_SPLITS:
        raise ConfigError(f"BIRD has no split {split!r}; choose one of {', '.join(BIRD_SPLITS)}")
    path = Path(path).expanduser()
    name, db_folder = BIRD_SPLITS[split]
    file = path if path.suffix == ".json" else path / name
    roots = [Path(db_root).expanduser() if db_root is not None else file.parent / db_folder]
    tasks: list[Task] = []
    seen: dict[str, Record] = {}
    for index, record in enumerate(read_json_list(file, f"BIRD {split} questions")):
        question_id = record.ident("question_id", required=False) or str(index)  # train has no ids
        if question_id in seen:
            question_id = _repeat_id(record, question_id, seen)
        seen[question_id] = record
        db_id = record.text("db_id")
        assert db_id is not None
        note = record.text("evidence", required=False, allow_empty=True)
        tasks.append(
            Task(
                question_id=question_id,
                question=record.text("question") or "",
                db_path=find_database(db_id, roots),
                gold_sql=record.text("SQL"),
                evidence=(note.strip() or None) if (evidence and note) else None,
                difficulty=record.choice("difficulty", BIRD_LEVELS, required=split != "train"),
                db_id=db_id,
                benchmark="bird",
                meta={"index": index, "split": split},
            )
        )
    return check_databases(tasks, missing_db, file)


def _repeat_id(record: Record, question_id: str, seen: dict[str, Record]) -> str:
    """Mini-dev repeats two records verbatim (question_id 137 and 138, at positions
    484/487 and 485/488). The official scripts score by position, so both copies count;
    the copy gets the id ``137#2`` to stay unique. A repeated id on a different
    question is an error."""
    first = seen[question_id]
    if record.data != first.data:
        raise record.error(f"question_id {question_id} repeats {first.where} with a different question.")
    copy = 2
    while f"{question_id}#{copy}" in seen:
        copy += 1
    return f"{question_id}#{copy}"
