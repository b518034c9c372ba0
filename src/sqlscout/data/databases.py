"""Where a benchmark's SQLite files are, and what to do when one is not there.

Spider, Spider-DK and BIRD keep each database at ``<root>/<db_id>/<db_id>.sqlite``; the
generic JSONL format also accepts ``<root>/<db_id>.sqlite`` (and ``.db``). A question
whose database is missing is an error by default; ``missing_db="skip"`` drops such
questions (and says how many, per database, in the log), ``"keep"`` keeps them with the
path where the file was expected (enough to parse a benchmark without its databases).
"""

from __future__ import annotations

from collections import Counter
from enum import Enum
from pathlib import Path
from typing import Sequence

from sqlscout.errors import ConfigError, DataError
from sqlscout.env.task import Task

__all__ = ["MissingDb", "check_databases", "find_database"]



class MissingDb(str, Enum):
    ERROR = "error"  # refuse to load: name the missing databases
    SKIP = "skip"  # drop their questions, logging how many
    KEEP = "keep"  # keep them, pointing at the expected path (parsing only)

    @classmethod
    def of(cls, value: MissingDb | str) -> MissingDb:
        try:
            return cls(value)
        except ValueError:
            raise ConfigError(f"missing_db must be one of {', '.join(m.value for m in cls)}, got {value!r}") from None


def find_database(db_id: str, roots: Sequence[Path], *, flat: bool = False) -> Path:
    """The file of ``db_id`` under the first root holding it, else where the first root
    would hold it (the caller decides whether a missing file matters)."""
    names = [Path(db_id) / f"{db_id}.sqlite"]
    if flat:
        names += [Path(db_id) / f"{db_id}.db", Path(f"{db_id}.sqlite"), Path(f"{db_id}.db")]
    for root in roots:
        for name in names:
            candidate = root / name
            if candidate.is_file():
                return candidate
    return roots[0] / names[0]


def check_databases(tasks: list[Task], missing: MissingDb | str, source: Path | str) -> list[Task]:
    """Apply the missing-database policy to tasks whose ``db_path`` is not a file."""
    missing = MissingDb.of(missing)
    if missing is MissingDb.KEEP:
        return tasks
    known: dict[Path | str, bool] = {}
    # A URL names a server's database: whether it is there shows when it is opened.
    absent = [t for t in tasks if not known.setdefault(t.db_path, isinstance(t.db_path, str) or t.db_path.is_file())]
    if not absent:
        return tasks
    per_db = Counter(t.db_id for t in absent)
    listing = ", ".join(f"{db} ({n} questions)" for db, n in sorted(per_db.items()))
    if missing is MissingDb.ERROR:
        first = absent[0]
        raise DataError(
            f"{source}: {len(absent)} questions use databases that are not there: {listing}; "
            f"e.g. question {first.question_id} expects {first.db_path}. "
            "Add the files, point the database root at them, or skip those questions (--missing-db skip)."
        )
    import logging  # only here: the warning is the module's one use of it

    logging.getLogger("sqlscout.data").warning("%s: skipped %d questions whose databases are missing: %s", source, len(absent), listing)
    return [t for t in tasks if known[t.db_path]]
