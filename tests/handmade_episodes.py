"""Hand-built episode traces and records for the evaluator's metric and report tests.

Each piece is written out explicitly, so a test's expected numbers can be worked out
by hand from what it builds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from sqlscout.env.config import EpisodeConfig
from sqlscout.env.trace import AnswerSource, CallRecord, EpisodeResult, RoundRecord, StopReason
from sqlscout.evaluation.record import EpisodeRecord, ResultPreview
from sqlscout.scoring import Outcome, Verdict
from sqlscout.env.task import Task

Call = tuple[str, dict[str, Any], bool, str]  # tool, args, ok, output


def task(
    qid: str = "q1",
    gold: str | None = "SELECT name FROM singer",
    *,
    difficulty: str | None = None,
    phrasing: str | None = None,
    condition: str = "full",
) -> Task:
    return Task(
        qid,
        f"question {qid}?",
        Path("/nowhere/concert_singer.sqlite"),
        gold_sql=gold,
        difficulty=difficulty,
        phrasing=phrasing,
        condition=condition,
    )


def result(
    the_task: Task,
    rounds: Sequence[Sequence[Call]] = (),
    *,
    final_turn: bool = False,
    final_sql: str | None = "SELECT 1",
    stop: StopReason = StopReason.SUBMITTED,
    prompt_tokens: int = 100,
    generated_tokens: int = 20,
    total_tokens: int | None = None,
    wall_time_s: float = 1.0,
) -> EpisodeResult:
    """An episode whose tool rounds made ``rounds`` calls, then optionally a forced final turn."""
    records = [
        RoundRecord(
            index=i + 1,
            final=False,
            model_text="...",
            completion_tokens=5,
            calls=[CallRecord(tool, args, ok, output, 0.01) for tool, args, ok, output in calls],
        )
        for i, calls in enumerate(rounds)
    ]
    if final_turn:
        records.append(RoundRecord(index=len(records) + 1, final=True, model_text=final_sql or "", completion_tokens=5))
    return EpisodeResult(
        task=the_task,
        config=EpisodeConfig(),
        prompt_version="test",
        messages=[{"role": "user", "content": the_task.question}],
        prompt_tokens=prompt_tokens,
        rounds=records,
        final_sql=final_sql,
        answer_source=AnswerSource.SUBMIT_SQL if stop is StopReason.SUBMITTED else AnswerSource.FINAL_TURN,
        stop_reason=stop,
        last_good_sql=None,
        generated_tokens=generated_tokens,
        total_tokens=total_tokens if total_tokens is not None else prompt_tokens + generated_tokens,
        wall_time_s=wall_time_s,
        model_time_s=0.5,
        env_time_s=0.1,
    )


def verdict(outcome: str, *, official: bool | None = None, strict: bool | None = None) -> Verdict:
    correct = outcome == "equivalent"
    return Verdict(
        Outcome(outcome),
        official=correct if official is None else official,
        strict=correct if strict is None else strict,
        spider=correct,
    )


def preview(fingerprint: str | None) -> ResultPreview | None:
    return None if fingerprint is None else ResultPreview(["x"], [[1]], 1, fingerprint)


def record(
    episode: EpisodeResult,
    outcome: str | None = "equivalent",
    *,
    sample: int = 0,
    index: int = 0,
    fingerprint: str | None = "same",
    session: int = 1,
    finished_s: float = 0.0,
    official: bool | None = None,
    strict: bool | None = None,
    mode: str = "agent",
) -> EpisodeRecord:
    ran = outcome in ("equivalent", "executable")
    return EpisodeRecord(
        key=episode.task.question_id,
        index=index,
        sample=sample,
        mode=mode,
        result=episode,
        verdict=None if outcome is None else verdict(outcome, official=official, strict=strict),
        pred=preview(fingerprint if ran else None),
        gold=ResultPreview(["name"], [["Joe"]], 1, "gold"),
        session=session,
        finished_s=finished_s,
    )
