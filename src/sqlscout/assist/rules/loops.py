"""Rules for a model in a loop: begin again, or end the exploration."""

from __future__ import annotations

from dataclasses import replace

from sqlscout.assist.rule import Rule, register
from sqlscout.assist.texts import (
    FRESH_LATE,
    FRESH_SCHEMA,
    FRESH_START,
    READ_INTRO,
    REPEATED_CALLS,
    SUBMIT_AFTER_REPEAT,
)
from sqlscout.env.chat import Message
from sqlscout.env.grammar import ReplyGrammar, TurnKind
from sqlscout.env.hooks import EpisodeView, Answer, Decision, EndExploration, Restart
from sqlscout.env.parser import ParsedTurn
from sqlscout.env.prompts import SchemaMode
from sqlscout.env.schema_text import schema_text
from sqlscout.env.trace import StopReason


__all__ = ["EndOnRepeat", "FreshStart"]

_SHOWN_TABLES = 12  # the most tables a new prompt shows with their neighbours


@register
class FreshStart(Rule):
    """An exploration about to end on a loop while no query has run without error (nothing
    it could submit) begins again, once, from its prompt, for the rounds left: the replies
    the model would copy are gone from what it reads. With the schema withheld it begins
    again at the first such loop, or when two rounds are left, nothing ran and a table was
    described, from a prompt showing the tables described, those that join them and those
    one foreign key away."""

    name = "fresh_start"
    summary = "a loop with nothing that ran begins again from the prompt, once"
    measured = "chosen on seed-0 100 (issue 11: +2 to +4 questions withheld); dropped from the draft profile with guided_start (see there)"
    needs = ("end_on_repeat",)
    rewrites_transcript = True

    def __init__(self, params: object, layer: object) -> None:
        super().__init__(params, layer)  # type: ignore[arg-type]
        self.used = False

    def starts_afresh(self, episode: EpisodeView) -> bool:
        """Whether a loop now would begin again."""
        return not self.used and not episode.tested and episode.rounds_left > 0

    def loop(self, episode: EpisodeView, parsed: ParsedTurn) -> Decision | None:
        if not self.starts_afresh(episode):
            return None
        return self._restart(episode, FRESH_START)

    def observation(self, episode: EpisodeView, results: str) -> str | Restart:
        """Schema withheld: two rounds left, no query that ran and tables described: begin
        again from a prompt that shows them, its first reply a query."""
        if episode.config.schema is not SchemaMode.WITHHELD or not self.starts_afresh(episode):
            return results
        if episode.rounds_left != 2:
            return results
        read = self._tables_read(episode)
        messages = self._read_prompt(episode, read) if read else None
        if messages is None:
            return results
        self.used = True
        episode.schema_shown = True
        return Restart(f"{results}\n\n{FRESH_LATE}\n{FRESH_SCHEMA} {', '.join(sorted(read))}.", messages)

    def _restart(self, episode: EpisodeView, note: str) -> Restart:
        self.used = True
        read = self._tables_read(episode) if episode.config.schema is SchemaMode.WITHHELD else frozenset()
        messages = self._read_prompt(episode, read) if read else None
        if messages is None:
            return Restart(note)
        episode.schema_shown = True
        return Restart(f"{note}\n{FRESH_SCHEMA} {', '.join(sorted(read))}.", messages)

    def _tables_read(self, episode: EpisodeView) -> frozenset[str]:
        """The tables described without error since the last start, by their schema
        names, with the tables on the foreign-key paths between them and, while they are at
        most twelve in all, the tables one foreign key away."""
        schema = episode.db.schema
        described = frozenset(
            schema.table(str(c.args.get("table_name"))).name
            for r in episode.live_rounds
            for c in r.calls
            if c.tool == "describe_table" and c.ok
        )
        joined = schema.joining(described)
        near = joined | schema.neighbours(described)
        return near if len(near) <= _SHOWN_TABLES else joined

    def _read_prompt(self, episode: EpisodeView, read: frozenset[str]) -> list[Message] | None:
        """The prompt that shows the tables read as its schema and names the others (the
        small models write far better queries from a prompt's schema than from their own
        exploration); None when it would not leave room for the final turn."""
        unread = [n for n in episode.db.schema.table_names if n not in read]
        values = self.layer.rule("example_values")
        shown = schema_text(episode.db, values.params.count if values is not None else 0, read)
        if unread:
            shown += f"\n\n-- The other tables (describe_table shows them): {', '.join(unread)}"
        messages = episode.opening_messages(schema_sql=shown, intro=READ_INTRO)
        example = self.layer.rule("worked_example")
        if example is not None:
            messages = example.prompt(episode, messages)
        return messages if episode.fits(messages) else None


@register
class EndOnRepeat(Rule):
    """An exploration reply whose calls were all made before (a model in a loop) runs
    nothing and forces the final turn; with ``submit_tested`` and a query that ran, the
    model is asked instead to submit one of them."""

    name = "end_on_repeat"
    summary = "a reply that only repeats earlier calls ends the exploration"
    measured = "issue 11's option table (a loop ended instead of six copies); in every profile"

    def __init__(self, params: object, layer: object) -> None:
        super().__init__(params, layer)  # type: ignore[arg-type]
        self.must_submit = False

    def loop(self, episode: EpisodeView, parsed: ParsedTurn) -> Decision | None:
        # Held to its tested queries, a looping model is asked to choose one of them.
        self.must_submit = bool(self.layer.has("submit_tested") and episode.tested)
        if self.must_submit:
            return Answer(REPEATED_CALLS)
        return EndExploration(REPEATED_CALLS, StopReason.REPEATED_CALLS)

    def reply(self, episode: EpisodeView, text: str, parsed: ParsedTurn) -> ParsedTurn | Decision:
        self.must_submit = False
        return parsed

    def constraint(self, episode: EpisodeView, final: bool, grammar: ReplyGrammar | None) -> ReplyGrammar | None:
        if self.must_submit and grammar is not None and grammar.kind is TurnKind.CALLS and grammar.submittable:
            return replace(grammar, tools=("submit_sql",), max_calls=1)
        return grammar

    def observation(self, episode: EpisodeView, results: str) -> str:
        return f"{results}\n\n{SUBMIT_AFTER_REPEAT}" if self.must_submit else results

    def restarted(self, episode: EpisodeView) -> None:
        self.must_submit = False
