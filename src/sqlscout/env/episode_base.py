"""What every episode shares: the token-counted transcript, the next turn's request with
its reply grammar, round records and the result (SPEC §4). :class:`~sqlscout.env.episode.Episode`
explores with tools; :class:`~sqlscout.env.single_shot.SingleShotEpisode` answers in one turn."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlscout.env.chat import ChatFormat, ChatML, Message
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.grammar import ReplyGrammar, TurnKind, think_mode_after
from sqlscout.env.prompts import LOOKING_TOOLS, PROMPT_VERSION, SchemaMode
from sqlscout.env.sandbox import Database
from sqlscout.env.task import Task
from sqlscout.env.tokens import ApproxTokenCounter, TokenCounter
from sqlscout.env.trace import AnswerSource, EpisodeResult, RoundRecord, Segment, SegmentKind, StopReason

__all__ = ["EpisodeBase", "TurnRequest"]

# With ``submit_tested``: how many of the latest queries that ran may be submitted.
_SUBMITTABLE = 8


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
        version: str = PROMPT_VERSION,
    ) -> None:
        self.task = task
        self.prompt_version = version
        self.db = db
        self.config = config
        self.chat = chat or ChatML()
        self.counter = counter or ApproxTokenCounter()
        self.messages = messages
        prompt = self.chat.render(self.messages)
        self.segments: list[Segment] = [Segment(SegmentKind.PROMPT, prompt, self.counter.count(prompt))]
        self.rounds: list[RoundRecord] = []
        self.starts = 1  # fresh_start: how many times the transcript began at the prompt
        self._start_round = 0  # the rounds before this index belong to an earlier start
        self.tokens_used = self.segments[0].n_tokens
        self.last_good_sql: str | None = None
        self._tested: list[str] = []  # queries that ran without error, as written (submit_tested)
        self._must_submit = False  # after a loop, the next reply may only submit a tested query
        self._look_first = False  # after a failed query was repeated, the next reply may only look
        self._focus = False  # focus_after_rows: the last reply's query returned rows; run or submit next
        self._schema_shown = config.schema is SchemaMode.FULL  # or, withheld, a fresh start shows what was read
        # draft_first: the first reply is the query in a ```sql block (the schema is shown)
        self._drafts = config.draft_first and config.schema is SchemaMode.FULL
        self._started = time.perf_counter()
        self._result: EpisodeResult | None = None

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
        if not self.config.constrain:
            return None
        think = think_mode_after(getattr(self.chat, "assistant_prefix", ""), getattr(self.chat, "template", None))
        if final or (self._drafts and not self._live_rounds):
            return ReplyGrammar(TurnKind.FINAL_SQL, think)
        tools, max_calls, tables = self._guide() if self.config.guided_start else (None, 4, None)
        if self._must_submit:
            tools, max_calls = ("submit_sql",), 1
        elif self._look_first:
            tools, max_calls = LOOKING_TOOLS, 2
        elif self._focus:
            tools = ("run_query", "submit_sql")
        elif self._surveyed():
            tools, max_calls = ("run_query",), 1
        return ReplyGrammar(
            TurnKind.CALLS,
            think,
            max_calls=max_calls,
            reasoning_lines=self.config.reasoning_lines,
            tools=tools,
            submittable=tuple(self._tested[-_SUBMITTABLE:]) if self.config.submit_tested else None,
            tables=tables,
        )

    def _guide(self) -> tuple[tuple[str, ...] | None, int, tuple[str, ...] | None]:
        """``guided_start``: the tools the next reply may call, how many calls, and the table
        names a table argument may take (once the model has seen them)."""
        full = self._schema_shown
        rounds = self._live_rounds
        listed = full or any(c.tool == "list_tables" and c.ok for r in rounds for c in r.calls)
        tables = tuple(self.db.schema.table_names) if listed and self.db.schema.table_names else None
        if not rounds:
            return (("run_query",) if full else ("list_tables",)), 1, tables
        if len(rounds) == 1 and not full and listed:
            return ("describe_table",), 4, tables
        return None, 4, tables

    @property
    def _live_rounds(self) -> list[RoundRecord]:
        """The rounds the transcript holds (those since the last fresh start)."""
        return self.rounds[self._start_round :]

    def _surveyed(self) -> bool:
        """``query_after_survey``: the schema is withheld, a table was described, and no
        query has been tried yet."""
        if not self.config.query_after_survey or self._schema_shown:
            return False
        calls = [c for r in self._live_rounds for c in r.calls]
        return any(c.tool == "describe_table" and c.ok for c in calls) and not any(c.tool == "run_query" for c in calls)

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
