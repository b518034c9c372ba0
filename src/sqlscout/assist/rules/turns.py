"""Rules on what answers a reply: a line after its results, or its query taken as the answer."""

from __future__ import annotations


from sqlscout.assist.rule import Rule, register
from sqlscout.assist.texts import REPAIR_RUN, REPAIR_SUBMIT_HINT, RERUN_TAKEN, RESTATED, SUBMIT_HINT
from sqlscout.env.hooks import EpisodeView, Decision, Finish
from sqlscout.env.parser import ParsedTurn
from sqlscout.env.prompts import SchemaMode
from sqlscout.env.trace import AnswerSource, StopReason


__all__ = ["RerunSubmits", "RestateQuestion", "SubmitHint"]


@register
class RerunSubmits(Rule):
    """A ``run_query`` that sends again, verbatim, a query that ran without error in an
    earlier reply ends the episode with that query as the answer (the model saw its result
    and chose it again, where small models go on to wander instead of submitting it)."""

    name = "rerun_submits"
    summary = "a query that ran, sent to run_query again verbatim, is taken as the answer"
    measured = "in no profile: issue 11 measured it and kept it off"

    def reply(self, episode: EpisodeView, text: str, parsed: ParsedTurn) -> ParsedTurn | Decision:
        if any(c.tool == "submit_sql" for c in parsed.calls):
            return parsed  # the reply's own submission counts
        for i, call in enumerate(parsed.calls):
            sql = call.args.get("sql")
            # A rerun is the model's query sent again, not a failed one's repair in its place.
            if call.tool == "run_query" and isinstance(sql, str) and sql in episode.tested and parsed.notes.get(i) != REPAIR_RUN:
                return Finish(sql, AnswerSource.RERUN, StopReason.RERUN, note=RERUN_TAKEN)
        return parsed


@register
class SubmitHint(Rule):
    """After a reply whose ``run_query`` ran (or whose repair ran), the results end with a
    line asking to submit that query if it answers the question, or fix it."""

    name = "submit_hint"
    summary = "after a query ran, a line asks to submit it if it answers the question"
    measured = "dropped from the draft profile with guided_start (see there)"

    def observation(self, episode: EpisodeView, results: str) -> str:
        loops = self.layer.rule("end_on_repeat")
        if loops is not None and getattr(loops, "must_submit", False):
            return results
        if any(c.tool == "run_query" and c.ok for c in episode.rounds[-1].calls):
            return f"{results}\n\n{SUBMIT_HINT}"
        repair = self.layer.rule("repair_hints")
        if repair is not None and getattr(repair, "repair_ran", False):
            return f"{results}\n\n{REPAIR_SUBMIT_HINT}"
        return results


@register
class RestateQuestion(Rule):
    """With the schema withheld, each results message ends with the question again: the
    tables' descriptions come between the question and the query, and the 1.5B's queries
    that ran answered another question (a count where a list is asked, ``>`` for ``<``)."""

    name = "restate_question"
    summary = "schema withheld: each results message ends with the question again"
    measured = "acts only with the schema withheld; chosen on seed-0 100 (the 1.5B withheld, issue 11)"

    def observation(self, episode: EpisodeView, results: str) -> str:
        if episode.config.schema is not SchemaMode.WITHHELD:
            return results
        return f"{results}\n\n{RESTATED}{episode.task.question.strip()}"
