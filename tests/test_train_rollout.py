"""A step's experience on real Spider databases: episodes the model did not end (a
backend failure) are kept out of their group's scores and the update, and counted."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from sqlscout.backends.offline_tokenizers import qwen3_5_tokenizer
from sqlscout.backends.scripted import ScriptedBackend, ScriptTurn
from sqlscout.env.trace import AnswerSource, EpisodeResult, StopReason
from sqlscout.runner import Runner, RunnerConfig
from sqlscout.scoring import REWARD_PRESETS
from sqlscout.train.config import DataConfig
from sqlscout.train.questions import load_questions
from sqlscout.scoring.gold import GoldResults
from sqlscout.train.rollout import collect_groups
from sqlscout.train.telemetry import episode_summaries, rollout_metrics

from conftest import SPIDER


def test_episodes_ended_by_a_backend_failure_are_dropped_not_scored_and_counted():
    tasks = load_questions(DataConfig(benchmark="spider", path=str(SPIDER), split="dev", db_ids=("concert_singer",), limit=2))
    gold = {t.question: t.gold_sql for t in tasks}

    def reply(turn: ScriptTurn) -> str:  # half right, half wrong
        sql = gold[next(q for q in gold if q in turn.prompt)] if (turn.params.seed or 0) % 2 else "SELECT 1"
        return json.dumps({"tool": "submit_sql", "args": {"sql": sql}})

    def fails(turn: ScriptTurn) -> bool:  # one request in three fails (max_batch 1: that episode alone)
        return (turn.params.seed or 0) % 3 == 0

    backend = ScriptedBackend(reply, tokenizer=qwen3_5_tokenizer(), raise_on=fails)
    with Runner(backend, RunnerConfig(max_batch=1)) as runner:
        groups = collect_groups(runner, tasks, [0, 1], group_size=6, seed=5, reward=REWARD_PRESETS["sqale-dense"],
                                scale_by_std=False, gold=GoldResults())  # fmt: skip
    for g in groups:  # only what the model ended is scored (and so trained)
        assert all(r.result.stop_reason is StopReason.SUBMITTED for r in g.rollouts)
    dropped = [r for g in groups for r in g.dropped]
    assert dropped and all(r.result.stop_reason is StopReason.BACKEND_ERROR for r in dropped)
    for g in groups:
        assert len(g.rollouts) == len(g.scored) == len(g.rewards) == len(g.advantages) == 6 - len(g.dropped)
        if len(g.rewards) >= 2:  # the baseline is the mean of the scored episodes only
            assert sum(g.advantages) == 0.0 or abs(sum(g.advantages)) < 1e-9
    metrics = rollout_metrics(episode_summaries(groups))
    assert metrics["episodes"] == 12 and metrics["episodes/dropped"] == len(dropped)
    scored = 12 - len(dropped)
    assert metrics["outcome/equivalent"] * scored == sum(1 for g in groups for s in g.scored if s.verdict.outcome.value == "equivalent")


def test_every_stop_the_model_causes_is_trained_on_and_only_those() -> None:
    from sqlscout.train.rollout import MODEL_STOPS

    assert set(StopReason) - MODEL_STOPS == {StopReason.BACKEND_ERROR}


def test_an_answer_not_submitted_is_rewarded_at_the_configured_share():
    """With ``reward.unsubmitted`` below 1 the same right SQL earns less when the model did
    not give it through submit_sql (here: SQL in a plain reply), so GRPO's advantage
    favours the protocol; the answer is scored as before."""
    from dataclasses import replace

    tasks = load_questions(DataConfig(benchmark="spider", path=str(SPIDER), split="dev", db_ids=("concert_singer",), limit=1))
    gold = tasks[0].gold_sql

    def reply(turn: ScriptTurn) -> str:  # odd seeds submit the gold query, even ones just write it
        return json.dumps({"tool": "submit_sql", "args": {"sql": gold}}) if (turn.params.seed or 0) % 2 else gold

    backend = ScriptedBackend(reply, tokenizer=qwen3_5_tokenizer())
    with Runner(backend, RunnerConfig(max_batch=1)) as runner:
        [group] = collect_groups(runner, tasks, [0], group_size=5, seed=5,
                                 reward=replace(REWARD_PRESETS["sqale-dense"], unsubmitted=0.5),
                                 scale_by_std=False, gold=GoldResults())  # fmt: skip
    stops = [r.result.stop_reason for r in group.rollouts]
    assert set(stops) == {StopReason.SUBMITTED, StopReason.ANSWERED}
    assert all(s.verdict.outcome.value == "equivalent" for s in group.scored)
    assert [3.0 if s is StopReason.SUBMITTED else 1.5 for s in stops] == group.rewards
    assert [a > 0 for a in group.advantages] == [s is StopReason.SUBMITTED for s in stops]


BROKEN = "SELECT no_such_column FROM singer"


def _call(tool: str, sql: str) -> str:
    return json.dumps({"tool": tool, "args": {"sql": sql}})


def _concert_singer_group(reply_for, group_size: int, **reward_overrides):
    """One group of real episodes on concert_singer's first question, sample k's replies
    written by ``reply_for(k, turn, gold)``, rewarded by ``sqale-dense`` with the overrides."""
    from dataclasses import replace

    tasks = load_questions(DataConfig(benchmark="spider", path=str(SPIDER), split="dev", db_ids=("concert_singer",), limit=1))
    gold = tasks[0].gold_sql

    def reply(turn: ScriptTurn) -> str:
        return reply_for(turn.episode[1] if turn.episode else 0, turn.turn, gold)

    backend = ScriptedBackend(reply, tokenizer=qwen3_5_tokenizer())
    with Runner(backend, RunnerConfig(max_batch=1)) as runner:
        [group] = collect_groups(runner, tasks, [0], group_size=group_size, seed=5,
                                 reward=replace(REWARD_PRESETS["sqale-dense"], **reward_overrides),
                                 scale_by_std=False, gold=GoldResults())  # fmt: skip
    return group


def test_a_right_answer_run_before_it_was_submitted_earns_the_tested_bonus_and_only_it():
    """``reward.tested`` pays a right answer the model had run in an earlier round; the
    same right query run and submitted in one reply, a wrong query run first, a query
    that failed when run, and a right query run every round until the round limit
    answered with it (the fallback: the model never answered) earn what they did before
    (real episodes on concert_singer)."""

    def reply(kind: int, turn: int, gold: str) -> str:
        if kind == 0:  # run and submit in the same reply: the result was never read
            return _call("run_query", gold) + "\n" + _call("submit_sql", gold)
        if kind == 4:  # the greedy loop: the same run_query every round, never a submission
            return _call("run_query", gold)
        sql = {1: gold + " ;", 2: "SELECT 1", 3: BROKEN}[kind]  # 1: run, read, submit (a trailing ';' aside)
        return _call("run_query", sql) if turn == 0 else _call("submit_sql", sql.rstrip(" ;"))

    group = _concert_singer_group(reply, 5, tested=0.5)
    by_sample = {r.sample: (r.result, s.verdict.outcome.value, w) for r, s, w in zip(group.rollouts, group.scored, group.rewards)}
    assert [by_sample[k][0].answer_tested for k in range(5)] == [False, True, True, False, False]
    assert [by_sample[k][1] for k in range(5)] == ["equivalent", "equivalent", "executable", "parsable", "equivalent"]
    assert by_sample[0][2] == 3.0 and by_sample[1][2] == 3.5  # the bonus, on a right answer only
    assert by_sample[2][2] < 1.3 and by_sample[3][2] == 0.05  # a wrong answer run first gets nothing for it
    assert by_sample[4][0].answer_source is AnswerSource.FALLBACK and by_sample[4][2] == 3.0  # looping earns no bonus
    assert max(group.advantages) == group.advantages[[r.sample for r in group.rollouts].index(1)]
    metrics = rollout_metrics(episode_summaries([group]))
    assert metrics["episode/tested_rate"] == 0.4


def test_a_failing_query_submitted_beside_its_run_pays_the_unread_error_penalty():
    """``reward.unread_error`` falls on a reply that ran a query and submitted it at once
    when the run failed (the error arrived after the episode ended); the same broken
    query submitted after its error was read, the right query run and submitted in one
    reply, and a broken query submitted without any run earn what they did before (real
    episodes on concert_singer)."""

    def reply(kind: int, turn: int, gold: str) -> str:
        if kind == 0:  # run and submit in one reply, the run fails: the error is never read
            return _call("run_query", BROKEN + " ;") + "\n" + _call("submit_sql", BROKEN)
        if kind == 1:  # run, read the error, submit it anyway
            return _call("run_query", BROKEN) if turn == 0 else _call("submit_sql", BROKEN)
        if kind == 2:  # run and submit in one reply, the run works
            return _call("run_query", gold) + "\n" + _call("submit_sql", gold)
        return _call("submit_sql", BROKEN)  # 3: no run at all

    group = _concert_singer_group(reply, 4, unread_error=1.0)
    by_sample = {r.sample: (r.result, s.verdict.outcome.value, w) for r, s, w in zip(group.rollouts, group.scored, group.rewards)}
    assert [by_sample[k][0].answer_unread_error for k in range(4)] == [True, False, False, False]
    assert [by_sample[k][1] for k in range(4)] == ["parsable", "parsable", "equivalent", "parsable"]
    assert by_sample[0][2] == pytest.approx(-0.95) and by_sample[1][2] == by_sample[3][2] == 0.05
    assert by_sample[2][2] == 3.0
    assert min(group.advantages) == group.advantages[[r.sample for r in group.rollouts].index(0)]
    assert rollout_metrics(episode_summaries([group]))["episode/unread_error_rate"] == 0.25


def test_a_failing_query_submitted_after_its_error_was_read_pays_the_known_error_penalty():
    """Issue 38: penalised for submitting beside a failing run, the policy ran the query in
    one reply and submitted it unchanged in the next (9 of 50 held-out episodes at run 3's
    step 32 read their failing first query; none changed it). ``reward.known_error`` falls
    on that answer, and on one changed where the error is not (it fails the same way); a
    fixed query, a changed one that fails differently, and the broken query submitted blind
    or without any run earn what they did before (real episodes on concert_singer)."""

    def reply(kind: int, turn: int, gold: str) -> str:
        if kind == 0:  # run, read the error, submit the same query anyway (a trailing ';' aside)
            return _call("run_query", BROKEN) if turn == 0 else _call("submit_sql", BROKEN + ";")
        if kind == 1:  # run, read the error, fix it
            return _call("run_query", BROKEN) if turn == 0 else _call("submit_sql", gold)
        if kind == 2:  # run and submit in one reply: unread, not known
            return _call("run_query", BROKEN) + "\n" + _call("submit_sql", BROKEN)
        if kind == 3:  # run, read the error, submit it changed where the error is not: it fails the same way
            return _call("run_query", BROKEN) if turn == 0 else _call("submit_sql", BROKEN.lower() + " LIMIT 10")
        if kind == 4:  # run, read the error, change the query and fail differently: an attempt, not known
            return _call("run_query", BROKEN) if turn == 0 else _call("submit_sql", "SELECT nope FROM singer")
        return _call("submit_sql", BROKEN)  # 5: no run at all

    group = _concert_singer_group(reply, 6, unread_error=1.0, known_error=1.0)
    by_sample = {r.sample: (r.result, s, w) for r, s, w in zip(group.rollouts, group.scored, group.rewards)}
    known = [by_sample[k][0].answer_known_error(by_sample[k][1].pred.error) for k in range(6)]
    assert known == [True, False, False, True, False, False]
    assert [by_sample[k][0].answer_known_error() for k in range(6)] == [True, False, False, False, False, False]  # by the SQL alone
    assert [by_sample[k][0].answer_unread_error for k in range(6)] == [False, False, True, False, False, False]
    assert [by_sample[k][1].verdict.outcome.value for k in range(6)] == ["parsable", "equivalent", *["parsable"] * 4]
    assert by_sample[0][2] == by_sample[2][2] == by_sample[3][2] == pytest.approx(-0.95)
    assert by_sample[4][2] == by_sample[5][2] == 0.05 and by_sample[1][2] == 3.0
    metrics = rollout_metrics(episode_summaries([group]))
    assert metrics["episode/known_error_rate"] == pytest.approx(2 / 6) and metrics["episode/unread_error_rate"] == pytest.approx(1 / 6)


def test_a_failed_query_sent_again_unchanged_pays_the_rerun_failed_penalty():
    """Issue 38: after run 4's warm-up, 36 of step 12's 56 episodes that hit the failed-query
    limit had sent their failing query again as written (greedy decoding: the same context,
    the same reply), and ended with no answer, paid like a changed query that failed too.
    ``reward.rerun_failed`` falls on the wrong answer of an episode that reran a failed query;
    a changed query that fails again, a fix, and a right answer after a rerun earn what they
    did before (real episodes on concert_singer)."""

    def reply(kind: int, turn: int, gold: str) -> str:
        if kind == 0:  # the greedy loop: the failing query every round until the limit, then submitted
            return _call("run_query", BROKEN + " ;") if turn < 4 else _call("submit_sql", BROKEN)
        if kind == 1:  # a different failing query each round: attempts, not reruns
            return _call("run_query", f"SELECT nope_{turn} FROM singer") if turn < 4 else _call("submit_sql", BROKEN)
        if kind == 2:  # fail, then fix
            return _call("run_query", BROKEN) if turn == 0 else _call("submit_sql", gold)
        return _call("run_query", BROKEN) if turn < 2 else _call("submit_sql", gold)  # 3: rerun once, then right

    group = _concert_singer_group(reply, 4, rerun_failed=1.0)
    by_sample = {r.sample: (r.result, s, w) for r, s, w in zip(group.rollouts, group.scored, group.rewards)}
    assert [by_sample[k][0].reran_failed_query for k in range(4)] == [True, False, False, True]
    assert [by_sample[k][1].verdict.outcome.value for k in range(4)] == ["invalid", "invalid", "equivalent", "equivalent"]
    assert by_sample[0][0].stop_reason is StopReason.FAILED_QUERY_LIMIT
    assert by_sample[0][2] < by_sample[1][2] == 0.0  # the rerun costs; trying something else does not
    assert by_sample[2][2] == by_sample[3][2] == 3.0  # a right answer never pays it
    assert rollout_metrics(episode_summaries([group]))["episode/rerun_failed_rate"] == 0.5


def test_the_rerun_of_a_failed_query_is_found_in_run_4s_evaluated_episodes():
    """The property reads recorded episodes as the trainer's own: run 4's step 12 on
    dev-report 200 (benchmarks/results) has 56 episodes ended by the failed-query limit, and
    in 36 the model had sent its failing query again as written."""
    path = Path(__file__).parent.parent / "benchmarks/results/g05r4-step12-report200/episodes.jsonl.gz"
    with gzip.open(path, "rt") as f:
        episodes = [EpisodeResult.from_dict(json.loads(line)["episode"]) for line in f]
    limited = [e for e in episodes if e.stop_reason is StopReason.FAILED_QUERY_LIMIT]
    assert len(episodes) == 200 and len(limited) == 56
    assert sum(e.reran_failed_query for e in limited) == 36
    assert not any(e.reran_failed_query for e in episodes if e.stop_reason is StopReason.SUBMITTED and not any(
        not c.ok for r in e.rounds for c in r.calls if c.tool == "run_query"))


def test_a_group_can_hold_the_greedy_episode_that_evaluation_plays():
    """``rollout.greedy_per_group``: the first samples of every group decode at temperature
    0, the others with the rollout's sampling, so a habit only greedy decoding shows (run 4:
    reruns of a failing query in 8-10 of 50 greedy held-out episodes, 0 of 64 sampled at
    temperature 1) is in a group to be paid for; the held-out evaluation's runner samples
    none greedily by this setting (real episodes on concert_singer)."""
    from sqlscout.train.config import RolloutConfig

    seen: dict[int, set[float]] = {}

    def reply(turn: ScriptTurn) -> str:
        sample = turn.episode[1] if turn.episode else 0
        seen.setdefault(sample, set()).add(turn.params.temperature)
        return _call("submit_sql", "SELECT 1" if turn.params.temperature else BROKEN)

    tasks = load_questions(DataConfig(benchmark="spider", path=str(SPIDER), split="dev", db_ids=("concert_singer",), limit=1))
    rollout = RolloutConfig.model_validate({"group_size": 4, "greedy_per_group": 1, "sampling": {"temperature": 1.0}})
    config = rollout.runner_config(seed=5)
    assert config.greedy_samples == 1 and config.to_dict()["greedy_samples"] == 1
    with Runner(ScriptedBackend(reply, tokenizer=qwen3_5_tokenizer()), config) as runner:
        [group] = collect_groups(runner, tasks, [0], group_size=4, seed=5, reward=REWARD_PRESETS["sqale-dense"],
                                 scale_by_std=False, gold=GoldResults())  # fmt: skip
    assert seen == {0: {0.0}, 1: {1.0}, 2: {1.0}, 3: {1.0}}
    by_sample = {r.sample: s.verdict.outcome.value for r, s in zip(group.rollouts, group.scored)}
    assert by_sample == {0: "parsable", 1: "executable", 2: "executable", 3: "executable"}
    assert group.advantages[[r.sample for r in group.rollouts].index(0)] < 0
    assert RolloutConfig.model_validate({}).runner_config(seed=0).greedy_samples == 0
