"""What every episode shares: the token-counted transcript, the next turn's request with
its reply grammar, round records and the result (SPEC §4). :class:`~sqlscout.env.episode.Episode`
explores with tools; :class:`~sqlscout.env.single_shot.SingleShotEpisode` answers in one turn."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlscout.env.chat import ChatFormat, ChatML, Message
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.grammar import ReplyGrammar
from sqlscout.env.hooks import Hooks
from sqlscout.env.prompts import PROMPT_VERSION, SchemaMode
from sqlscout.env.sandbox import Database
from sqlscout.env.task import Task
from sqlscout.env.tokens import ApproxTokenCounter, TokenCounter
from sqlscout.env.trace import AnswerSource, EpisodeResult, RoundRecord, Segment, SegmentKind, StopReason

__all__ = ["EpisodeBase", "TurnRequest"]


@dataclass(frozen=True)
class TurnRequest:
    """What the model must do next: continue ``prompt`` with at most ``max_tokens`` tokens."""

    prompt: str
    max_tokens: int
    stop: tuple[str, ...]
    final: bool  # the forced final turn: SQL only
    constraint: ReplyGrammar | None = None  # the grammar the reply must follow, when constrained


class EpisodeBase:
    """What every kind of episode shares: the token-counted transcript, turn requests,
    round records and the result. :class:`Episode` explores with tools;
    :class:`~sqlscout.env.single_shot.SingleShotEpisode` answers in one turn."""

    def __init__(
        self,
        task: Task,
        db: Database,
        config: EpisodeConfig,
        messages: list[Message],
        *,
        chat: ChatFormat | None = None,
        counter: TokenCounter | None = None,
        hooks: Hooks | None = None,
        version: str | None = None,
    ) -> None:
        self.task = task
        self.prompt_version = version or PROMPT_VERSION
        self.db = db
        self.config = config
        self.chat = chat or ChatML()
        self.counter = counter or ApproxTokenCounter()
        self.hooks = hooks or Hooks()
        self.rounds: list[RoundRecord] = []
        self.starts = 1  # how many times the transcript began at a prompt (a Restart adds one)
        self._start_round = 0  # the rounds before this index belong to an earlier start
        self.last_good_sql: str | None = None
        self.tested: list[str] = []  # queries that ran without error, as written, latest last
        # Whether the prompt shows CREATE TABLE statements (a layer may show them later).
        self.schema_shown = config.schema is SchemaMode.FULL
        self._started = time.perf_counter()
        self._result: EpisodeResult | None = None
        self.messages = self.hooks.prompt(self, messages)
        prompt = self.chat.render(self.messages)
        self.segments: list[Segment] = [Segment(SegmentKind.PROMPT, prompt, self.counter.count(prompt))]
        self.tokens_used = self.segments[0].n_tokens

    @property
    def done(self) -> bool:
        return self._result is not None

    @property
    def in_final_turn(self) -> bool:
        """Whether the pending turn must give the final SQL (no tools)."""
        return not self.done

    @property
    def transcript(self) -> str:
        """Everything the model has seen and written so far, as one string."""
        return "".join(s.text for s in self.segments)

    def request(self) -> TurnRequest:
        """The next model turn to generate. Only valid while not :attr:`done`."""
        if self.done:
            raise RuntimeError("the episode is over; read result()")
        left = self.config.token_budget - self.tokens_used
        if self.config.max_turn_tokens is not None:
            left = min(left, self.config.max_turn_tokens)
        final = self.in_final_turn
        return TurnRequest(self.transcript, max(1, left), self.chat.stop, final, self._constraint(final))

    def _constraint(self, final: bool) -> ReplyGrammar | None:
        return self.hooks.constraint(self, final)

    def opening_messages(self, *, schema_sql: str | None = None) -> list[Message]:
        """This kind of episode's opening messages for its question, with ``schema_sql``
        as the schema (a layer of help rebuilds the prompt with it)."""
        raise NotImplementedError

    @property
    def live_rounds(self) -> list[RoundRecord]:
        """The rounds the transcript holds (those since it last began at a prompt)."""
        return self.rounds[self._start_round :]

    @property
    def tool_rounds(self) -> int:
        """Exploration rounds so far, over every start (what ``max_rounds`` counts)."""
        return sum(1 for r in self.rounds if not r.final)

    @property
    def rounds_left(self) -> int:
        return self.config.max_rounds - self.tool_rounds

    def result(self) -> EpisodeResult:
        if self._result is None:
            raise RuntimeError("the episode is not over yet")
        return self._result

    def abort(self, error: str) -> None:
        """End the episode because the backend failed (not the model's fault).

        The answer falls back to the last query that ran without error, as when a
        limit is hit, and ``error`` is kept in the result.
        """
        if self.done:
            raise RuntimeError("the episode is over; read result()")
        self._fallback(StopReason.BACKEND_ERROR)
        assert self._result is not None
        self._result.error = error

    def _take(
        self, completion: str, n_tokens: int | None, finish_reason: str | None, model_time_s: float
    ) -> RoundRecord:
        """Append a model reply to the transcript and open its round record."""
        if self.done:
            raise RuntimeError("the episode is over; read result()")
        n = self.counter.count(completion) if n_tokens is None else n_tokens
        self.segments.append(Segment(SegmentKind.MODEL, completion, n))
        self.tokens_used += n
        record = RoundRecord(
            index=len(self.rounds) + 1,
            final=self.in_final_turn,
            model_text=self._strip_stop(completion),
            completion_tokens=n,
            finish_reason=finish_reason,
            model_time_s=model_time_s,
        )
        self.rounds.append(record)
        return record

    def _strip_stop(self, completion: str) -> str:
        for stop in self.chat.stop:
            if completion.endswith(stop):
                return completion[: -len(stop)]
        return completion

    def _fallback(self, reason: StopReason) -> None:
        if self.last_good_sql:
            self._finish(self.last_good_sql, AnswerSource.FALLBACK, reason)
        else:
            self._finish(None, AnswerSource.NONE, reason)

    def _finish(self, sql: str | None, source: AnswerSource, reason: StopReason) -> None:
        generated = sum(r.completion_tokens for r in self.rounds)  # every start's replies
        self._result = EpisodeResult(
            task=self.task,
            config=self.config,
            prompt_version=self.prompt_version,
            messages=self.messages,
            prompt_tokens=self.segments[0].n_tokens,
            rounds=self.rounds,
            final_sql=sql,
            answer_source=source,
            stop_reason=reason,
            last_good_sql=self.last_good_sql,
            generated_tokens=generated,
            total_tokens=self.tokens_used,
            wall_time_s=time.perf_counter() - self._started,
            model_time_s=sum(r.model_time_s for r in self.rounds),
            env_time_s=sum(r.env_time_s for r in self.rounds),
        )
