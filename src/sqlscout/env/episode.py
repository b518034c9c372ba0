"""One question, start to answer: the episode state machine (SPEC §4).

Text in, text out. :meth:`Episode.request` says what the model must continue (the
whole transcript so far, and how many tokens it may write); :meth:`Episode.step` takes
the model's text and returns the next observation, or None once the episode is over.
Nothing here knows about models: the runner, the CLI and the tests all drive an
episode the same way.

The transcript is kept as :class:`Segment` s — the opening prompt, each model turn,
each environment turn — with their token counts, so the budget is exact when the
counter is the model's tokenizer, and the trainer can mask exactly the model's tokens.

>>> from sqlscout.env.sandbox import Database
>>> from sqlscout.env.task import Task
>>> task = Task("q1", "How many albums are there?", "../shared/data/chinook/Chinook_Sqlite.sqlite")
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
from dataclasses import replace

from sqlscout.env.chat import ChatFormat
from sqlscout.env.clause_repairs import key_grouping_note
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode_base import EpisodeBase, TurnRequest
from sqlscout.env.hints import chained_repair, limit_hint, without_limit
from sqlscout.env.parser import ParsedTurn, ToolCall, extract_final_sql, parse_turn
from sqlscout.env.prompts import (
    LIMIT_REASONS,
    REPEATED_CALLS,
    REPAIR_RAN,
    REPAIR_RUN,
    REPAIR_SUBMIT_HINT,
    RERUN_TAKEN,
    REPEATED_FAILURE,
    FRESH_LATE,
    FRESH_SCHEMA,
    FRESH_START,
    SUBMIT_AFTER_REPEAT,
    RESTATED,
    SUBMIT_HINT,
    SchemaMode,
    budget_line,
    final_turn_message,
    initial_messages,
)
from sqlscout.env.render import NO_ROWS
from sqlscout.env.schema import Table, quote_identifier
from sqlscout.env.schema_text import schema_text
from sqlscout.env.sandbox import Database
from sqlscout.env.task import Task
from sqlscout.env.tokens import TokenCounter
from sqlscout.env.tools import RUN_QUERY_ROWS, ToolOutcome, call_tool
from sqlscout.env.trace import AnswerSource, CallRecord, RoundRecord, Segment, SegmentKind, StopReason
from sqlscout.errors import QueryError

__all__ = ["DEFERRED_SUBMIT", "Episode", "EpisodeBase", "NO_CALL_MESSAGE", "TurnRequest"]

# The submit example is deliberately not valid JSON: small models echo this message
# back, and an echoed valid example would submit its placeholder as the answer.
NO_CALL_MESSAGE = (
    "Error: no tool call found. Call a tool with a JSON object such as "
    '{"tool": "list_tables", "args": {}}, or submit your answer with '
    '{"tool": "submit_sql", "args": {"sql": <your query as a JSON string>}}.'
)


# With ``defer_mixed_submit``: the answer to a submit_sql sent along with other calls.
DEFERRED_SUBMIT = ToolOutcome(
    "Not submitted: this reply also made other calls. Read their results first, then call "
    "submit_sql again in a reply of its own.",
    ok=False,
)


class Episode(EpisodeBase):
    """The state machine of one question.

    Args:
        task: the question and its database file.
        db: the opened database (shared between episodes on the same file).
        config: limits and schema regime.
        chat: the model's turn format (ChatML by default).
        counter: token counter; use the model's tokenizer for an exact budget.
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
        config = config or EpisodeConfig()
        full = config.schema is SchemaMode.FULL
        schema_sql = schema_text(db, config.example_values) if full else None
        messages = initial_messages(
            task.question,
            evidence=task.evidence,
            schema_sql=schema_sql,
            max_rounds=config.max_rounds,
            worked_example=config.worked_example,
            draft_first=config.draft_first,
        )
        super().__init__(task, db, config, messages, chat=chat, counter=counter, version=config.prompt_version())
        self.failed_streak = 0
        self._final_reason: StopReason | None = None
        self._made: set[str] = set()  # keys of the calls made so far (end_on_repeat)
        self._unread: set[str] = set()  # replies that parsed to no call, only errors (end_on_repeat)
        self._repeated = False  # the last reply only repeated earlier calls
        self._failed: set[str] = set()  # keys of the calls that failed (query_hints)
        self._repairs: dict[str, str] = {}  # failed query -> the repair its hint showed (query_hints)
        self._last_repair: str | None = None  # the latest of them, offered in the final turn
        self._counted: dict[tuple[str, str], tuple[int, int]] = {}  # (table, column): rows, distinct values
        self._redirected = False  # query_hints: a repeat of failed calls was sent to look, once
        self._afresh = False  # fresh_start: this reply's loop starts the exploration again
        self._repair_ran = False  # query_hints: this reply's hint showed a correction that ran
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
        observation = self._explore(record.model_text, record)
        record.env_time_s = time.perf_counter() - env_start
        if observation is None:
            return None
        if self._afresh:
            return self._start_afresh(record, observation)
        if (shown := self._late_start()) is not None:
            return self._start_afresh(record, f"{observation}\n\n{FRESH_LATE}", shown)
        return self._reply(record, observation, completion)

    # -- internals ---------------------------------------------------------------

    def _explore(self, text: str, record: RoundRecord) -> str | None:
        """Run the calls of an exploration turn; the results text, or None if it ended."""
        parsed = parse_turn(text)
        if self._drafts and record.index == 1 and not parsed.calls:
            draft = extract_final_sql(text)
            if draft is not None:  # draft_first: the query, written as single-shot would, is run
                parsed = ParsedTurn(calls=[ToolCall("run_query", {"sql": draft})])
        record.parse_errors = list(parsed.errors)
        if not parsed.calls and not parsed.errors:
            direct = extract_final_sql(text)
            # Bare-SQL extraction also matches prose that opens a line with "With" or
            # "Select"; only a statement that compiles is an answer, as in the final turn.
            if direct is not None and self._compiles(direct):
                self._finish(direct, AnswerSource.DIRECT, StopReason.ANSWERED)
                return None
            return NO_CALL_MESSAGE
        swapped = self._swap_repaired(parsed.calls) if self.config.query_hints else {}
        # A rerun is the model's query sent again, not a failed one's correction in its place.
        own = [c for i, c in enumerate(parsed.calls) if swapped.get(i) != REPAIR_RUN]
        rerun = self._rerun(own) if self.config.rerun_submits else None
        if rerun is not None:
            record.calls.append(CallRecord("run_query", {"sql": rerun}, True, RERUN_TAKEN, 0.0))
            self._finish(rerun, AnswerSource.RERUN, StopReason.RERUN)
            return None
        look_first, self._look_first = self._look_first, False
        if self.config.end_on_repeat and (self._only_repeats(parsed.calls) or self._unread_again(text, parsed)):
            # Schema withheld, the redirect never led the 0.5B to a query that ran (0 of 18
            # in 100 Spider questions) and used a round the fresh start then lacked.
            afresh = self._starts_afresh()
            withheld_afresh = afresh and self.config.schema is SchemaMode.WITHHELD
            if self._redirects(parsed.calls) and not look_first and not withheld_afresh:
                self._redirected = self._look_first = True
                return REPEATED_FAILURE
            elif afresh:
                self._afresh = True
                return FRESH_START
            else:
                self._repeated = True
                # Held to its tested queries, a looping model is asked to choose one of them.
                self._must_submit = bool(self.config.constrain and self.config.submit_tested and self._tested)
                return REPEATED_CALLS
        self._focus = self._repair_ran = False
        parts: list[str] = []
        seen: dict[str, CallRecord] = {}
        several = len(parsed.calls) > 1  # a lone call needs no identity (it costs a json.dumps)
        defer = self.config.defer_mixed_submit and any(c.tool != "submit_sql" for c in parsed.calls)
        limit = self.config.turn_time_limit_s
        turn_ends = None if limit is None else time.monotonic() + limit
        for i, call in enumerate(parsed.calls):
            key = call.key() if several else ""
            if key in seen:
                seen[key].repeats += 1
                continue
            skipped = self._skip_reason(call, turn_ends)
            if skipped is not None:
                seen[key] = CallRecord(call.tool, call.args, False, skipped, 0.0)
                record.calls.append(seen[key])
                parts.append(f"Result {len(record.calls)} of {_describe(call)}:\n{skipped}")
                continue
            outcome = DEFERRED_SUBMIT if defer and call.tool == "submit_sql" else self._call(call, turn_ends)
            fixed: tuple[ToolCall, ToolOutcome] | None = None
            if self.config.query_hints and call.tool == "run_query":
                outcome = self._with_hint(call, outcome)
                fixed = self._run_repair(call, outcome, turn_ends)
                if fixed is not None:
                    outcome = replace(outcome, text=f"{outcome.text}\n{REPAIR_RAN}\n{fixed[1].text}")
            seen[key] = CallRecord(call.tool, call.args, outcome.ok, outcome.text, outcome.elapsed_s)
            if not outcome.ok:
                self._failed.add(call.key())
            record.calls.append(seen[key])
            self._track_query(call, outcome)
            if fixed is not None:
                self._track_query(*fixed)
                self._repair_ran = True
            if outcome.ends_episode:
                self._finish(outcome.sql, AnswerSource.SUBMIT_SQL, StopReason.SUBMITTED)
                return None
            note = swapped[i] + "\n" if i in swapped else ""
            parts.append(f"{note}Result {len(record.calls)} of {_describe(call)}:\n{outcome.text}")
        parts += [f"Error: {e}" for e in parsed.errors]
        return "\n\n".join(parts)

    def _swap_repaired(self, calls: list[ToolCall]) -> dict[int, str]:
        """``query_hints``: each ``run_query`` that repeats a failed query whose hint showed a
        repair that compiles is replaced by that repair (the small models copy their failed
        reply word for word, corrected query or not), and each that ends with a LIMIT the
        question does not ask for runs without it (a LIMIT added to look at rows: the 0.5B,
        told to drop it, copied the query back until the loop ended, in 6 of 100 Spider
        episodes, and with it the only query that ran, nothing could be submitted); the
        positions of the replacements, with the note each gets."""
        swapped = {}
        for i, call in enumerate(calls):
            sql = call.args.get("sql")
            if call.tool != "run_query" or not isinstance(sql, str):
                continue
            if sql in self._repairs and call.key() in self._failed:
                calls[i] = ToolCall("run_query", {"sql": self._repairs[sql]})
                swapped[i] = REPAIR_RUN
            elif (note := limit_hint(sql, self.task.question, RUN_QUERY_ROWS)) is not None:
                calls[i] = ToolCall("run_query", {"sql": without_limit(sql)})
                swapped[i] = note
        return swapped

    def _rerun(self, calls: list[ToolCall]) -> str | None:
        """``rerun_submits``: the first query of ``calls`` that ran without error in an
        earlier reply and is sent to ``run_query`` again, verbatim; None when there is
        none, or when the reply submits (its own submission then counts)."""
        if any(c.tool == "submit_sql" for c in calls):
            return None
        for call in calls:
            sql = call.args.get("sql")
            if call.tool == "run_query" and isinstance(sql, str) and sql in self._tested:
                return sql
        return None

    def _with_hint(self, call: ToolCall, outcome: ToolOutcome) -> ToolOutcome:
        """``query_hints``: a failed query's error with a repair hint, a query that ran and
        groups by a name some rows share with a note; else as it was."""
        sql = call.args.get("sql")
        if not isinstance(sql, str):
            return outcome
        if outcome.ok:
            grouped = key_grouping_note(self.db.schema, sql, self._name_counts, self._compiles)
            hint = None if grouped is None else grouped.text
        else:
            found = chained_repair(self.db.schema, sql, outcome.text, self._compile_error, self.task.question)
            hint = None if found is None else found.text
            if found is not None and found.repaired is not None:
                self._repairs[sql] = self._last_repair = found.repaired
        return outcome if hint is None else replace(outcome, text=f"{outcome.text}\n{hint}")

    def _run_repair(
        self, call: ToolCall, outcome: ToolOutcome, turn_ends: float | None
    ) -> tuple[ToolCall, ToolOutcome] | None:
        """``query_hints``: the corrected query a failed query's hint just showed, run at once,
        when it runs without error: its result follows the hint, and it is a tested query,
        which can be submitted. The small models copied a shown repair into their next reply
        in 29 of 35 episodes (0.5B preset, 100 Spider dev questions), a round spent on
        running it; in 2 of the 35 it was still unrun when the exploration ended, with no
        other query that ran, so nothing could be submitted."""
        sql = call.args.get("sql")
        repair = self._repairs.get(sql) if isinstance(sql, str) and not outcome.ok else None
        if repair is None or repair in self._tested:
            return None
        fixed = ToolCall("run_query", {"sql": repair})
        ran = self._call(fixed, turn_ends)
        return (fixed, ran) if ran.ok else None

    def _redirects(self, calls: list[ToolCall]) -> bool:
        """``query_hints``: a reply repeating only calls that failed, with nothing tested to
        submit, is sent once to look at the tables instead of ending the exploration (the
        0.5B model copies its failed reply word for word, hint or not)."""
        return (
            self.config.query_hints
            and not self._redirected
            and not self._tested
            and all(c.key() in self._failed for c in calls)
        )

    @property
    def _tool_rounds(self) -> int:
        """Exploration rounds so far, over every start (what ``max_rounds`` counts)."""
        return sum(1 for r in self.rounds if not r.final)

    def _starts_afresh(self) -> bool:
        """``fresh_start``: an exploration about to end on a loop with nothing tested starts
        again from the prompt alone, once, while a round is left."""
        rounds_left = self.config.max_rounds - self._tool_rounds
        return self.config.fresh_start and not self._tested and self.starts == 1 and rounds_left > 0

    def _late_start(self) -> frozenset[str] | None:
        """``fresh_start``, schema withheld: an exploration with two rounds left, no query
        that ran and tables described starts again, once, from a prompt that shows them
        (:meth:`_show_read`, which puts that prompt in place), its first reply a query; the
        tables shown, or None when it does not start again. The 0.5B preset's unsubmitted
        episodes had no query that ran; in some the model never looped, so the fresh start
        at a loop never came, and it spent its last rounds on looks at other tables."""
        if self.config.schema is not SchemaMode.WITHHELD or not self._starts_afresh():
            return None
        if self.config.max_rounds - self._tool_rounds != 2:
            return None
        return self._show_read() or None

    def _start_afresh(self, record: RoundRecord, observation: str, shown: frozenset[str] | None = None) -> str:
        """The transcript back to its prompt, and every loop rule with it: the rounds stay in
        the trace (this one says so) and count against ``max_rounds``; the replies the
        model would copy are gone from what it reads. ``shown``: the tables a prompt already
        put in place shows; else the tables read are shown where they fit."""
        self._afresh = False
        if shown is None:
            shown = self._show_read()
        self.starts += 1
        self._start_round = len(self.rounds)
        del self.segments[1:]
        if shown:
            observation += f"\n{FRESH_SCHEMA} {', '.join(sorted(shown))}."
        self.tokens_used = self.segments[0].n_tokens
        self.failed_streak = 0
        self._made.clear()
        self._unread.clear()
        self._failed.clear()
        self._repairs.clear()
        self._last_repair = None
        self._redirected = False
        self._look_first = self._focus = False
        record.observation = observation
        return observation

    def _tables_read(self) -> frozenset[str]:
        """Schema withheld: the tables described without error since the last start, by
        their schema names, with the tables on the foreign-key paths between them and,
        while they are at most :data:`_SHOWN_TABLES` in all, the tables one foreign key
        away (the 0.5B often described a table next to the one its question needs:
        ``hiring`` for the shops' products, ``countrylanguage`` for the countries' areas)."""
        if self.config.schema is not SchemaMode.WITHHELD:
            return frozenset()
        schema = self.db.schema
        described = frozenset(
            schema.table(str(c.args.get("table_name"))).name
            for r in self._live_rounds
            for c in r.calls
            if c.tool == "describe_table" and c.ok
        )
        joined = schema.joining(described)
        near = joined | schema.neighbours(described)
        return near if len(near) <= _SHOWN_TABLES else joined

    def _show_read(self) -> frozenset[str]:
        """``fresh_start``, schema withheld: the prompt begun again shows the tables read
        (:meth:`_tables_read`) as its schema, as the schema-given prompt would, and names
        the other tables (the small models write far better queries from a prompt's schema
        than from their own exploration: 55 % against 40 % for the 0.5B on Spider); the
        tables shown, or none, and the prompt as it was, when nothing was read or it would
        not leave room for the final turn."""
        read = self._tables_read()
        if not read:
            return frozenset()
        unread = tuple(n for n in self.db.schema.table_names if n not in read)
        messages = initial_messages(
            self.task.question,
            evidence=self.task.evidence,
            schema_sql=schema_text(self.db, self.config.example_values, read),
            max_rounds=self.config.max_rounds,
            worked_example=self.config.worked_example,
            unread=unread,
        )
        prompt = self.chat.render(messages)
        n = self.counter.count(prompt)
        if n + self.config.final_turn_reserve > self.config.token_budget:
            return frozenset()
        self.segments[0] = Segment(SegmentKind.PROMPT, prompt, n)
        self._schema_shown = True
        return read

    def _only_repeats(self, calls: list[ToolCall]) -> bool:
        """Whether every one of ``calls`` was made in an earlier reply (a submission never
        is, nor a reply with no call: one cut off before its call closed is no loop)."""
        keys = {c.key() for c in calls}
        repeated = bool(calls) and all(c.tool != "submit_sql" for c in calls) and keys <= self._made
        self._made |= keys
        return repeated

    def _unread_again(self, text: str, parsed: ParsedTurn) -> bool:
        """Whether ``text``, a reply that parsed to no call, was sent before word for word.
        A call cut off by the turn's token limit is no loop the first time; the 0.5B model
        then sent the same cut-off call in every round left, 512 tokens each. A copy
        counts as a repeat of failed calls (sent once to look, then the end)."""
        if parsed.calls or not parsed.errors:
            return False
        again = text.strip() in self._unread
        self._unread.add(text.strip())
        return again

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

    def _call(self, call: ToolCall, turn_ends: float | None) -> ToolOutcome:
        if turn_ends is None or call.tool == "submit_sql":
            return call_tool(self.db, call.tool, call.args)
        with self.db.time_limit(turn_ends - time.monotonic()):
            return call_tool(self.db, call.tool, call.args)

    def _track_query(self, call: ToolCall, outcome: ToolOutcome) -> None:
        if call.tool != "run_query":
            return
        if outcome.ok:
            self.failed_streak = 0
            self.last_good_sql = outcome.sql
            sql = call.args.get("sql")
            if isinstance(sql, str):
                if sql in self._tested:
                    self._tested.remove(sql)
                self._tested.append(sql)
                self._focus = self.config.focus_after_rows and f"\n{NO_ROWS}" not in outcome.text
        else:
            self.failed_streak += 1

    def _restated(self) -> str:
        """``restate_question``, schema withheld: the question again, as the prompt gave it."""
        if not self.config.restate_question or self.config.schema is not SchemaMode.WITHHELD:
            return ""
        return f"{RESTATED}{self.task.question.strip()}\n"

    def _reply(self, record: RoundRecord, results: str, completion: str) -> str | None:
        """Append the environment turn (results + budget line or final message)."""
        rounds_done = self._tool_rounds
        if self._repeated and not self._must_submit:
            self._final_reason = StopReason.REPEATED_CALLS
            message = results + "\n\n" + self._final_message("repeat")
        elif self.failed_streak >= self.config.max_failed_queries:
            self._final_reason = StopReason.FAILED_QUERY_LIMIT
            message = results + "\n\n" + self._final_message("failures")
        elif rounds_done >= self.config.max_rounds:
            self._final_reason = StopReason.ROUND_LIMIT
            message = results + "\n\n" + self._final_message("rounds")
        else:
            if self._must_submit:
                hint = SUBMIT_AFTER_REPEAT + "\n"
            elif self.config.submit_hint and any(c.tool == "run_query" and c.ok for c in record.calls):
                hint = SUBMIT_HINT + "\n"
            else:
                hint = REPAIR_SUBMIT_HINT + "\n" if self.config.submit_hint and self._repair_ran else ""
            message = results + "\n\n" + hint + self._restated() + budget_line(self.config.max_rounds - rounds_done)
        glue = self._glue(completion, message)
        n = self.counter.count(glue)  # counted once: with a real tokenizer this is the costly part
        if self.tokens_used + n + self.config.final_turn_reserve > self.config.token_budget:
            # Not enough room to show the results and still answer: ask for the answer now.
            self._final_reason = StopReason.BUDGET_EXHAUSTED
            message = self._final_message("budget")
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

    def _final_message(self, reason: str) -> str:
        return final_turn_message(LIMIT_REASONS[reason], self.last_good_sql, self._last_repair)

    def _glue(self, completion: str, message: str) -> str:
        ended = any(completion.endswith(s) for s in self.chat.stop)
        return ("" if ended else self.chat.end_of_turn) + self.chat.next_turn(message)

    def _answer_final(self, text: str) -> None:
        assert self._final_reason is not None
        sql = extract_final_sql(text)
        if sql is not None and self._compiles(sql):
            self._finish(sql, AnswerSource.FINAL_TURN, self._final_reason)
        else:
            self._fallback(self._final_reason)

    def _name_counts(self, table: Table, column: str) -> tuple[int, int]:
        """The rows of ``table`` with a ``column`` value, and how many distinct values;
        (0, 0), which flags nothing, when counting them fails (a table too large for the
        sandbox's deadline)."""
        key = (table.name, column)
        if key not in self._counted:
            q, t = quote_identifier(column), quote_identifier(table.name)
            try:
                rows = self.db.execute(f"SELECT COUNT({q}), COUNT(DISTINCT {q}) FROM {t}", max_rows=1).rows
                self._counted[key] = (rows[0][0], rows[0][1])
            except QueryError:
                self._counted[key] = (0, 0)
        return self._counted[key]

    def _compiles(self, sql: str) -> bool:
        return self._compile_error(sql) is None

    def _compile_error(self, sql: str) -> str | None:
        """None when ``sql`` compiles, else SQLite's error, as ``run_query`` shows it."""
        try:
            self.db.compile(sql)
        except QueryError as error:
            return f"Error: {error}"
        return None


_SHOWN_TABLES = 12  # fresh_start: the most tables a new prompt shows with their neighbours
_SHOWN_ARGUMENT = 1000  # characters of an argument a result's header repeats


def _describe(call: ToolCall) -> str:
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
