"""Schema-size conditions (SPEC §6): rebuild each task's database around its gold tables.

``gold`` keeps only the tables the gold SQL reads; ``distractors:K`` keeps those plus K
others; ``full`` keeps the database as it is. The reduced databases are new SQLite
files (see :mod:`sqlscout.data.subset`) under ``<cache_dir>/conditions/``, named by the
source file's content hash and the kept tables, so each is built once and shared by
every question (and every run) that needs the same tables of the same database.

The K distractors are drawn uniformly from the other tables, by a generator seeded with
(``seed``, the source's content hash, the gold tables): the same question always gets
the same distractors under the same seed, and questions with the same gold tables on
the same database share a file. When the database has fewer than K other tables, all
of them are kept; ``meta["distractors"]`` says how many were.

>>> Condition.parse("distractors:3")
Condition(kind='distractors', k=3)
>>> str(Condition.parse("gold"))
'gold'
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable

from sqlscout.data.subset import build_subset, table_names
from sqlscout.env.dbfile import file_sha256
from sqlscout.errors import ConfigError, DataError
from sqlscout.env.task import Task

__all__ = ["Condition", "apply_condition"]

_KINDS = ("full", "gold", "distractors")


@dataclass(frozen=True)
class Condition:
    """A schema-size condition: ``full``, ``gold`` or ``distractors`` with ``k`` others."""

    kind: str = "full"
    k: int = 0

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ConfigError(f"unknown condition {self.kind!r}; use gold, distractors:K or full")
        if self.kind == "distractors" and self.k < 1:
            raise ConfigError(f"distractors:K needs K >= 1, got {self.k}")
        if self.kind != "distractors" and self.k:
            raise ConfigError(f"condition {self.kind} takes no count")

    @classmethod
    def parse(cls, text: str | Condition) -> Condition:
        if isinstance(text, Condition):
            return text
        kind, sep, count = text.strip().partition(":")
        if kind == "distractors":
            if not sep or not count.strip().isdigit():
                raise ConfigError(f"condition {text!r}: write distractors:K with K a whole number, e.g. distractors:3")
            return cls("distractors", int(count))
        if sep:
            raise ConfigError(f"condition {text!r}: only distractors takes a count")
        return cls(kind)

    def __str__(self) -> str:
        return f"distractors:{self.k}" if self.kind == "distractors" else self.kind


def apply_condition(
    tasks: Iterable[Task], condition: str | Condition, cache_dir: str | Path, *, seed: int = 0
) -> list[Task]:
    """The tasks with ``condition`` set and ``db_path`` pointing at the database built
    for it (the source path is kept in ``meta["source_db_path"]``)."""
    condition = Condition.parse(condition)
    tasks = list(tasks)
    if condition.kind == "full":
        return [replace(t, condition="full") for t in tasks]
    folder = Path(cache_dir).expanduser() / "conditions"
    sources: dict[Path, tuple[str, list[str]]] = {}
    out = []
    for task in tasks:
        source = task.db_path
        if source not in sources:
            if not source.is_file():
                raise DataError(f"question {task.question_id}: database {source} not found; cannot build condition {condition}.")
            sources[source] = (file_sha256(source), table_names(source))
        digest, names = sources[source]
        gold = _gold_tables(task, names)
        keep = gold + _distractors(names, gold, condition.k, seed, digest)
        target = folder / f"{task.db_id or source.stem}-{digest[:12]}" / f"{_key(keep)}.sqlite"
        if not target.is_file():
            build_subset(source, keep, target)
        meta = {**task.meta, "source_db_path": str(source), "kept_tables": keep}
        if condition.kind == "distractors":
            meta["distractors"] = len(keep) - len(gold)
        out.append(replace(task, db_path=target, condition=str(condition), meta=meta))
    return out


def _gold_tables(task: Task, names: list[str]) -> list[str]:
    from sqlscout.scoring import tables_used

    used = tables_used(task.gold_sql) or _named_after_from(task.gold_sql or "")
    gold = [n for n in names if n.lower() in used]
    if not gold:
        raise DataError(
            f"question {task.question_id}: its gold SQL reads no table of {task.db_path.name}, "
            "so the gold and distractors conditions cannot be built for it."
        )
    return gold


_FROM_JOIN = re.compile(r"\b(?:from|join)\s+([\"`\[]?)([\w$]+)[\"`\]]?", re.I)


def _named_after_from(sql: str) -> frozenset[str]:
    """Names after FROM/JOIN, for a gold query sqlglot cannot parse (upstream typos such as
    Spider-DK's question 76): the question then stays in every condition, failing to score
    in each alike, instead of stopping the run."""
    return frozenset(m.group(2).lower() for m in _FROM_JOIN.finditer(sql))


def _distractors(names: list[str], gold: list[str], k: int, seed: int, digest: str) -> list[str]:
    if k == 0:
        return []
    others = [n for n in names if n not in gold]
    rng = random.Random(f"{seed}|{digest}|{','.join(sorted(g.lower() for g in gold))}")
    chosen = set(rng.sample(others, min(k, len(others))))
    return [n for n in others if n in chosen]  # in the database's own order


def _key(tables: list[str]) -> str:
    return hashlib.sha256("\0".join(sorted(t.lower() for t in tables)).encode()).hexdigest()[:16]
