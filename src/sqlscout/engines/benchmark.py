"""A benchmark's questions on another engine: each task's database becomes the URL its
copy lives at (``sqlscout copy --benchmark``), and its gold query is written in that
engine's dialect (:func:`~sqlscout.engines.copy.transpile_gold`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from sqlscout.engines import open_database
from sqlscout.engines.copy import transpile_gold
from sqlscout.env.task import Task
from sqlscout.errors import ConfigError

__all__ = ["tasks_on_engine"]


def tasks_on_engine(tasks: Sequence[Task], template: str, *, predictions: list[str | None] | None = None) -> list[Task]:
    """``tasks`` with each database at ``template`` (a URL holding ``{db_id}``) and each
    gold query transpiled for it; a gold that does not transpile is kept as written.

    ``predictions`` (one per task, written for SQLite as sqlscout's SQLite runs write
    them) are transpiled in place by the same rules, so that a question whose gold agrees
    across engines gets the same verdict on each; None stays None."""
    if "{db_id}" not in template:
        raise ConfigError(f"{template!r}: a database root given as a URL needs {{db_id}} where each database's name goes")
    moved: list[Task] = []
    names: dict[str, tuple[str, set[str], set[str]]] = {}
    for index, task in enumerate(tasks):
        db_id = str(task.db_id)
        if db_id not in names:
            with open_database(template.replace("{db_id}", db_id)) as db:
                text, numeric = set(), set()
                for table in db.schema.tables:
                    for column in table.columns:
                        kind = column.type.lower()
                        (text if kind in ("text", "varchar", "character varying") else numeric).add(column.name.lower())
                known = {t.name.lower() for t in db.schema.tables} | text | numeric
                names[db_id] = (db.engine, known, text - numeric)
        engine, known, text = names[db_id]
        gold = _transpiled(task.gold_sql, engine, known, text)
        if predictions is not None:
            predictions[index] = _transpiled(predictions[index], engine, known, text)
        moved.append(replace(task, db_path=template.replace("{db_id}", db_id), gold_sql=gold, meta={**task.meta, "sqlite_gold": task.gold_sql}))
    return moved


def _transpiled(sql: str | None, engine: str, known: set[str], text: set[str]) -> str | None:
    if not sql:
        return sql
    try:
        return transpile_gold(sql, engine, known, text)
    except Exception:  # noqa: BLE001 - sqlglot could not read it: the original stays
        return sql
