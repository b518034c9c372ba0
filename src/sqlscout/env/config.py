"""The limits and schema regime of one episode (SPEC §4)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlscout.env.prompts import SchemaMode, prompt_version
from sqlscout.errors import ConfigError

__all__ = ["EpisodeConfig"]


@dataclass(frozen=True)
class EpisodeConfig:
    """Limits and regime of one episode.

    Attributes:
        max_rounds: tool rounds before the final turn is forced (>= 1).
        max_failed_queries: failed ``run_query`` calls in a row that force the final turn.
        token_budget: prompt plus everything appended stays within this many tokens.
        max_turn_tokens: cap on one model turn; None means whatever the budget has left.
        final_turn_reserve: tokens kept free for the final answer; when less would be
            left after a tool result, the final turn is forced instead.
        schema: ``withheld`` (default) or ``full`` (every CREATE TABLE in the prompt).
        constrain: decode every reply under the reply grammar (:mod:`sqlscout.env.grammar`):
            JSON calls of the eight tools while exploring, one fenced SQL query in the
            final turn. Off by default (the seed model's protocol, as trained).
        defer_mixed_submit: a reply that calls ``submit_sql`` together with other calls
            runs the others and answers the submission with a one-line reason to
            resubmit after reading their results, instead of ending on an answer the
            model wrote before it saw a single result.
        worked_example: the system prompt carries one short worked episode.
        example_values: how many example values per column the schema text shows (0:
            none; only where the schema is shown: ``full`` and single-shot).
        end_on_repeat: an exploration reply whose calls were all made before (a model in a
            loop) runs nothing and forces the final turn (stop reason ``repeated_calls``).
        submit_hint: after a reply whose ``run_query`` ran, the results end with a line
            asking to submit that query if it answers the question, or fix it.
        guided_start: under ``constrain``, the first reply makes one call, ``list_tables``
            (schema withheld: read the real names before guessing any) or ``run_query``
            (schema full: test a first query before anything else); with the schema
            withheld the second reply describes tables; and once the table names were
            shown, a table argument can only name a real table.
        submit_tested: under ``constrain``, ``submit_sql`` may only submit a query that
            already ran without error in this episode, verbatim (the system prompt's rule:
            submit only after run_query showed the right result); the forced final turn
            is free.
        reasoning_lines: under ``constrain``, the most lines of plain text before the calls
            of an exploration reply (0: the calls come first).
        query_hints: after a ``run_query`` fails on an unknown column or a misused
            aggregate, the error ends with a hint read from the failing query's own
            ``FROM`` clause: which table each alias is, where the column really is, how
            to join it, and the repaired query when one substitution fixes it
            (:mod:`sqlscout.env.hints`; a repair that fails again is repaired once more),
            which, when it compiles, runs at once, its result after the hint; a
            query that ran and groups by a name a few rows share is shown the query grouped
            by the table's key; a query that ran with a ``LIMIT`` of the rows
            ``run_query`` shows anyway, which the question does not ask for, is told to
            drop it; with ``end_on_repeat``, a reply repeating only failed calls while
            nothing has run is sent once to look at the tables (the next reply may only
            call the looking tools) instead of ending the exploration; a table name that
            is a column says which tables have it.
        rerun_submits: a ``run_query`` that sends again, verbatim, a query that ran without
            error in an earlier reply (and was not held back for an unasked ``LIMIT``)
            ends the episode with that query as the answer (stop reason ``rerun``): the
            model saw its result and chose it again, where small models go on to wander
            instead of submitting it.
        focus_after_rows: under ``constrain``, after a reply whose ``run_query`` ran and
            returned rows (a tested query), the next reply may only run a query or submit
            one: the small models ran the right query, then listed and described tables
            for the rest of their rounds and answered with the last query they ran. A
            query that failed or returned no rows leaves every tool open.
        query_after_survey: under ``constrain``, with the schema withheld: once a
            ``describe_table`` has run and no query has been tried, the next reply makes one
            call, ``run_query``, as the guided start's first reply does with the schema
            shown. The 1.5B model, having described its tables, called ``join_path``,
            ``foreign_keys`` or a look at values in its third reply, and often wrote joins
            the question did not need.
        restate_question: with the schema withheld, each tool-result message ends with
            the question again, before the budget line: the tables' descriptions come
            between the question and the query, and the 1.5B model's queries that ran
            answered another question (a count where a list is asked, ``>`` for ``<``).
        fresh_start: with ``end_on_repeat``, an exploration about to end on a loop while no
            query has run without error (nothing it could submit) starts again, once, from
            the prompt alone, for the rounds left: the replies the model would copy are
            gone from what it reads, and its next reply is sampled afresh. Every round
            stays in the trace and counts against ``max_rounds``; the token budget holds
            for the transcript the model reads. With the schema withheld, it starts again
            at the first such loop, or when two rounds are left, nothing ran and a table
            was described, from a prompt showing the tables described, those that join
            them and those one foreign key away. Off in training (a rollout's tokens are
            one transcript).
        draft_first: with the schema shown, the first reply is the query itself in a
            ```sql block, as single-shot writes it (under ``constrain``, the final-turn
            grammar); it runs as a ``run_query`` call and the episode goes on with the
            tools: single-shot's first attempt, with execution feedback after it.
        turn_time_limit_s: seconds the tool calls of one model turn may take in all; a call
            still pending when they are used up is not run (nor is one after the failed-query
            limit is reached) and says so. ``submit_sql`` always runs. None: no limit.
    """

    max_rounds: int = 6
    max_failed_queries: int = 4
    token_budget: int = 24_576
    max_turn_tokens: int | None = None
    final_turn_reserve: int = 256
    schema: SchemaMode = SchemaMode.WITHHELD
    constrain: bool = False
    defer_mixed_submit: bool = False
    worked_example: bool = False
    example_values: int = 0
    end_on_repeat: bool = False
    submit_hint: bool = False
    guided_start: bool = False
    submit_tested: bool = False
    reasoning_lines: int = 3
    query_hints: bool = False
    draft_first: bool = False
    rerun_submits: bool = False
    focus_after_rows: bool = False
    query_after_survey: bool = False
    restate_question: bool = False
    fresh_start: bool = False
    turn_time_limit_s: float | None = 20.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema", SchemaMode(self.schema))
        if self.max_rounds < 1:
            raise ConfigError(f"max_rounds must be >= 1, got {self.max_rounds}")
        if self.max_failed_queries < 1:
            raise ConfigError(f"max_failed_queries must be >= 1, got {self.max_failed_queries}")
        if self.final_turn_reserve < 1:
            raise ConfigError(f"final_turn_reserve must be >= 1, got {self.final_turn_reserve}")
        if self.token_budget <= self.final_turn_reserve:
            raise ConfigError(
                f"token_budget ({self.token_budget}) must exceed final_turn_reserve ({self.final_turn_reserve})"
            )
        if not 0 <= self.example_values <= 10:
            raise ConfigError(f"example_values must be between 0 and 10, got {self.example_values}")
        if not 0 <= self.reasoning_lines <= 20:
            raise ConfigError(f"reasoning_lines must be between 0 and 20, got {self.reasoning_lines}")
        if self.turn_time_limit_s is not None and not self.turn_time_limit_s > 0:
            raise ConfigError(f"turn_time_limit_s must be > 0 or None, got {self.turn_time_limit_s}")
        if self.max_turn_tokens is not None and self.max_turn_tokens < 1:
            raise ConfigError(f"max_turn_tokens must be >= 1 or None, got {self.max_turn_tokens}")

    def prompt_version(self, *, single_shot: bool = False) -> str:
        """The prompt version an episode under this config records (and a run stores, so
        that a resume under other prompt text or hints is refused): the base version
        plus a suffix for each prompt option in use; single-shot uses only the example
        values."""
        if single_shot:
            return prompt_version(example_values=self.example_values)
        full = self.schema is SchemaMode.FULL
        return prompt_version(
            worked_example=self.worked_example,
            example_values=self.example_values if full else 0,
            end_on_repeat=self.end_on_repeat,
            submit_hint=self.submit_hint,
            query_hints=self.query_hints,
            draft_first=self.draft_first and full,
            restate_question=self.restate_question and not full,
            fresh_start=self.fresh_start and self.end_on_repeat,
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "schema": self.schema.value}
