"""The runner over the scripted backend with the real Qwen3 tokenizer and real databases."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from assist_helpers import profile
from sqlscout.backends.base import SamplingParams
from sqlscout.backends.offline_tokenizers import qwen3_tokenizer
from sqlscout.backends.scripted import ScriptedBackend, ScriptTurn
from sqlscout.env.chat import ChatML
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.prompts import SchemaMode
from sqlscout.env.trace import AnswerSource, SegmentKind, StopReason
from sqlscout.runner import Rollout, RunMode, Runner, RunnerConfig, episode_seed, run_all
from sqlscout.env.task import Task

from conftest import CHINOOK


def call(tool: str, **args: object) -> str:
    return json.dumps({"tool": tool, "args": args})


QUESTIONS = [
    ("How many genres are there?", "SELECT COUNT(*) FROM Genre"),
    ("How many albums are there?", "SELECT COUNT(*) FROM Album"),
    ("How many artists are there?", "SELECT COUNT(*) FROM Artist"),
    ("How many tracks are there?", "SELECT COUNT(*) FROM Track"),
    ("How many employees are there?", "SELECT COUNT(*) FROM Employee"),
]


@pytest.fixture(scope="module")
def tokenizer():
    return qwen3_tokenizer()


@pytest.fixture
def tasks() -> list[Task]:
    return [Task(f"q{i}", q, CHINOOK, gold_sql=sql) for i, (q, sql) in enumerate(QUESTIONS)]


def explorer(turn: ScriptTurn) -> str:
    """Lists tables, runs the gold-like query for the question it sees, then submits it."""
    sql = next(sql for q, sql in QUESTIONS if q in turn.prompt)
    return [
        "<think>\nLet me look.\n</think>\n\n" + call("list_tables"),
        call("run_query", sql=sql) + "\n" + call("describe_table", table_name="Genre"),
        call("submit_sql", sql=sql),
    ][min(turn.turn, 2)]


class CountingBackend(ScriptedBackend):
    """Records the size of every generate call."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.batches: list[int] = []

    def generate(self, requests):
        self.batches.append(len(requests))
        return super().generate(requests)


def check_transcript(rollout: Rollout, tokenizer) -> None:
    """The ids are the transcript, the spans tile them and match the episode's segments."""
    result = rollout.result
    assert len(rollout.token_ids) == len(rollout.logprobs) == result.total_tokens
    assert rollout.segments[0][0] is SegmentKind.PROMPT and rollout.segments[0][1] == 0
    for (_, _, end), (_, start, _) in zip(rollout.segments, rollout.segments[1:]):
        assert end == start
    assert rollout.segments[-1][2] == len(rollout.token_ids)
    for kind, start, end in rollout.segments:
        lps = rollout.logprobs[start:end]
        assert all((lp is not None) == (kind is SegmentKind.MODEL) for lp in lps)
    assert sum(end - start for kind, start, end in rollout.segments if kind is SegmentKind.MODEL) == result.generated_tokens


def test_runs_every_task_and_sample_with_exact_token_transcripts(tasks, tokenizer) -> None:
    backend = CountingBackend(explorer, tokenizer=tokenizer)
    rollouts = run_all(backend, tasks, RunnerConfig(max_batch=64), samples=2)
    assert [(r.index, r.sample) for r in rollouts] == [(i, s) for i in range(5) for s in range(2)]
    for r in rollouts:
        assert r.result.final_sql == QUESTIONS[r.index][1]
        assert r.result.stop_reason is StopReason.SUBMITTED
        assert r.result.tool_rounds == 3 and r.result.tool_calls == 4
        check_transcript(r, tokenizer)
    # Three model turns for all ten episodes: three generate calls of ten.
    assert backend.batches == [10, 10, 10]


def test_token_ids_decode_to_the_episode_transcript(tasks, tokenizer) -> None:
    backend = ScriptedBackend(explorer, tokenizer=tokenizer)
    with Runner(backend, RunnerConfig()) as runner:
        (rollout,) = list(runner.run(tasks[:1]))
    text = tokenizer.decode(rollout.token_ids)
    assert text.startswith("<|im_start|>system\n")
    assert text.count("<|im_start|>assistant\n") == 3
    assert "[4 tool turns left before you must answer]" in text
    # Model spans decode to exactly what the model wrote, end-of-turn marker included.
    model_texts = [tokenizer.decode(rollout.token_ids[s:e]) for k, s, e in rollout.segments if k is SegmentKind.MODEL]
    assert model_texts[2] == call("submit_sql", sql=QUESTIONS[0][1]) + "<|im_end|>"


def test_batches_never_exceed_max_batch_and_refill_as_episodes_finish(tasks, tokenizer) -> None:
    def uneven(turn: ScriptTurn) -> str:
        sql = next(sql for q, sql in QUESTIONS if q in turn.prompt)
        turns_needed = 1 + QUESTIONS.index(next(x for x in QUESTIONS if x[1] == sql)) % 3
        return call("submit_sql", sql=sql) if turn.turn + 1 >= turns_needed else call("list_tables")

    backend = CountingBackend(uneven, tokenizer=tokenizer)
    with Runner(backend, RunnerConfig(max_batch=3)) as runner:
        order = [r.index for r in runner.run(tasks)]
    assert max(backend.batches) == 3 and backend.batches[0] == 3
    assert sorted(order) == list(range(5))
    assert order[0] == 0  # one-turn episode streams out first
    assert sum(backend.batches) == 1 + 2 + 3 + 1 + 2


def test_databases_are_shared_between_episodes(tasks, tokenizer) -> None:
    with Runner(ScriptedBackend(explorer, tokenizer=tokenizer)) as runner:
        list(runner.run(tasks))
        assert len(runner._databases) == 1
        assert runner.database(CHINOOK) is runner.database(Path(str(CHINOOK)))


def test_seeds_are_per_turn_and_runs_are_deterministic(tasks, tokenizer) -> None:
    def by_seed(turn: ScriptTurn) -> str:
        # The seed decides which table the "model" looks at: a stand-in for sampling.
        table = ["Genre", "Album", "Artist"][turn.params.seed % 3]
        if turn.turn < 2:
            return call("sample_rows", table_name=table, limit=1 + turn.params.seed % 4)
        return call("submit_sql", sql=f"SELECT COUNT(*) FROM {table}")

    config = RunnerConfig(seed=7, max_batch=4)
    first = run_all(ScriptedBackend(by_seed, tokenizer=tokenizer), tasks, config, samples=3)
    second = run_all(ScriptedBackend(by_seed, tokenizer=tokenizer), tasks, config, samples=3)
    assert [r.token_ids for r in first] == [r.token_ids for r in second]
    assert [r.result.final_sql for r in first] == [r.result.final_sql for r in second]
    other = run_all(ScriptedBackend(by_seed, tokenizer=tokenizer), tasks, RunnerConfig(seed=8), samples=3)
    assert [r.token_ids for r in first] != [r.token_ids for r in other]
    assert len({episode_seed(7, i, s, t) for i in range(5) for s in range(3) for t in range(3)}) == 45


def test_a_backend_failure_becomes_recorded_outcomes(tasks, tokenizer) -> None:
    backend = ScriptedBackend(explorer, tokenizer=tokenizer, raise_on=lambda turn: turn.turn == 2)
    rollouts = run_all(backend, tasks, RunnerConfig())
    for r in rollouts:
        assert r.result.stop_reason is StopReason.BACKEND_ERROR
        assert "scripted backend failure" in (r.result.error or "")
        # It falls back to the last query that ran, as when a limit is hit.
        assert r.result.final_sql == QUESTIONS[r.index][1]
        check_transcript(r, tokenizer)


def test_a_model_that_never_calls_a_tool_ends_by_the_round_limit(tasks, tokenizer) -> None:
    backend = ScriptedBackend(lambda turn: "I am not sure what to do.", tokenizer=tokenizer)
    config = RunnerConfig(episode=EpisodeConfig(max_rounds=3))
    (rollout,) = run_all(backend, tasks[:1], config)
    assert rollout.result.stop_reason is StopReason.ROUND_LIMIT
    assert rollout.result.final_sql is None
    assert len(rollout.result.rounds) == 4  # three tool rounds, then the forced final turn
    check_transcript(rollout, tokenizer)


def test_budget_is_exact_and_a_cut_reply_is_recorded(tasks, tokenizer) -> None:
    long_reply = "<think>\n" + "Let me think about the tables. " * 400 + "</think>\n" + call("list_tables")
    backend = ScriptedBackend([long_reply, call("submit_sql", sql="SELECT 1")], tokenizer=tokenizer)
    config = RunnerConfig(episode=EpisodeConfig(token_budget=1500, final_turn_reserve=64))
    (rollout,) = run_all(backend, tasks[:1], config)
    first = rollout.result.rounds[0]
    assert first.finish_reason == "length"
    assert rollout.result.total_tokens <= 1500
    assert rollout.result.total_tokens == len(rollout.token_ids)
    assert rollout.result.stop_reason is StopReason.BUDGET_EXHAUSTED
    check_transcript(rollout, tokenizer)


def test_single_shot_mode_answers_once_from_the_full_schema(tasks, tokenizer) -> None:
    backend = ScriptedBackend(lambda turn: "```sql\nSELECT COUNT(*) FROM Genre\n```", tokenizer=tokenizer)
    (rollout,) = run_all(backend, tasks[:1], RunnerConfig(mode=RunMode.SINGLE_SHOT))
    assert rollout.result.final_sql == "SELECT COUNT(*) FROM Genre"
    assert len(rollout.result.rounds) == 1 and rollout.result.tool_calls == 0
    assert "CREATE TABLE" in rollout.result.messages[1]["content"]
    assert [k for k, _, _ in rollout.segments] == [SegmentKind.PROMPT, SegmentKind.MODEL]


def test_text_only_backend_yields_no_ids(tasks) -> None:
    (rollout,) = run_all(ScriptedBackend(explorer, chat=ChatML()), tasks[:1], RunnerConfig())
    assert rollout.token_ids == [] and rollout.segments == [] and rollout.logprobs == []
    assert rollout.result.final_sql == QUESTIONS[0][1]


def test_config_is_validated_and_recorded() -> None:
    with pytest.raises(ValueError, match="max_batch"):
        RunnerConfig(max_batch=0)
    config = RunnerConfig(sampling=SamplingParams(temperature=0.0), mode="single-shot")
    assert config.to_dict()["mode"] == "single-shot"
    assert json.dumps(config.to_dict())


@pytest.mark.parametrize(
    "module_name",
    ["sqlscout.runner", "sqlscout.env.single_shot", "sqlscout.backends.scripted", "sqlscout.backends.chat_template"],
)
def test_docstring_examples_run(module_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import doctest
    import importlib

    from conftest import REPO

    monkeypatch.chdir(REPO)  # the examples open the bundled Chinook by its path from the checkout's root
    results = doctest.testmod(importlib.import_module(module_name), optionflags=doctest.ELLIPSIS)
    assert results.attempted > 0 and results.failed == 0


# -- continuous mode: episodes advance independently on a backend that serves concurrent calls


def _untimed(value: object) -> object:
    """A result's dict without its clock readings (the only thing two runs may differ in)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not k.endswith("_s")}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _same_episodes(first: list[Rollout], second: list[Rollout]) -> None:
    assert [(r.index, r.sample) for r in first] == [(r.index, r.sample) for r in second]
    for a, b in zip(first, second):
        assert (a.token_ids, a.segments, a.logprobs) == (b.token_ids, b.segments, b.logprobs)
        assert _untimed(a.result.to_dict()) == _untimed(b.result.to_dict())


def by_seed(turn: ScriptTurn) -> str:
    # The seed decides which table the "model" looks at: a stand-in for sampling.
    table = ["Genre", "Album", "Artist"][turn.params.seed % 3]
    if turn.turn < 1 + turn.params.seed % 3:  # and how many turns the episode takes
        return call("sample_rows", table_name=table, limit=1 + turn.params.seed % 4)
    return call("submit_sql", sql=f"SELECT COUNT(*) FROM {table}")


@pytest.mark.parametrize("script", [explorer, by_seed])
def test_continuous_mode_runs_the_episodes_of_the_wave_mode(tasks, tokenizer, script) -> None:
    config = RunnerConfig(seed=3, max_batch=4)
    waves = run_all(ScriptedBackend(script, tokenizer=tokenizer), tasks, config, samples=3)
    continuous = run_all(ScriptedBackend(script, tokenizer=tokenizer, concurrent=True), tasks, config, samples=3)
    _same_episodes(waves, continuous)
    # A concurrent backend still gets waves when the config asks for them.
    forced = RunnerConfig(seed=3, max_batch=4, continuous=False)
    _same_episodes(waves, run_all(ScriptedBackend(script, tokenizer=tokenizer, concurrent=True), tasks, forced, samples=3))


class SlowFirstBackend(ScriptedBackend):
    """Replies to episode 0 take ``slow_s`` each, the others' at once; records every call."""

    def __init__(self, *args, slow_s: float, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.slow_s = slow_s
        self.calls: list[list[tuple[int, int] | None]] = []
        self.in_flight = self.most_in_flight = 0
        self._count = threading.Lock()

    def generate(self, requests):
        with self._count:
            self.calls.append([r.episode for r in requests])
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if any(r.episode is not None and r.episode[0] == 0 for r in requests):
                time.sleep(self.slow_s)  # a long reply is decoding
            else:
                time.sleep(0.01)
            return super().generate(requests)
        finally:
            with self._count:
                self.in_flight -= 1


def three_turns(turn: ScriptTurn) -> str:
    sql = next(sql for q, sql in QUESTIONS if q in turn.prompt)
    return [call("list_tables"), call("run_query", sql=sql), call("submit_sql", sql=sql)][min(turn.turn, 2)]


@pytest.mark.parametrize("concurrent", [False, True])
def test_a_short_episode_finishes_while_a_long_reply_is_decoding(tasks, tokenizer, concurrent) -> None:
    backend = SlowFirstBackend(three_turns, tokenizer=tokenizer, concurrent=concurrent, slow_s=1.0)
    turns: list[tuple[int, int]] = []
    with Runner(backend, RunnerConfig(max_batch=2)) as runner:
        finished = [r.index for r in runner.run(tasks[:2], on_turn=lambda t: turns.append((t.index, len(t.episode.rounds))))]
    if concurrent:
        # Episode 1 took its three turns while episode 0's first reply was still coming.
        assert turns[:4] == [(1, 1), (1, 2), (1, 3), (0, 1)]
        assert finished == [1, 0]
        assert all(len(call) == 1 for call in backend.calls)
    else:  # in waves episode 1 waits for episode 0's reply at every turn
        assert turns == [(0, 1), (1, 1), (0, 2), (1, 2), (0, 3), (1, 3)]
        assert all(len(call) == 2 for call in backend.calls)


def test_continuous_mode_keeps_max_batch_in_flight_and_refills(tasks, tokenizer) -> None:
    backend = SlowFirstBackend(three_turns, tokenizer=tokenizer, concurrent=True, slow_s=0.8)
    with Runner(backend, RunnerConfig(max_batch=3)) as runner:
        rollouts = list(runner.run(tasks, samples=2))
    assert sorted((r.index, r.sample) for r in rollouts) == [(i, s) for i in range(5) for s in range(2)]
    assert backend.most_in_flight == 3
    # While the two samples of episode 0 decode their first reply, the third place serves
    # the other episodes one after another: each starts as the one before it finishes.
    calls = [call[0] for call in backend.calls]
    assert [c for c in calls if c[0] != 0][:4] == [(1, 0)] * 3 + [(1, 1)]
    second_turn_of_0 = [i for i, c in enumerate(calls) if c == (0, 0)][1]
    assert calls.index((1, 1)) < second_turn_of_0
    assert rollouts[0].index == 1 and {r.index for r in rollouts[-2:]} == {0}
    for r in rollouts:
        assert r.result.final_sql == QUESTIONS[r.index][1] and r.result.stop_reason is StopReason.SUBMITTED
        check_transcript(r, tokenizer)


def test_a_backend_failure_ends_only_its_own_episode_in_continuous_mode(tasks, tokenizer) -> None:
    def fails_for_episode_2(turn: ScriptTurn) -> bool:
        return turn.episode == (2, 0) and turn.turn == 1

    backend = ScriptedBackend(explorer, tokenizer=tokenizer, concurrent=True, raise_on=fails_for_episode_2)
    rollouts = run_all(backend, tasks, RunnerConfig(max_batch=5))
    for r in rollouts:
        if r.index == 2:
            assert r.result.stop_reason is StopReason.BACKEND_ERROR
            assert "scripted backend failure" in (r.result.error or "")
        else:
            assert r.result.stop_reason is StopReason.SUBMITTED and r.result.final_sql == QUESTIONS[r.index][1]
        check_transcript(r, tokenizer)


def test_continuous_mode_skips_and_seeds_as_waves_do(tasks, tokenizer) -> None:
    skip = {(0, 1), (3, 0), (4, 2)}
    config = RunnerConfig(seed=11, max_batch=3)
    with Runner(ScriptedBackend(by_seed, tokenizer=tokenizer), config) as runner:
        waves = sorted(runner.run(tasks, samples=3, skip=skip), key=lambda r: (r.index, r.sample))
    with Runner(ScriptedBackend(by_seed, tokenizer=tokenizer, concurrent=True), config) as runner:
        continuous = sorted(runner.run(tasks, samples=3, skip=skip), key=lambda r: (r.index, r.sample))
    assert len(waves) == 12 and not skip & {(r.index, r.sample) for r in continuous}
    _same_episodes(waves, continuous)


def test_a_fresh_start_begins_the_token_transcript_again_at_its_prompt(tasks, tokenizer) -> None:
    sql = QUESTIONS[0][1]

    replies = iter([call("list_tables"), call("list_tables"), call("run_query", sql=sql), call("submit_sql", sql=sql)])

    def looping(turn: ScriptTurn) -> str:  # lists the tables twice: a loop with nothing tested
        return next(replies)

    config = RunnerConfig(assist=profile(end_on_repeat=True, fresh_start=True))
    with Runner(ScriptedBackend(looping, tokenizer=tokenizer), config) as runner:
        (rollout,) = list(runner.run(tasks[:1]))
    result = rollout.result
    assert result.stop_reason is StopReason.SUBMITTED and result.final_sql == sql and len(result.rounds) == 4
    text = tokenizer.decode(rollout.token_ids)
    assert text.count("<|im_start|>assistant\n") == 2 and "list_tables" not in text.split("<|im_start|>assistant\n", 1)[1]
    assert "[3 tool turns left before you must answer]" in text  # the rounds before count
    assert rollout.segments[0][:2] == (SegmentKind.PROMPT, 0) and rollout.segments[-1][2] == len(rollout.token_ids)
    assert len(rollout.token_ids) == len(rollout.logprobs) == result.total_tokens
    assert result.generated_tokens == sum(r.completion_tokens for r in result.rounds)  # every start's replies


def test_a_failed_draft_begins_the_token_transcript_again_at_the_agents_prompt(tasks, tokenizer) -> None:
    # The draft rule: the first turn is single-shot's (its prompt, grammar and seed); a draft
    # that fails to run begins the transcript again at the agent's prompt, which shows it.
    sql, draft = QUESTIONS[0][1], "SELECT COUNT(*) FROM Genres"
    replies = iter([f"```sql\n{draft}\n```", call("run_query", sql=sql), call("submit_sql", sql=sql)])
    turns: list[ScriptTurn] = []

    def drafting(turn: ScriptTurn) -> str:
        turns.append(turn)
        return next(replies)

    def single_shot(turn: ScriptTurn) -> str:
        turns.append(turn)
        return f"```sql\n{draft}\n```"

    rules = {"constrain": {"reasoning_lines": 0}, "guided_start": True, "submit_tested": True, "draft": True}
    episode = EpisodeConfig(schema=SchemaMode.FULL)
    with Runner(ScriptedBackend(drafting, tokenizer=tokenizer), RunnerConfig(episode=episode, assist=profile(**rules))) as runner:
        (rollout,) = list(runner.run(tasks[:1]))
    # The same first request as the single-shot baseline's under the same help.
    shot = RunnerConfig(episode=episode, assist=profile(**rules), mode=RunMode.SINGLE_SHOT)
    with Runner(ScriptedBackend(single_shot, tokenizer=tokenizer), shot) as runner:
        (single,) = list(runner.run(tasks[:1]))
    assert len(turns) == 4 and single.result.final_sql == draft
    first, alone = turns[0], turns[-1]
    assert (first.prompt, first.constraint, first.params.seed) == (alone.prompt, alone.constraint, alone.params.seed)
    assert first.constraint is not None and first.constraint.kind.value == "final_sql"
    result = rollout.result
    assert result.stop_reason is StopReason.SUBMITTED and result.answer_source is AnswerSource.SUBMIT_SQL
    assert result.final_sql == sql and len(result.rounds) == 3 and result.rounds[0].calls[0].args == {"sql": draft}
    text = tokenizer.decode(rollout.token_ids)
    # One transcript, from the agent's prompt (showing the draft and its error) on; the
    # single-shot prompt and the draft's reply are gone from it.
    assert text.startswith("<|im_start|>system\n" + result.messages[0]["content"]) and "These eight tools" in text
    assert not text.startswith(first.prompt)
    assert text.count("<|im_start|>assistant\n") == 2 and "```sql" not in text.split("<|im_start|>assistant\n", 1)[1]
    assert f"```sql\n{draft}\n```\nError: SQL error: no such table: Genres" in text.split("<|im_start|>assistant\n", 1)[0]
    assert "[4 tool turns left before you must answer]" in text  # the draft's round counts
    prompt_ids = tokenizer.encode(ChatML().render(result.messages), add_special_tokens=False)
    assert rollout.token_ids[: len(prompt_ids)] == prompt_ids and result.prompt_tokens == len(prompt_ids)
    assert tokenizer.decode(prompt_ids) == turns[1].prompt  # the agent's prompt, as its first turn read it
    assert rollout.segments[0] == (SegmentKind.PROMPT, 0, len(prompt_ids)) and rollout.segments[-1][2] == len(rollout.token_ids)
    assert [kind for kind, _, _ in rollout.segments] == [SegmentKind.PROMPT, SegmentKind.MODEL, SegmentKind.ENV, SegmentKind.MODEL]
    assert len(rollout.token_ids) == len(rollout.logprobs) == result.total_tokens
    assert result.generated_tokens == sum(r.completion_tokens for r in result.rounds)  # every start's replies
