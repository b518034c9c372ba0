"""Spider-DK (Gan et al., 2021): Spider dev questions that need domain knowledge.

Its 535 questions run over Spider dev databases plus three it modified
(``new_concert_singer``, ``new_orchestra``, ``new_pets_1``), which sit in its own
``database/`` folder. As its README says, the two database folders are used together:
a database is looked up in Spider-DK's folder first, then in Spider's. The question's
knowledge type (0 = none, 1–5 = T1–T5, 34 = T3 and T4, ...) is kept in ``meta["dk_type"]``.

Example (paths relative to a checkout beside the shared data)::

    tasks = load_spider_dk("../shared/data/spider_dk", "../shared/data/spider/database", missing_db="skip")
    tasks[0].db_id
    # -> 'new_concert_singer'
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from sqlscout.data.databases import MissingDb, check_databases
from sqlscout.data.records import read_json_list
from sqlscout.data.spider import known_db_ids, spider_task
from sqlscout.errors import ConfigError
from sqlscout.env.task import Task

__all__ = ["load_spider_dk"]


def load_spider_dk(
    path: str | Path,
    spider_db_root: str | Path | None = None,
    *,
    missing_db: MissingDb | str = MissingDb.ERROR,
) -> list[Task]:
    """Load Spider-DK from its folder (or ``Spider-DK.json`` itself).

    ``spider_db_root`` is Spider's ``database/`` folder; by default ``spider/database``
    beside the Spider-DK folder, as the shared data lays them out.
    """
    path = Path(path).expanduser()
    file = path if path.suffix == ".json" else path / "Spider-DK.json"
    folder = file.parent
    if spider_db_root is None:
        spider_db_root = folder.parent / "spider" / "database"
    spider_db_root = Path(spider_db_root).expanduser()
    if not spider_db_root.is_dir() and MissingDb.of(missing_db) is not MissingDb.KEEP:
        raise ConfigError(
            f"{spider_db_root}: no such folder; Spider-DK needs Spider's database folder (pass it as the database root)"
        )
    roots = [folder / "database", spider_db_root]
    known = known_db_ids(folder / "tables.json")
    tasks = []
    for index, record in enumerate(read_json_list(file, "Spider-DK questions")):
        task = spider_task(record, index, roots, known, "spider-dk")
        dk_type = record.ident("type", required=False)
        tasks.append(replace(task, meta={**task.meta, "dk_type": dk_type}))
    return check_databases(tasks, missing_db, file)
