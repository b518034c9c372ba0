"""One question, start to answer: the episode state machine of the plain protocol (SPEC §4).

Text in, text out. :meth:`Episode.request` says what the model must continue (the
whole transcript so far, and how many tokens it may write); :meth:`Episode.step` takes
the model's text and returns the next observation, or None once the episode is over.
Nothing here knows about models: the runner, the CLI and the tests all drive an
episode the same way. Nothing here knows any help either: a layer beside the protocol
acts through the :class:`~sqlscout.env.hooks.Hooks` the episode is given, at the points
that class names; without one, the episode is the protocol a trained model sees.

The transcript is kept as :class:`Segment` s — the opening prompt, each model turn,
each environment turn — with their token counts, so the budget is exact when the
counter is the model's tokenizer, and the trainer can mask exactly the model's tokens.

>>> from sqlscout.env.sandbox import Database
>>> from sqlscout.env.task import Task
>>> task = Task("q1", "How many albums are there?", "src/sqlscout/data/chinook/Chinook_Sqlite.sqlite")
>>> ep = Episode(task, Database(task.db_path))
>>> obs = ep.step('{"tool": "run_query", "args": {"sql": "SELECT COUNT(*) FROM Album"}}')
>>> print(obs)
Result 1 of run_query(sql='SELECT COUNT(*) FROM Album'):
COUNT(*)
347
<BLANKLINE>
[5 tool turns left before you must answer]
>>> ep.step('{"tool": "submit_sql", "args": {"sql": "SELECT COUNT(*) FROM Album"}}') is None
True
>>> ep.result().final_sql, ep.result().stop_reason.value
('SELECT COUNT(*) FROM Album', 'submitted')
"""

from __future__ import annotations

import time

from sqlscout.env.chat import ChatFormat, Message
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode_base import EpisodeBase, TurnRequest
from sqlscout.env.hooks import Answer, Decision, EndExploration, Finish, Hooks, Restart
from sqlscout.env.parser import ParsedTurn, ToolCall, extract_final_sql, parse_turn
from sqlscout.env.prompts import LIMIT_REASONS, SchemaMode, budget_line, engine_label, final_turn_message, initial_messages
from sqlscout.env.schema_text import schema_text
from sqlscout.env.sandbox import Database
from sqlscout.env.task import Task
from sqlscout.env.tokens import TokenCounter
from sqlscout.env.tools import ToolOutcome, call_tool
from sqlscout.env.trace import AnswerSource, CallRecord, RoundRecord, Segment, SegmentKind, StopReason
from sqlscout.errors import QueryError

__all__ = ["Episode", "EpisodeBase", "NO_CALL_MESSAGE", "TurnRequest", "describe_call"]

# The submit example is deliberately not valid JSON: small models echo this message
# back, and an echoed valid example would submit its placeholder as the answer.
NO_CALL_MESSAGE = (
    "Error: no tool call found. Call a tool with a JSON object such as "
    '{"tool": "list_tables", "args": {}}, or submit your answer with '
    '{"tool": "submit_sql", "args": {"sql": <your query as a JSON string>}}.'
)

# The final-turn message for each reason the exploration ended.
_LIMIT_TEXT = {
    StopReason.ROUND_LIMIT: "rounds",
    StopReason.FAILED_QUERY_LIMIT: "failures",
    StopReason.BUDGET_EXHAUSTED: "budget",
    StopReason.REPEATED_CALLS: "repeat",
}


class Episode(EpisodeBase):
    """The state machine of one question.

    Args:
        task: the question and its database file.
        db: the opened database (shared between episodes on the same file).
        config: limits and schema regime.
        chat: the model's turn format (ChatML by default).
        counter: token counter; use the model's tokenizer for an exact budget.
        hooks: a layer beside the protocol (:mod:`sqlscout.env.hooks`); None: the plain
            protocol.
        version: the version the result records (the prompt's, or a layer's).
    """

    def __init__(
        self,
        task: Task,
        db: Database,
        config: EpisodeConfig | None = None,
        *,
        chat: ChatFormat | None = None,
        counter: TokenCounter | None = None,
        hooks: Hooks | None = None,
        version: str | None = None,
    ) -> None:
        config = config or EpisodeConfig()
        schema_sql = schema_text(db) if config.schema is SchemaMode.FULL else None
        messages = initial_messages(
            task.question, evidence=task.evidence, schema_sql=schema_sql, max_rounds=config.max_rounds, engine=engine_label(db)
        )
        super().__init__(task, db, config, messages, chat=chat, counter=counter, hooks=hooks, version=version)
        self.failed_streak = 0
        self._final_reason: StopReason | None = None
        # Loop detection, only when the hooks act on loops: every call key since the
        # transcript began, and the replies that parsed to no call.
        self._watch_loops = type(self.hooks).loop is not Hooks.loop
        self._made: set[str] = set()
        self._unread: set[str] = set()
        self.turn_ends: float | None = None  # when the running turn's time for tool calls is up
        if self.tokens_used + self.config.final_turn_reserve > self.config.token_budget:
            self._finish(None, AnswerSource.NONE, StopReason.BUDGET_EXHAUSTED)

    @property
    def in_final_turn(self) -> bool:
        return self._final_reason is not None and not self.done

    def step(
        self,
        completion: str,
        *,
        n_tokens: int | None = None,
        finish_reason: str | None = None,
        model_time_s: float = 0.0,
    ) -> str | None:
        """Feed one model reply; return the observation, or None when the episode ended.

        ``completion`` is the model's text, including the end-of-turn marker when the
        model emitted it; ``n_tokens`` is its length in the model's own tokens (counted
        here when not given).
        """
        record = self._take(completion, n_tokens, finish_reason, model_time_s)
        if record.final:
            self._answer_final(record.model_text)
            return None
        env_start = time.perf_counter()
        outcome = self._explore(record.model_text, record)
        record.env_time_s = time.perf_counter() - env_start
        if outcome is None:
            return None
        if isinstance(outcome, Restart):
            return self._restart(record, outcome)
        results, ended = outcome
        return self._reply(record, results, completion, ended)

    # -- what a layer beside the protocol may use ------------------------------------------

    def run(self, call: ToolCall, turn_ends: float | None = None) -> ToolOutcome:
        """Run one tool call (within the turn's time when ``turn_ends`` is given); what the
        episode tracks of a query is left to :meth:`track`."""
        if turn_ends is None or call.tool == "submit_sql":
            return call_tool(self.db, call.tool, call.args)
        with self.db.time_limit(turn_ends - time.monotonic()):
            return call_tool(self.db, call.tool, call.args)

    def track(self, call: ToolCall, outcome: ToolOutcome) -> None:
        """Count a ``run_query`` outcome: a query that ran is tested (it may be the last
        good query the fallback answers with), a failure adds to the failed streak."""
        if call.tool != "run_query":
            return
        if outcome.ok:
            self.failed_streak = 0
            self.last_good_sql = outcome.sql
            sql = call.args.get("sql")
            if isinstance(sql, str):
                if sql in self.tested:
                    self.tested.remove(sql)
                self.tested.append(sql)
        else:
            self.failed_streak += 1

    def compile_error(self, sql: str) -> str | None:
        """None when ``sql`` compiles, else the engine's error, as ``run_query`` shows it."""
        try:
            self.db.compile(sql)
        except QueryError as error:
            return f"Error: {error}"
        return None

    def compiles(self, sql: str) -> bool:
        return self.compile_error(sql) is None

    def opening_messages(self, *, schema_sql: str | None = None, intro: str | None = None) -> list[Message]:
        """The protocol's opening messages for this episode's question, with ``schema_sql``
        as the schema (None: this episode's regime) and ``intro`` as the system prompt's
        paragraph on the schema (None: the protocol's)."""
        if schema_sql is None and self.config.schema is SchemaMode.FULL:
            schema_sql = schema_text(self.db)
        return initial_messages(
            self.task.question,
            evidence=self.task.evidence,
            schema_sql=schema_sql,
            max_rounds=self.config.max_rounds,
            intro=intro,
            engine=engine_label(self.db),
        )

    def fits(self, messages: list[Message]) -> bool:
        """Whether a prompt of ``messages`` leaves room for the final turn."""
        n = self.counter.count(self.chat.render(messages))
        return n + self.config.final_turn_reserve <= self.config.token_budget

    # -- internals ---------------------------------------------------------------

    def _explore(self, text: str, record: RoundRecord) -> tuple[str, StopReason | None] | Restart | None:
        """Run the calls of an exploration turn: the results text and, when the layer
        ended the exploration, why; a restart; or None if the episode ended."""
        parsed = parse_turn(text)
        record.parse_errors = list(parsed.errors)
        decided = self.hooks.reply(self, text, parsed)
        if not isinstance(decided, ParsedTurn):
            return self._decide(decided, record)
        parsed = decided
        if self._watch_loops and self._loops(text, parsed):
            looped = self.hooks.loop(self, parsed)
            if looped is not None:
                return self._decide(looped, record)
        if not parsed.calls and not parsed.errors:
            direct = extract_final_sql(text)
            # Bare-SQL extraction also matches prose that opens a line with "With" or
            # "Select"; only a statement that compiles is an answer, as in the final turn.
            if direct is not None and self.compiles(direct):
                self._finish(direct, AnswerSource.DIRECT, StopReason.ANSWERED)
                return None
            return NO_CALL_MESSAGE, None
        parts: list[str] = []
        seen: dict[str, CallRecord] = {}
        several = len(parsed.calls) > 1  # a lone call needs no identity (it costs a json.dumps)
        limit = self.config.turn_time_limit_s
        self.turn_ends = turn_ends = None if limit is None else time.monotonic() + limit
        for i, call in enumerate(parsed.calls):
            key = call.key() if several else ""
            if key in seen:
                seen[key].repeats += 1
                continue
            skipped = self._skip_reason(call, turn_ends)
            if skipped is not None:
                seen[key] = CallRecord(call.tool, call.args, False, skipped, 0.0)
                record.calls.append(seen[key])
                parts.append(f"Result {len(record.calls)} of {describe_call(call)}:\n{skipped}")
                continue
            ran = self.run(call, turn_ends)
            self.track(call, ran)
            outcome = self.hooks.result(self, call, ran)
            if isinstance(outcome, Finish):
                record.calls.append(CallRecord(call.tool, call.args, ran.ok, outcome.note or ran.text, ran.elapsed_s))
                self._finish(outcome.sql, outcome.source, outcome.reason)
                return None
            if isinstance(outcome, Restart):
                record.calls.append(CallRecord(call.tool, call.args, ran.ok, ran.text, ran.elapsed_s))
                return outcome
            seen[key] = CallRecord(call.tool, call.args, outcome.ok, outcome.text, outcome.elapsed_s)
            record.calls.append(seen[key])
            if outcome.ends_episode:
                self._finish(outcome.sql, AnswerSource.SUBMIT_SQL, StopReason.SUBMITTED)
                return None
            note = parsed.notes[i] + "\n" if i in parsed.notes else ""
            parts.append(f"{note}Result {len(record.calls)} of {describe_call(call)}:\n{outcome.text}")
        parts += [f"Error: {e}" for e in parsed.errors]
        return "\n\n".join(parts), None

    def _loops(self, text: str, parsed: ParsedTurn) -> bool:
        """Whether every call of ``parsed`` was made since the transcript began (a
        submission never is, nor a reply with no call: one cut off before its call closed
        is no loop), or ``text``, a reply that parsed to no call, was sent before word for
        word (a call cut off by the turn's token limit is no loop the first time)."""
        keys = {c.key() for c in parsed.calls}
        repeated = bool(parsed.calls) and all(c.tool != "submit_sql" for c in parsed.calls) and keys <= self._made
        self._made |= keys
        if repeated:
            return True
        if parsed.calls or not parsed.errors:
            return False
        again = text.strip() in self._unread
        self._unread.add(text.strip())
        return again

    def _decide(self, decision: Decision, record: RoundRecord) -> tuple[str, StopReason | None] | Restart | None:
        """Carry out a layer's decision on a reply, in place of its calls."""
        if isinstance(decision, Finish):
            if decision.note is not None:
                record.calls.append(CallRecord("run_query", {"sql": decision.sql}, True, decision.note, 0.0))
            self._finish(decision.sql, decision.source, decision.reason)
            return None
        if isinstance(decision, Restart):
            return decision
        if isinstance(decision, EndExploration):
            return decision.text, decision.reason
        assert isinstance(decision, Answer)
        return decision.text, None

    def _restart(self, record: RoundRecord, restart: Restart) -> str:
        """The transcript back to a prompt: the rounds stay in the trace (this one says
        why) and count against ``max_rounds``; the replies the model would copy are gone
        from what it reads."""
        if restart.messages is not None:
            self.messages = restart.messages
            prompt = self.chat.render(self.messages)
            self.segments[0] = Segment(SegmentKind.PROMPT, prompt, self.counter.count(prompt))
        self.starts += 1
        self._start_round = len(self.rounds)
        del self.segments[1:]
        self.tokens_used = self.segments[0].n_tokens
        self.failed_streak = 0
        self._made.clear()
        self._unread.clear()
        record.observation = restart.note
        self.hooks.restarted(self)
        return restart.note

    def _skip_reason(self, call: ToolCall, turn_ends: float | None) -> str | None:
        """Why ``call`` is not run (the turn's failures or time are used up), or None.

        An answer is always looked at: ``submit_sql`` only compiles its query.
        """
        if call.tool == "submit_sql":
            return None
        if self.failed_streak >= self.config.max_failed_queries:
            return f"Not run: {self.failed_streak} queries failed in a row; answer with what you know."
        if turn_ends is not None and time.monotonic() >= turn_ends:
            return f"Not run: this turn's {self.config.turn_time_limit_s:g} s for tool calls are used up."
        return None

    def _reply(self, record: RoundRecord, results: str, completion: str, ended: StopReason | None) -> str | None:
        """Append the environment turn (results + budget line or final message)."""
        if ended is not None:
            self._final_reason = ended
        elif self.failed_streak >= self.config.max_failed_queries:
            self._final_reason = StopReason.FAILED_QUERY_LIMIT
        elif self.tool_rounds >= self.config.max_rounds:
            self._final_reason = StopReason.ROUND_LIMIT
        if self._final_reason is not None:
            message = results + "\n\n" + self._final_message(self._final_reason)
        else:
            observed = self.hooks.observation(self, results)
            if isinstance(observed, Restart):
                return self._restart(record, observed)
            message = observed + "\n\n" + budget_line(self.rounds_left)
        glue = self._glue(completion, message)
        n = self.counter.count(glue)  # counted once: with a real tokenizer this is the costly part
        if self.tokens_used + n + self.config.final_turn_reserve > self.config.token_budget:
            # Not enough room to show the results and still answer: ask for the answer now.
            self._final_reason = StopReason.BUDGET_EXHAUSTED
            message = self._final_message(StopReason.BUDGET_EXHAUSTED)
            glue = self._glue(completion, message)
            n = self.counter.count(glue)
            if self.tokens_used + n + self.config.final_turn_reserve > self.config.token_budget:
                self._fallback(StopReason.BUDGET_EXHAUSTED)
                return None
        self.segments.append(Segment(SegmentKind.ENV, glue, n))
        self.tokens_used += n
        record.observation = message
        record.observation_tokens = n
        return message

    def _final_message(self, reason: StopReason) -> str:
        message = final_turn_message(LIMIT_REASONS[_LIMIT_TEXT.get(reason, "rounds")], self.last_good_sql)
        return self.hooks.final(self, message)

    def _glue(self, completion: str, message: str) -> str:
        ended = any(completion.endswith(s) for s in self.chat.stop)
        return ("" if ended else self.chat.end_of_turn) + self.chat.next_turn(message)

    def _answer_final(self, text: str) -> None:
        assert self._final_reason is not None
        sql = extract_final_sql(text)
        if sql is not None and self.compiles(sql):
            self._finish(sql, AnswerSource.FINAL_TURN, self._final_reason)
        else:
            self._fallback(self._final_reason)


_SHOWN_ARGUMENT = 1000  # characters of an argument a result's header repeats


def describe_call(call: ToolCall) -> str:
    """The call as a result's header names it. Arguments are repeated whole: the small
    models copy a query from the header, and a query cut there with "..." came back as
    their next query with the "..." inside a string literal. An argument too long to
    repeat is named by its length, which cannot be copied as a query."""
    inner = []
    for key, value in call.args.items():
        shown = repr(value)
        if len(shown) > _SHOWN_ARGUMENT:
            shown = f"<{len(value) if isinstance(value, str) else len(shown)} characters, as sent>"
        inner.append(f"{key}={shown}")
    return f"{call.tool}({', '.join(inner)})"

