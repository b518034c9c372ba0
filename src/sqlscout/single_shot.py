"""The single-shot baseline: the full schema in the prompt, one answer, no tools.

It drives like an :class:`~sqlscout.episode.Episode` (``request`` / ``step`` /
``result``, the same transcript segments), so the runner, the evaluator and the
reports treat both modes alike; its result is an ordinary
:class:`~sqlscout.episode.EpisodeResult` with one final round.

>>> from sqlscout.sandbox import Database
>>> from sqlscout.task import Task
>>> task = Task("q", "How many genres?", "../shared/data/chinook/Chinook_Sqlite.sqlite")
>>> shot = SingleShotEpisode(task, Database(task.db_path))
>>> shot.step("```sql\\nSELECT COUNT(*) FROM Genre\\n```") is None
True
>>> shot.result().final_sql, shot.result().answer_source.value
('SELECT COUNT(*) FROM Genre', 'direct')
"""

from __future__ import annotations

import time
from dataclasses import replace

from sqlscout.chat import ChatFormat, ChatML
from sqlscout.episode import (
    AnswerSource,
    EpisodeConfig,
    EpisodeResult,
    RoundRecord,
    Segment,
    SegmentKind,
    StopReason,
    TurnRequest,
)
from sqlscout.parser import extract_final_sql
from sqlscout.prompts import PROMPT_VERSION, SchemaMode, single_shot_messages
from sqlscout.sandbox import Database
from sqlscout.task import Task
from sqlscout.tokens import ApproxTokenCounter, TokenCounter

__all__ = ["SingleShotEpisode"]


class SingleShotEpisode:
    """One question answered in one model turn from the full schema.

    The config's ``token_budget`` and ``max_turn_tokens`` bound the answer; its schema
    regime is always ``full`` (recorded as such in the result).
    """

    def __init__(
        self,
        task: Task,
        db: Database,
        config: EpisodeConfig | None = None,
        *,
        chat: ChatFormat | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        self.task = task
        self.db = db
        self.config = replace(config or EpisodeConfig(), schema=SchemaMode.FULL)
        self.chat = chat or ChatML()
        self.counter = counter or ApproxTokenCounter()
        self.messages = single_shot_messages(task.question, schema_sql=db.schema.create_statements(), evidence=task.evidence)
        prompt = self.chat.render(self.messages)
        self.segments: list[Segment] = [Segment(SegmentKind.PROMPT, prompt, self.counter.count(prompt))]
        self.tokens_used = self.segments[0].n_tokens
        self.rounds: list[RoundRecord] = []
        self._started = time.perf_counter()
        self._result: EpisodeResult | None = None
        if self.tokens_used >= self.config.token_budget:
            self._finish(None, AnswerSource.NONE, StopReason.BUDGET_EXHAUSTED)

    @property
    def done(self) -> bool:
        return self._result is not None

    @property
    def transcript(self) -> str:
        return "".join(s.text for s in self.segments)

    def request(self) -> TurnRequest:
        if self.done:
            raise RuntimeError("the episode is over; read result()")
        left = self.config.token_budget - self.tokens_used
        if self.config.max_turn_tokens is not None:
            left = min(left, self.config.max_turn_tokens)
        return TurnRequest(self.transcript, max(1, left), self.chat.stop, True)

    def step(
        self,
        completion: str,
        *,
        n_tokens: int | None = None,
        finish_reason: str | None = None,
        model_time_s: float = 0.0,
    ) -> None:
        """Take the answer; the episode always ends here (returns None)."""
        if self.done:
            raise RuntimeError("the episode is over; read result()")
        n = self.counter.count(completion) if n_tokens is None else n_tokens
        self.segments.append(Segment(SegmentKind.MODEL, completion, n))
        self.tokens_used += n
        text = completion
        for stop in self.chat.stop:
            if text.endswith(stop):
                text = text[: -len(stop)]
                break
        self.rounds.append(RoundRecord(1, True, text, n, finish_reason, model_time_s))
        sql = extract_final_sql(text)
        reason = StopReason.BUDGET_EXHAUSTED if finish_reason == "length" else StopReason.ANSWERED
        self._finish(sql, AnswerSource.DIRECT if sql else AnswerSource.NONE, reason)
        return None

    def abort(self, error: str) -> None:
        if self.done:
            raise RuntimeError("the episode is over; read result()")
        self._finish(None, AnswerSource.NONE, StopReason.BACKEND_ERROR)
        assert self._result is not None
        self._result.error = error

    def result(self) -> EpisodeResult:
        if self._result is None:
            raise RuntimeError("the episode is not over yet")
        return self._result

    def _finish(self, sql: str | None, source: AnswerSource, reason: StopReason) -> None:
        generated = sum(s.n_tokens for s in self.segments if s.kind is SegmentKind.MODEL)
        model_time = sum(r.model_time_s for r in self.rounds)
        self._result = EpisodeResult(
            task=self.task,
            config=self.config,
            prompt_version=PROMPT_VERSION,
            messages=self.messages,
            prompt_tokens=self.segments[0].n_tokens,
            rounds=self.rounds,
            final_sql=sql,
            answer_source=source,
            stop_reason=reason,
            last_good_sql=None,
            generated_tokens=generated,
            total_tokens=self.tokens_used,
            wall_time_s=time.perf_counter() - self._started,
            model_time_s=model_time,
            env_time_s=0.0,
        )
