"""The metrics of an evaluation run (SPEC §6), computed from stored episode records.

Everything is derived from ``episodes.jsonl`` alone — the traces and verdicts — so a
report can be regenerated at any time and two runs are compared on equal terms.
``docs/evaluation.md`` gives the precise definition of each number.

>>> compute_metrics([]).n_episodes
0
>>> [round(pass_at_k(4, c, 2), 3) for c in range(5)]
[0.0, 0.5, 0.833, 1.0, 1.0]
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from math import comb
from typing import Any, Callable, Iterable, Sequence

from sqlscout.env.trace import StopReason
from sqlscout.evaluation.record import EpisodeRecord
from sqlscout.evaluation.selection import Candidate, pick_group
from sqlscout.evaluation.trace import EpisodeFacts, episode_facts
from sqlscout.scoring import Outcome

__all__ = ["Accuracy", "RunMetrics", "compute_metrics", "latest_records", "majority_vote", "pass_at_k", "selected_answers"]

OUTCOMES = tuple(o.value for o in Outcome)


@dataclass(frozen=True)
class Accuracy:
    """Execution accuracy of a group of scored episodes."""

    n: int
    official: float | None
    strict: float | None


@dataclass
class RunMetrics:
    """Aggregates of a run. Means are over episodes unless the name says otherwise;
    a value is None where it is undefined (no episode qualifies)."""

    n_episodes: int = 0
    n_questions: int = 0
    samples: int = 0
    scored: int = 0
    accuracy: Accuracy = field(default_factory=lambda: Accuracy(0, None, None))
    by_difficulty: dict[str, Accuracy] = field(default_factory=dict)
    by_phrasing: dict[str, Accuracy] = field(default_factory=dict)
    by_condition: dict[str, Accuracy] = field(default_factory=dict)
    outcomes: dict[str, float] = field(default_factory=dict)
    stop_reasons: dict[str, float] = field(default_factory=dict)
    answer_sources: dict[str, float] = field(default_factory=dict)
    submit_rate: float | None = None
    executes_rate: float | None = None
    rounds_mean: float | None = None
    tool_rounds_mean: float | None = None
    tool_calls_mean: float | None = None
    calls_per_round: float | None = None
    distinct_calls_mean: float | None = None
    gold_table_coverage: float | None = None
    literal_recall: float | None = None
    prompt_tokens_mean: float | None = None
    generated_tokens_mean: float | None = None
    total_tokens_mean: float | None = None
    parameters: int | None = None
    compute_per_question: float | None = None
    episode_wall_s_mean: float | None = None
    run_wall_s: float | None = None
    wall_s_per_question: float | None = None
    backend_errors: int = 0
    pass_at: dict[int, float] = field(default_factory=dict)
    majority_official: float | None = None
    majority_strict: float | None = None
    rounds_hist: dict[int, int] = field(default_factory=dict)
    calls_hist: dict[int, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def latest_records(records: Iterable[EpisodeRecord]) -> list[EpisodeRecord]:
    """One record per (question, sample): the last one written (a resume re-runs
    episodes that ended in a backend error, and its record supersedes the old one)."""
    latest: dict[tuple[str, int], EpisodeRecord] = {}
    for record in records:
        latest[record.identity] = record
    return sorted(latest.values(), key=lambda r: (r.index, r.sample))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one question with ``n`` samples of which ``c`` are correct:
    the chance that at least one of ``k`` samples drawn without replacement is correct."""
    if k > n:
        raise ValueError(f"k ({k}) cannot exceed the number of samples ({n})")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def majority_vote(samples: Sequence[EpisodeRecord]) -> EpisodeRecord | None:
    """The sample execution-guided selection answers with (maj@N): the largest group of
    samples sharing a result (rows compared as sets, as the official metric does); ties
    go to a group whose queries ran, then to the shortest query, then to the earliest
    sample (:func:`~sqlscout.evaluation.selection.pick_group`, the rule ``--select-by
    vote`` answers with). Samples without an answer do not vote; None when none answered."""
    ordered, group = _vote(samples)
    return ordered[group[0]] if group else None


def _vote(samples: Sequence[EpisodeRecord]) -> tuple[list[EpisodeRecord], tuple[int, ...]]:
    """The samples in sample order, and the positions of the winning group among them."""
    ordered = sorted(samples, key=lambda r: r.sample)
    return ordered, pick_group([_candidate(r) for r in ordered])


def selected_answers(records: Sequence[EpisodeRecord]) -> list[dict[str, Any]]:
    """Each question's answer under ``--select-by vote``, in question order, as the JSONL
    predictions ``sqlscout score`` reads (``question_id``, ``sql``), with how many of its
    samples the chosen group holds (``votes``) out of how many (``samples``). The latest
    record of each (question, sample) counts."""
    by_question: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for record in latest_records(records):
        by_question[record.key].append(record)
    answers = []
    for samples in sorted(by_question.values(), key=lambda s: s[0].index):
        ordered, group = _vote(samples)
        winner = ordered[group[0]] if group else None
        answers.append(
            {
                "question_id": ordered[0].task.question_id,
                "db_id": ordered[0].task.db_id,
                "sql": winner.result.final_sql if winner else None,
                "votes": len(group),
                "samples": len(ordered),
            }
        )
    return answers


def _candidate(record: EpisodeRecord) -> Candidate | None:
    sql = record.result.final_sql
    if not sql or not sql.strip():
        return None
    if record.pred is not None:
        return Candidate(record.pred.fingerprint, True, sql)
    return Candidate(" ".join(sql.split()), False, sql)


def _mean(values: Iterable[float | int | None]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def _accuracy(records: Sequence[EpisodeRecord]) -> Accuracy:
    scored = [r.verdict for r in records if r.verdict is not None]
    if not scored:
        return Accuracy(0, None, None)
    return Accuracy(len(scored), _mean(v.official for v in scored), _mean(v.strict for v in scored))


def _grouped(records: Sequence[EpisodeRecord], key: Callable[[EpisodeRecord], str | None]) -> dict[str, Accuracy]:
    groups: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for record in records:
        value = key(record)
        if value is not None:
            groups[value].append(record)
    return {name: _accuracy(group) for name, group in sorted(groups.items())}


def _shares(values: Sequence[str], order: Sequence[str] = ()) -> dict[str, float]:
    if not values:
        return {}
    counts = Counter(values)
    names = [o for o in order if o in counts] + sorted(set(counts) - set(order))
    return {name: counts[name] / len(values) for name in names}


def _run_wall_s(records: Sequence[EpisodeRecord]) -> float | None:
    """Wall time of the whole run: each session lasted until its last episode finished."""
    last: dict[int, float] = {}
    for record in records:
        last[record.session] = max(last.get(record.session, 0.0), record.finished_s)
    return sum(last.values()) if last else None


def compute_metrics(records: Iterable[EpisodeRecord], *, parameters: int | None = None) -> RunMetrics:
    """All metrics of a run from its records (superseded duplicates are dropped first).

    ``parameters`` is the model's parameter count, for compute (2 × parameters × tokens).
    """
    episodes = latest_records(records)
    m = RunMetrics(parameters=parameters)
    if not episodes:
        return m
    facts: list[EpisodeFacts] = [episode_facts(r.result) for r in episodes]
    by_question: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for record in episodes:
        by_question[record.key].append(record)

    m.n_episodes = len(episodes)
    m.n_questions = len(by_question)
    m.samples = max(len(s) for s in by_question.values())
    m.accuracy = _accuracy(episodes)
    m.scored = m.accuracy.n
    m.by_difficulty = _grouped(episodes, lambda r: r.task.difficulty)
    m.by_phrasing = _grouped(episodes, lambda r: r.task.phrasing)
    m.by_condition = _grouped(episodes, lambda r: r.task.condition)
    verdicts = [r.verdict for r in episodes if r.verdict is not None]
    m.outcomes = _shares([v.outcome.value for v in verdicts], OUTCOMES)
    m.stop_reasons = _shares([r.result.stop_reason.value for r in episodes])
    m.answer_sources = _shares([r.result.answer_source.value for r in episodes])
    m.submit_rate = _mean(r.result.stop_reason is StopReason.SUBMITTED for r in episodes)
    m.executes_rate = _mean(v.outcome in (Outcome.EQUIVALENT, Outcome.EXECUTABLE) for v in verdicts)
    m.backend_errors = sum(r.result.stop_reason is StopReason.BACKEND_ERROR for r in episodes)

    m.rounds_mean = _mean(f.rounds for f in facts)
    m.tool_rounds_mean = _mean(f.tool_rounds for f in facts)
    m.tool_calls_mean = _mean(f.tool_calls for f in facts)
    tool_rounds = sum(f.tool_rounds for f in facts)
    m.calls_per_round = sum(f.tool_calls for f in facts) / tool_rounds if tool_rounds else None
    m.distinct_calls_mean = _mean(f.distinct_calls for f in facts)
    m.gold_table_coverage = _mean(f.covers_gold_tables for f in facts)
    m.literal_recall = _mean(f.literal_recall for f in facts)
    m.rounds_hist = dict(sorted(Counter(f.rounds for f in facts).items()))
    m.calls_hist = dict(sorted(Counter(f.tool_calls for f in facts).items()))

    m.prompt_tokens_mean = _mean(r.result.prompt_tokens for r in episodes)
    m.generated_tokens_mean = _mean(r.result.generated_tokens for r in episodes)
    m.total_tokens_mean = _mean(r.result.total_tokens for r in episodes)
    if parameters:
        m.compute_per_question = _mean(
            2.0 * parameters * sum(r.result.total_tokens for r in samples) for samples in by_question.values()
        )
    m.episode_wall_s_mean = _mean(r.result.wall_time_s for r in episodes)
    m.run_wall_s = _run_wall_s(episodes)
    m.wall_s_per_question = m.run_wall_s / m.n_questions if m.run_wall_s is not None else None

    if m.samples > 1:
        _sampling_metrics(m, by_question)
    return m


def _sampling_metrics(m: RunMetrics, by_question: dict[str, list[EpisodeRecord]]) -> None:
    scored = {k: [r for r in s if r.verdict is not None] for k, s in by_question.items()}
    scored = {k: s for k, s in scored.items() if s}
    ks = sorted({k for k in (1, 2, 4, 8, 16, 32, 64, 128) if k <= m.samples} | {m.samples})
    for k in ks:
        values = [pass_at_k(len(s), sum(bool(r.verdict and r.verdict.official) for r in s), k) for s in scored.values() if len(s) >= k]
        if values:
            m.pass_at[k] = sum(values) / len(values)
    winners = [majority_vote(s) for s in scored.values()]
    if winners:
        m.majority_official = _mean(bool(w and w.verdict and w.verdict.official) for w in winners)
        m.majority_strict = _mean(bool(w and w.verdict and w.verdict.strict) for w in winners)
