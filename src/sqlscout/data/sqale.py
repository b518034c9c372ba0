"""SQaLe (Wolff, Gomm, Hulsebos, 2026) through its own PyPI package, ``SQaLe`` (``sqale``).

The dataset is two tables joined on ``schema_id``: queries (gold SQL, difficulty, eight
phrasings of each question, relevant tables) and schemas (DDL plus generated rows).
They come from the hub (``trl-lab/sqale2_queries`` / ``trl-lab/sqale2_schemas``) or
from a local folder holding ``queries/`` and ``schemas/`` (parquet files, named by
split as on the hub: ``data/test-00000-of-00001.parquet`` or ``test.parquet``).

Questions are read with ``sqale.load_questions``; the databases the selected questions
need are built with ``sqale.deserialize_sqale`` once, into
``<cache_dir>/sqale/<split>-<source key>/``, and reused by every later load.

A phrasing the package marks as unusable (a placeholder such as ``...``) is not a
question: the pair is left out and the count is logged. With one phrasing selected a
task's id is SQaLe's question id; with several it is ``<question id>:<phrasing>``.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any, Iterable, Sequence

from sqlscout.errors import ConfigError, DataError
from sqlscout.env.task import Task

__all__ = ["SQALE_LEVELS", "SQALE_PHRASINGS", "load_sqale", "sqale_sources"]


def _log() -> Any:
    import logging  # imported when used: loading the data package stays quick

    return logging.getLogger("sqlscout.data")


SQALE_LEVELS = ("simple", "moderate", "hard")
# The package's STYLES, repeated so that validating a flag does not import pyarrow.
SQALE_PHRASINGS = (
    "verbose",
    "evidence_supported",
    "structured",
    "requirements_list",
    "short_ambiguous",
    "short_high_level",
    "casual",
    "spelling_grammar_mistakes",
)
_QUERIES_DIRS = ("queries", "sqale2_queries")
_SCHEMAS_DIRS = ("schemas", "sqale2_schemas")


def phrasings_of(phrasing: str | Sequence[str] | None) -> tuple[str, ...]:
    """``None`` → verbose (the original wording); ``"all"`` → all eight; else those named."""
    if phrasing is None:
        return ("verbose",)
    names = SQALE_PHRASINGS if phrasing == "all" else ((phrasing,) if isinstance(phrasing, str) else tuple(phrasing))
    unknown = [p for p in names if p not in SQALE_PHRASINGS]
    if unknown or not names:
        raise ConfigError(f"unknown phrasing {', '.join(unknown) or '(none)'}; choose 'all' or among {', '.join(SQALE_PHRASINGS)}")
    return tuple(dict.fromkeys(names))


def sqale_sources(path: str | Path | None) -> tuple[str, str]:
    """(queries, schemas) as the ``sqale`` package takes them: hub ids or local paths."""
    if path is None:
        import sqale

        return sqale.QUERIES_REPO, sqale.SCHEMAS_REPO
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder; pass a folder holding SQaLe's queries/ and schemas/ parquet files.")
    queries = next((folder / d for d in _QUERIES_DIRS if (folder / d).exists()), None)
    schemas = next((folder / d for d in _SCHEMAS_DIRS if (folder / d).exists()), None)
    if queries is None or schemas is None:
        raise DataError(f"{folder}: expected subfolders queries/ and schemas/ with SQaLe's parquet files.")
    return str(queries), str(schemas)


def load_sqale(
    path: str | Path | None,
    *,
    cache_dir: str | Path,
    split: str = "test",
    phrasing: str | Sequence[str] | None = None,
    difficulty: str | Sequence[str] | None = None,
    limit: int | None = None,
) -> list[Task]:
    """Load SQaLe questions and materialise their databases (cached under ``cache_dir``)."""
    import sqale

    styles = phrasings_of(phrasing)
    queries, schemas = sqale_sources(path)
    levels = None if difficulty is None else ([difficulty] if isinstance(difficulty, str) else list(difficulty))
    for level in levels or ():
        if level not in SQALE_LEVELS:
            raise ConfigError(f"SQaLe has no difficulty {level!r}; choose among {', '.join(SQALE_LEVELS)}")
    try:
        rows = sqale.load_questions(queries, split=split, difficulty=levels)
    except (FileNotFoundError, ValueError, OSError) as exc:
        raise DataError(f"{queries}: cannot read SQaLe questions of split '{split}' ({exc}).") from None
    tasks: list[Task] = []
    unusable = 0
    for index, row in enumerate(rows):
        base = _check(row, index, queries)
        for style in styles:
            text = row["questions"].get(style)
            if text is None:
                unusable += 1
                continue
            qid = base if len(styles) == 1 else f"{base}:{style}"
            tasks.append(_task(row, qid, text, style))
        if limit is not None and len(tasks) >= limit:
            del tasks[limit:]
            break
    if unusable:
        _log().warning("%s: left out %d (question, phrasing) pairs the dataset marks unusable", queries, unusable)
    if not tasks:
        raise DataError(f"{queries}: no SQaLe questions of split '{split}' match the filters.")
    paths = materialise(schemas, split, {t.meta["schema_id"] for t in tasks}, Path(cache_dir))
    return [_with_db(t, paths[t.meta["schema_id"]]) for t in tasks]


def _check(row: dict, index: int, source: str) -> str:
    where = f"{source} question {row.get('question_id') or f'#{index}'}"
    for key in ("question_id", "schema_id", "sql"):
        if not row.get(key):
            raise DataError(f"{where}: missing field '{key}'.")
    if not isinstance(row.get("questions"), dict) or not row["questions"]:
        raise DataError(f"{where}: field 'questions' holds no phrasings.")
    return str(row["question_id"])


def _task(row: dict, qid: str, text: str, style: str) -> Task:
    return Task(
        question_id=qid,
        question=text,
        db_path=Path(),  # set once the database is materialised
        gold_sql=row["sql"],
        difficulty=row.get("difficulty") or None,
        db_id=row["schema_id"],
        phrasing=style,
        benchmark="sqale",
        meta={
            "sqale_question_id": str(row["question_id"]),
            "schema_id": row["schema_id"],
            "relevant_tables": list(row.get("relevant_tables") or []),
        },
    )


def _with_db(task: Task, db_path: Path) -> Task:
    from dataclasses import replace

    return replace(task, db_path=db_path)


def _safe_name(schema_id: str) -> str:
    return re.sub(r"[^\w\-]", "_", schema_id) + ".db"


def _source_key(schemas: str) -> str:
    """Identifies the schemas' content cheaply: hub id, or local files' names, sizes, mtimes."""
    local = Path(schemas)
    if not local.exists():
        return hashlib.sha256(schemas.encode()).hexdigest()[:16]
    files = [local] if local.is_file() else sorted(p for p in local.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for f in files:
        stat = f.stat()
        digest.update(f"{f.resolve()}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def materialise(schemas: str, split: str, schema_ids: Iterable[str], cache_dir: Path) -> dict[str, Path]:
    """The SQLite file of each schema id, building the ones not cached yet."""
    import sqale

    folder = cache_dir / "sqale" / f"{split}-{_source_key(schemas)}"
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {sid: folder / _safe_name(sid) for sid in schema_ids}
    todo = sorted(sid for sid, p in wanted.items() if not p.is_file())
    if todo:
        import shutil
        import tempfile

        _log().info("materialising %d SQaLe databases into %s", len(todo), folder)
        scratch = Path(tempfile.mkdtemp(prefix=".build-", dir=folder))
        try:
            try:
                results = sqale.deserialize_sqale(file_path=schemas, output_dir=str(scratch), split=split, schema_ids=todo)
            except (FileNotFoundError, ValueError, OSError) as exc:
                raise DataError(f"{schemas}: cannot read SQaLe schemas of split '{split}' ({exc}).") from None
            for result in results:
                sid = str(result["schema_id"])
                if result.get("error") or not result.get("db_path"):
                    raise DataError(f"{schemas}: database {sid} could not be built ({result.get('error')}).")
                if sid in wanted:
                    # Built aside, then moved: a reader never sees a half-written file.
                    os.replace(result["db_path"], wanted[sid])
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    missing = [sid for sid, p in wanted.items() if not p.is_file()]
    if missing:
        raise DataError(f"{schemas}: no database for schema {', '.join(sorted(missing)[:5])} in split '{split}'.")
    return wanted
