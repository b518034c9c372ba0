"""The draft rule: single-shot first, the agent only where single-shot's query fails."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlscout.assist.rule import Rule, register
from sqlscout.assist.texts import DRAFT_FAILED, DRAFT_NO_SQL, DRAFT_NOTE
from sqlscout.env.chat import Message
from sqlscout.env.grammar import ReplyGrammar, TurnKind
from sqlscout.env.hooks import EpisodeView, Decision, Finish, Restart
from sqlscout.env.parser import ParsedTurn, ToolCall, extract_final_sql
from sqlscout.env.prompts import engine_label, single_shot_messages
from sqlscout.env.render import NO_ROWS
from sqlscout.env.schema_text import schema_text
from sqlscout.env.tools import ToolOutcome
from sqlscout.env.trace import AnswerSource, StopReason


__all__ = ["Draft"]

_ACCEPT = ("runs", "rows")


@dataclass(frozen=True)
class DraftParams:
    accept: str = field(
        default="runs",
        metadata={"help": "When the draft is the answer: runs (it ran without error) or rows (it also returned rows)."},
    )

    def __post_init__(self) -> None:
        if self.accept not in _ACCEPT:
            raise ValueError(f"accept must be one of {', '.join(_ACCEPT)}, got {self.accept!r}")


@register
class Draft(Rule):
    """With the schema shown, the first turn is single-shot's, exactly: its prompt, its
    grammar, its sampling seed, so its query is the one single-shot would answer with. The
    query runs; when it runs (``accept=runs``; with ``accept=rows``, and returns rows) it is
    the answer, and the episode ends. Otherwise the exploration begins from the agent's
    prompt, which also shows that query and what running it said (the error, with a repair
    hint when ``repair_hints`` is on), and the agent has the rounds left to fix it.

    Single-shot is then a floor by construction: every question it answers with a query
    that runs gets the same answer, and the agent works only where single-shot's answer
    cannot be right (or, with ``accept=rows``, is empty). The agent alone, judged on
    databases nobody tuned on, submitted the checking queries it ran as answers.
    """

    name = "draft"
    summary = "single-shot's query first; the agent only where it fails to run"
    measured = (
        "0.5B draft profile, never chosen on: Spider dev-report 200 54.0 % against 41.5 % single-shot "
        "(29 gained, 4 lost), Spider-DK 200 42.0 % against 31.5 % (23 gained, 2 lost); 1.5B: dev-report 100 "
        "67.0 % against 58.0 % (9 gained, 0 lost), Spider-DK 100 56.0 % against 54.0 % (5 gained, 3 lost)"
    )
    Params = DraftParams
    rewrites_transcript = True

    def __init__(self, params: DraftParams, layer: object) -> None:
        super().__init__(params, layer)  # type: ignore[arg-type]
        self.drafting = False
        self.pending: str | None = None  # the draft, sent to run_query
        self.agent: list[Message] = []  # the agent's prompt, shown if the draft does not answer
        self.shown = False  # the transcript began again at a prompt that shows the draft's failure

    def prompt(self, episode: EpisodeView, messages: list[Message]) -> list[Message]:
        if not episode.schema_shown:
            return messages  # single-shot's prompt shows the schema: no draft where it is withheld
        self.agent, self.drafting = messages, True
        values = self.layer.rule("example_values")
        shown = schema_text(episode.db, values.params.count if values is not None else 0)
        return single_shot_messages(
            episode.task.question, schema_sql=shown, evidence=episode.task.evidence, engine=engine_label(episode.db)
        )

    def constraint(self, episode: EpisodeView, final: bool, grammar: ReplyGrammar | None) -> ReplyGrammar | None:
        if self.drafting and grammar is not None:
            return ReplyGrammar(TurnKind.FINAL_SQL, grammar.think)
        return grammar

    def reply(self, episode: EpisodeView, text: str, parsed: ParsedTurn) -> ParsedTurn | Decision:
        if not self.drafting:
            return parsed
        self.drafting = False
        sql = extract_final_sql(text)
        if sql is None:
            self.shown = True
            return Restart(DRAFT_NOTE, self._agent_prompt(episode, DRAFT_NO_SQL))
        self.pending = sql
        return ParsedTurn(calls=[ToolCall("run_query", {"sql": sql})])

    def result(self, episode: EpisodeView, call: ToolCall, outcome: ToolOutcome) -> ToolOutcome | Finish | Restart:
        if self.pending is None or call.args.get("sql") != self.pending:
            return outcome
        sql, self.pending = self.pending, None
        empty = outcome.ok and f"\n{NO_ROWS}" in outcome.text
        if outcome.ok and not (empty and self.params.accept == "rows"):
            return Finish(sql, AnswerSource.DRAFT, StopReason.ANSWERED)
        said = outcome.text if not outcome.ok else "It ran and returned no rows."
        self.shown = True
        return Restart(DRAFT_NOTE, self._agent_prompt(episode, DRAFT_FAILED.format(sql=sql.strip(), outcome=said)))

    def restarted(self, episode: EpisodeView) -> None:
        self.shown = False

    def _agent_prompt(self, episode: EpisodeView, note: str) -> list[Message]:
        """The agent's prompt with ``note`` after the question (as it was, when that would
        leave no room for the final turn)."""
        system, user, *rest = self.agent
        messages = [system, {**user, "content": f"{user['content']}\n\n{note}"}, *rest]
        return messages if episode.fits(messages) else self.agent
