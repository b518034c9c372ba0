"""What an episode records: why it stopped, where its answer came from, its transcript
segments, each round's calls, and the serialisable :class:`EpisodeResult` from which
every metric is computed without re-running anything."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from sqlscout.env.chat import Message
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.task import Task

__all__ = ["AnswerSource", "CallRecord", "EpisodeResult", "RoundRecord", "Segment", "SegmentKind", "StopReason"]


class StopReason(str, Enum):
    """Why exploration ended. The plain protocol ends on the first six; a layer of help
    (:mod:`sqlscout.env.hooks`) may end it for the next two."""

    SUBMITTED = "submitted"  # the model called submit_sql
    ANSWERED = "answered"  # the model replied with SQL and no tool call
    ROUND_LIMIT = "round_limit"  # all tool rounds used; final turn forced
    FAILED_QUERY_LIMIT = "failed_query_limit"  # too many failed run_query in a row; final turn forced
    BUDGET_EXHAUSTED = "budget_exhausted"  # the token budget ran out
    BACKEND_ERROR = "backend_error"  # the model backend failed; see EpisodeResult.error
    REPEATED_CALLS = "repeated_calls"  # a reply only repeated earlier calls; final turn forced
    RERUN = "rerun"  # a run_query ran again a query that had run: taken as the answer


class AnswerSource(str, Enum):
    """Where the final SQL came from."""

    SUBMIT_SQL = "submit_sql"
    DIRECT = "direct"  # SQL in a reply without tool calls
    FINAL_TURN = "final_turn"  # the answer to the forced final turn
    FALLBACK = "fallback"  # the last query that ran without error
    RERUN = "rerun"  # a query that had run, sent to run_query again
    DRAFT = "draft"  # a first query written as single-shot writes it, which ran
    NONE = "none"  # nothing to answer with


class SegmentKind(str, Enum):
    PROMPT = "prompt"  # the opening messages, rendered by the chat template
    MODEL = "model"  # text the model wrote (the only tokens a trainer trains on)
    ENV = "env"  # turn glue, tool results, budget lines, the forced final message


@dataclass
class Segment:
    kind: SegmentKind
    text: str
    n_tokens: int


@dataclass
class CallRecord:
    tool: str
    args: dict[str, Any]
    ok: bool
    output: str
    elapsed_s: float
    repeats: int = 1  # identical calls in the round (run once)


@dataclass
class RoundRecord:
    """One model turn and what the environment answered."""

    index: int
    final: bool
    model_text: str
    completion_tokens: int
    finish_reason: str | None = None
    model_time_s: float = 0.0
    calls: list[CallRecord] = field(default_factory=list)
    parse_errors: list[str] = field(default_factory=list)
    observation: str | None = None
    observation_tokens: int = 0
    env_time_s: float = 0.0
    # Where the model time went, as the backend reports it (0 when it does not): prompt
    # tokens evaluated for this turn vs read from its cache, and prefill vs decode seconds.
    prompt_evaluated: int = 0
    prompt_reused: int = 0
    prefill_s: float = 0.0
    decode_s: float = 0.0

    def set_model_time(self, prompt_evaluated: int, prompt_reused: int, prefill_s: float, decode_s: float) -> None:
        self.prompt_evaluated, self.prompt_reused = prompt_evaluated, prompt_reused
        self.prefill_s, self.decode_s = prefill_s, decode_s


@dataclass
class EpisodeResult:
    """Everything an episode did, enough to compute any metric without re-running it."""

    task: Task
    config: EpisodeConfig
    prompt_version: str
    messages: list[Message]
    prompt_tokens: int
    rounds: list[RoundRecord]
    final_sql: str | None
    answer_source: AnswerSource
    stop_reason: StopReason
    last_good_sql: str | None
    generated_tokens: int
    total_tokens: int
    wall_time_s: float
    model_time_s: float
    env_time_s: float
    error: str | None = None  # what went wrong outside the model (stop_reason BACKEND_ERROR)
    # The rounds' prompt-cache and timing figures, summed (see RoundRecord; :meth:`tally`).
    prompt_evaluated: int = 0
    prompt_reused: int = 0
    prefill_s: float = 0.0
    decode_s: float = 0.0

    def tally(self) -> EpisodeResult:
        """Sum the rounds' prompt-cache and prefill/decode figures into the totals; returns self."""
        self.prompt_evaluated = sum(r.prompt_evaluated for r in self.rounds)
        self.prompt_reused = sum(r.prompt_reused for r in self.rounds)
        self.prefill_s = sum(r.prefill_s for r in self.rounds)
        self.decode_s = sum(r.decode_s for r in self.rounds)
        return self

    @property
    def tool_rounds(self) -> int:
        return sum(1 for r in self.rounds if not r.final)

    @property
    def tool_calls(self) -> int:
        return sum(len(r.calls) for r in self.rounds)

    @property
    def answer_tested(self) -> bool:
        """Whether the answer is a query that ``run_query`` ran without error in an earlier
        round than the one that answered (as written, up to whitespace and a trailing
        ``;``): the model had its result in front of it before answering with it. A
        ``run_query`` sent in the same reply as the ``submit_sql`` does not count, and
        neither does an answer the model never gave (the round limit's fallback, an
        assist rule's rerun): a policy that runs the same query every round until the
        limit answers for it has not learnt to read and submit."""
        if not self.final_sql or not self.rounds or self.answer_source in _NOT_GIVEN:
            return False
        earlier = (call for round_ in self.rounds[:-1] for call in round_.calls)
        return _ran_as(self.final_sql, earlier, ok=True)

    @property
    def answer_unread_error(self) -> bool:
        """Whether the model submitted a query in the same reply as a ``run_query`` of it
        (as written) that failed: the episode ended on the ``submit_sql`` before the error
        came back, so the model answered with a query it was about to learn does not run.
        The habit a policy falls into when every reply runs its query and submits it at
        once: it never reads a result, and a wrong column name costs the question."""
        if self.answer_source is not AnswerSource.SUBMIT_SQL or not self.final_sql or not self.rounds:
            return False
        return _ran_as(self.final_sql, self.rounds[-1].calls, ok=False)

    def answer_known_error(self, error: str | None = None) -> bool:
        """Whether the model submitted a query that an earlier round had already shown to
        fail: a ``run_query`` of it (as written) failed, or, given the answer's own
        execution ``error``, a ``run_query`` failed with that same error. It read the error
        and answered with the query anyway, or with one changed where the error was not
        (a new alias, other spacing or case). The way round :attr:`answer_unread_error`
        that a policy penalised for it finds first (issue 38): run in one reply, submit
        the same query in the next."""
        if self.answer_source is not AnswerSource.SUBMIT_SQL or not self.final_sql or not self.rounds:
            return False
        earlier = [call for round_ in self.rounds[:-1] for call in round_.calls if call.tool == "run_query" and not call.ok]
        return _ran_as(self.final_sql, earlier, ok=False) or bool(error) and any(error in str(call.output) for call in earlier)

    @property
    def reran_failed_query(self) -> bool:
        """Whether a ``run_query`` repeated (as written) a ``run_query`` that had failed in
        an earlier round: the model read the error and sent the same query again. Under
        greedy decoding the habit is a loop (the same context gives the same reply) that
        ends in the failed-query limit with no answer (issue 38: 36 of step 12's 56)."""
        failed: set[str] = set()
        for round_ in self.rounds:
            queries = [(call, sql) for call in round_.calls
                       if call.tool == "run_query" and isinstance(sql := call.args.get("sql"), str)]  # fmt: skip
            if any(_as_written(sql) in failed for _, sql in queries):
                return True
            failed |= {_as_written(sql) for call, sql in queries if not call.ok}
        return False

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["task"] = self.task.to_dict()
        data["config"] = self.config.to_dict()
        data["answer_source"] = self.answer_source.value
        data["stop_reason"] = self.stop_reason.value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeResult:
        rounds = [
            RoundRecord(**{**r, "calls": [CallRecord(**c) for c in r.get("calls", [])]}) for r in data["rounds"]
        ]
        return cls(
            **{
                **data,
                "task": Task.from_dict(data["task"]),
                "config": EpisodeConfig.from_dict(data["config"]),
                "rounds": rounds,
                "answer_source": AnswerSource(data["answer_source"]),
                "stop_reason": StopReason(data["stop_reason"]),
            }
        )


_NOT_GIVEN = frozenset({AnswerSource.FALLBACK, AnswerSource.RERUN, AnswerSource.NONE})  # answers the model did not write


def _as_written(sql: str) -> str:
    return " ".join(sql.split()).rstrip("; ")


def _ran_as(answer: str, calls: Iterable[CallRecord], *, ok: bool) -> bool:
    """Whether one of ``calls`` is a ``run_query`` of ``answer`` as written that ran
    (``ok``) or failed (not ``ok``)."""
    written = _as_written(answer)
    return any(
        call.tool == "run_query" and call.ok == ok and isinstance(sql := call.args.get("sql"), str)
        and _as_written(sql) == written
        for call in calls
    )
