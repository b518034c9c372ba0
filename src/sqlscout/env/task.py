"""One question to answer: the unit every loader produces and every episode consumes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Task"]

_PASSWORD = re.compile(r"^([a-z0-9+.-]+://[^/@:?#]*):[^/@?#]*@", re.IGNORECASE)


def _without_password(text: str) -> str:
    """A database URL as it may be stored: without the password it may hold.

    >>> _without_password("postgresql://reader:s3cret@db.example/spider"), _without_password("a/b.sqlite")
    ('postgresql://reader@db.example/spider', 'a/b.sqlite')
    """
    return _PASSWORD.sub(r"\1@", text)


@dataclass(frozen=True)
class Task:
    """A natural-language question over one database: a SQLite file, or an engine's URL.

    Attributes:
        question_id: unique within its benchmark (kept as a string).
        question: what the user asks.
        db_path: the SQLite file the question is about, or the URL of a database
            (``postgresql://...``, ``duckdb:///...``: kept as text).
        gold_sql: the reference query, when known.
        evidence: BIRD-style external knowledge, shown to the model when present.
        difficulty: e.g. ``simple``/``moderate``/``hard``/``challenging``; None if unknown.
        db_id: the database's name in its benchmark (defaults to the file's stem).
        phrasing: SQaLe phrasing style, if any.
        benchmark: where the task comes from (``spider``, ``bird``, ``sqale``, ``jsonl``...).
        condition: schema-size condition the database was built for (``full`` by default).
        meta: anything else a loader wants to keep (not used for scoring).
    """

    question_id: str
    question: str
    db_path: Path | str
    gold_sql: str | None = None
    evidence: str | None = None
    difficulty: str | None = None
    db_id: str | None = None
    phrasing: str | None = None
    benchmark: str = "custom"
    condition: str = "full"
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "question_id", str(self.question_id))
        if isinstance(self.db_path, str) and "://" in self.db_path:
            if self.db_id is None:  # the database's name: the last part of the URL's path
                name = self.db_path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
                object.__setattr__(self, "db_id", Path(name).stem or name)
        elif not isinstance(self.db_path, Path):  # loaders pass one Path per database, shared
            object.__setattr__(self, "db_path", Path(self.db_path))
        if self.db_id is None:
            object.__setattr__(self, "db_id", Path(self.db_path).stem)

    def to_dict(self) -> dict[str, Any]:
        return {
            "question_id": self.question_id,
            "question": self.question,
            "db_path": _without_password(str(self.db_path)),
            "gold_sql": self.gold_sql,
            "evidence": self.evidence,
            "difficulty": self.difficulty,
            "db_id": self.db_id,
            "phrasing": self.phrasing,
            "benchmark": self.benchmark,
            "condition": self.condition,
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Task:
        return cls(**{**data, "meta": data.get("meta") or {}})
