"""One question to answer: the unit every loader produces and every episode consumes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Task"]


@dataclass(frozen=True)
class Task:
    """A natural-language question over one SQLite file.

    Attributes:
        question_id: unique within its benchmark (kept as a string).
        question: what the user asks.
        db_path: the SQLite file the question is about.
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
    db_path: Path
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
        if not isinstance(self.db_path, Path):  # loaders pass one Path per database, shared
            object.__setattr__(self, "db_path", Path(self.db_path))
        if self.db_id is None:
            object.__setattr__(self, "db_id", Path(self.db_path).stem)

    def to_dict(self) -> dict[str, Any]:
        return {
            "question_id": self.question_id,
            "question": self.question,
            "db_path": str(self.db_path),
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
        return cls(**{**data, "db_path": Path(data["db_path"]), "meta": data.get("meta") or {}})
