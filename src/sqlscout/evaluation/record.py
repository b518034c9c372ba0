"""One line of ``episodes.jsonl``: a finished episode, its verdict, and what both queries returned.

A record holds the episode's full trace (:class:`~sqlscout.env.episode.EpisodeResult`), so
every metric and every report is computed from the stored file alone, never by
running anything again. Results of the predicted and gold queries are kept as short
previews (for the trajectory viewer) plus a fingerprint of the whole predicted result
(for majority voting over samples).

>>> from sqlscout.scoring import ExecResult
>>> preview = ResultPreview.of(ExecResult(("n",), [(1,), (2,)]))
>>> preview.n_rows, preview.rows
(2, [[1], [2]])
>>> preview.fingerprint == ResultPreview.of(ExecResult(("m",), [(2,), (1,), (2,)])).fingerprint
True
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

from sqlscout.env.trace import EpisodeResult
from sqlscout.scoring import ExecResult, Verdict
from sqlscout.env.task import Task

__all__ = ["EpisodeRecord", "ResultPreview", "json_cell", "task_key"]

PREVIEW_ROWS = 10


def task_key(task: Task) -> str:
    """The identity of a question inside a run: its id, and its phrasing when it has one
    (SQaLe asks the same question in several phrasings).

    >>> task_key(Task("17", "q?", "x.sqlite")), task_key(Task("17", "q?", "x.sqlite", phrasing="casual"))
    ('17', '17/casual')
    """
    return f"{task.question_id}/{task.phrasing}" if task.phrasing else task.question_id


def json_cell(value: Any) -> Any:
    """A result cell as JSON can hold it: blobs become a short description, NaN/inf text."""
    if isinstance(value, bytes):
        return f"<blob {len(value)} bytes>"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


@dataclass(frozen=True)
class ResultPreview:
    """The head of a query result, its size, and a fingerprint of the whole result.

    The fingerprint hashes the result as a *set* of rows (official semantics), so two
    samples that return the same answer in another order vote together.
    """

    columns: list[str]
    rows: list[list[Any]]
    n_rows: int
    fingerprint: str

    @classmethod
    def of(cls, result: ExecResult, limit: int = PREVIEW_ROWS) -> ResultPreview | None:
        if result.rows is None:
            return None
        canonical = sorted({repr(tuple(row)) for row in result.rows})
        digest = hashlib.sha1("\n".join(canonical).encode("utf-8", "replace")).hexdigest()[:16]
        rows = [[json_cell(v) for v in row] for row in result.rows[:limit]]
        return cls(list(result.columns), rows, len(result.rows), digest)

    def to_dict(self) -> dict[str, Any]:
        return {"columns": self.columns, "rows": self.rows, "n_rows": self.n_rows, "fingerprint": self.fingerprint}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ResultPreview | None:
        return None if data is None else cls(**data)


@dataclass(frozen=True)
class EpisodeRecord:
    """A finished, scored episode.

    Attributes:
        key: :func:`task_key` of the question; with ``sample`` the record's identity.
        index: the question's position in the run's task list.
        sample: which of the question's samples this is (0-based).
        mode: ``agent`` or ``single-shot``.
        result: the episode's full trace.
        verdict: the answer scored against the gold query (None when there is no gold).
        pred: head of the predicted query's result (None when it did not run).
        gold: head of the gold query's result (None when it did not run).
        session: which invocation of the run wrote it (1, then 2 after a resume, ...).
        finished_s: seconds from that session's start to this episode's end.
    """

    key: str
    index: int
    sample: int
    mode: str
    result: EpisodeResult
    verdict: Verdict | None
    pred: ResultPreview | None
    gold: ResultPreview | None
    session: int = 1
    finished_s: float = 0.0

    @property
    def task(self) -> Task:
        return self.result.task

    @property
    def identity(self) -> tuple[str, int]:
        return (self.key, self.sample)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "index": self.index,
            "sample": self.sample,
            "mode": self.mode,
            "session": self.session,
            "finished_s": round(self.finished_s, 4),
            "verdict": self.verdict.to_dict() if self.verdict else None,
            "pred": self.pred.to_dict() if self.pred else None,
            "gold": self.gold.to_dict() if self.gold else None,
            "episode": self.result.to_dict(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, default=_json_default)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeRecord:
        return cls(
            key=data["key"],
            index=data["index"],
            sample=data["sample"],
            mode=data["mode"],
            result=EpisodeResult.from_dict(data["episode"]),
            verdict=Verdict.from_dict(data["verdict"]) if data.get("verdict") else None,
            pred=ResultPreview.from_dict(data.get("pred")),
            gold=ResultPreview.from_dict(data.get("gold")),
            session=data.get("session", 1),
            finished_s=data.get("finished_s", 0.0),
        )


def _json_default(value: Any) -> Any:
    # Tool arguments are whatever the model wrote; anything JSON cannot hold is kept as text.
    return json_cell(value) if isinstance(value, bytes) else str(value)
