"""Failure states (sqlscout.train.states): groups that start where the greedy policy's
first query failed, on real Spider databases and the real evaluation files of issue 38."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from sqlscout.backends.offline_tokenizers import qwen3_5_tokenizer
from sqlscout.backends.scripted import ScriptedBackend, ScriptTurn
from sqlscout.env.trace import SegmentKind
from sqlscout.errors import ConfigError
from sqlscout.runner import Runner, RunnerConfig
from sqlscout.scoring import REWARD_PRESETS
from sqlscout.scoring.gold import GoldResults
from sqlscout.train.config import DataConfig
from sqlscout.train.questions import load_questions
from sqlscout.train.rollout import collect_groups
from sqlscout.train.states import State, draw_states, from_episodes, load_states, write_states
from sqlscout.train.telemetry import episode_records, episode_summaries, rollout_metrics

from conftest import SPIDER

REPO = Path(__file__).resolve().parents[1]
BROKEN = "SELECT no_such_column FROM singer"


def _call(tool: str, sql: str) -> str:
    return json.dumps({"tool": tool, "args": {"sql": sql}})


def test_states_are_the_replies_up_to_a_first_query_that_failed_in_a_real_evaluation(tmp_path):
    """From the shipped preset's tuning-set episodes: one state per episode whose first
    ``run_query`` failed (26 of 80, as counted for docs/training.md), its last reply the one
    that ran the failing query; written and read back unchanged."""
    path = REPO / "benchmarks" / "results" / "g05r4-step12-tune80-r6f4" / "episodes.jsonl.gz"
    records = [json.loads(line) for line in gzip.open(path, "rt")]
    states, skipped = from_episodes(records)
    assert len(states) == 26 and skipped["its first query ran"] + skipped["ran no query"] == 80 - 26
    by_id = {r["episode"]["task"]["question_id"]: r for r in records}
    for state in states:
        rounds = by_id[state.question_id]["episode"]["rounds"]
        assert list(state.replies) == [r["model_text"] for r in rounds[: len(state.replies)]]
        failing = [c for c in rounds[len(state.replies) - 1]["calls"] if c["tool"] == "run_query"][0]
        assert not failing["ok"] and state.error and state.error in failing["output"]
    write_states(states, tmp_path / "states.jsonl")
    assert load_states(tmp_path / "states.jsonl") == states
    (tmp_path / "bad.jsonl").write_text('{"question_id": "1"}\n')
    with pytest.raises(ConfigError, match="bad.jsonl:1: not a state"):
        load_states(tmp_path / "bad.jsonl")
    with pytest.raises(ConfigError, match="does not exist; write it with python -m sqlscout.train.states"):
        load_states(tmp_path / "missing.jsonl")
    # A step's draw depends on (seed, step) only: every process and every resume draws the same.
    assert draw_states(states, 3, 0, 5) == draw_states(list(states), 3, 0, 5) != draw_states(states, 3, 0, 6)
    assert len(set(draw_states(states, 3, 0, 5))) == 3 and len(draw_states(states[:2], 3, 0, 5)) == 2


def test_a_group_from_a_state_replays_the_failure_untrained_and_samples_what_follows():
    """Every episode of the group replays the failing reply (the sampler never sees that
    turn), the environment answers it with its error, and what the samples do next is all
    that is trained and ranked: a fix above sending the failed query again or submitting
    it as it is (real episodes on concert_singer)."""
    tasks = load_questions(DataConfig(benchmark="spider", path=str(SPIDER), split="dev", db_ids=("concert_singer",), limit=2))
    gold = tasks[0].gold_sql
    seen: list[tuple[int, int]] = []

    def reply(turn: ScriptTurn) -> str:
        index, sample = turn.episode or (0, 0)
        seen.append((index, turn.turn))
        if index == 1:  # the other question: from its start, as before
            return _call("submit_sql", tasks[1].gold_sql)
        assert "no such column" in turn.prompt  # the state's error is in the context
        return [_call("submit_sql", gold), _call("run_query", BROKEN), _call("submit_sql", BROKEN)][sample]

    prelude = [_call("run_query", BROKEN)]
    with Runner(ScriptedBackend(reply, tokenizer=qwen3_5_tokenizer()), RunnerConfig(max_batch=2)) as runner:
        backend = runner.backend
        groups = collect_groups(runner, tasks, [0, 1], group_size=3, seed=5, reward=REWARD_PRESETS["sqale-dense"],
                                scale_by_std=False, gold=GoldResults(), preludes=[prelude, []],
                                tokenizer=qwen3_5_tokenizer())  # fmt: skip
        assert runner.backend is backend  # the prelude is this call's alone
    state, fresh = groups
    assert state.prelude == 1 and fresh.prelude == 0
    assert all(turn > 0 for index, turn in seen if index == 0) and (1, 0) in seen  # the sampler took over after the prelude
    for rollout in state.rollouts:
        assert rollout.result.rounds[0].model_text == prelude[0] and not rollout.result.rounds[0].calls[0].ok
        kinds = [SegmentKind(k) for k, _, _ in rollout.segments]
        first_model = kinds.index(SegmentKind.MODEL)  # the replayed reply is context now
        replayed = [(k, s, e) for k, s, e in rollout.segments][: first_model]
        assert sum(1 for k, _, _ in replayed if SegmentKind(k) is SegmentKind.MODEL) == 0
        assert all(lp is None for _, s, e in replayed[1:] for lp in rollout.logprobs[s:e])
        assert kinds.count(SegmentKind.MODEL) == len(rollout.result.rounds) - 1  # only the sampled replies are trained
    outcome = {r.sample: (s.verdict.outcome.value, w) for r, s, w in zip(state.rollouts, state.scored, state.rewards)}
    assert [outcome[k][0] for k in range(3)] == ["equivalent", "invalid", "parsable"]  # the rerun hit the failed-query limit
    assert state.advantages[[r.sample for r in state.rollouts].index(0)] == max(state.advantages)
    metrics = rollout_metrics(episode_summaries(groups))
    assert metrics["episode/from_state"] == 0.5 and metrics["state/equivalent"] == pytest.approx(1 / 3)
    assert [r.get("from_state", False) for r in episode_records(1, groups)] == [True] * 3 + [False] * 3


def test_a_run_plays_its_state_groups_from_the_states_file(tmp_path):
    """``rollout.state_groups`` of a step's groups start from states drawn from
    ``rollout.states``; the rest are the curriculum's; a state outside the pool, or groups
    without a file, are refused."""
    from sqlscout.train.config import config_from_dict
    from sqlscout.train.loop import train

    from test_train_loop import scripted_backend, tiny_config, _questions

    data = tiny_config(tmp_path, steps=2, telemetry={"tensorboard": False}, checkpoint={"every": 0})
    data["rollout"]["episode"].update(max_rounds=2, max_turn_tokens=256)
    cfg = config_from_dict(data)
    pool = load_questions(cfg.data)
    states = [State(pool[0].question_id, (_call("run_query", BROKEN),), "no such column")]
    write_states(states, tmp_path / "states.jsonl")
    data["rollout"].update(states=str(tmp_path / "states.jsonl"), state_groups=1)
    inner = scripted_backend(_questions(cfg))
    run = train(config_from_dict(data), backend=inner)
    assert run.last["episode/from_state"] == pytest.approx(0.5)  # one group of two
    records = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    from_state = [r for r in records if r.get("from_state")]
    assert len(from_state) == 2 * 4 and {r["question_id"] for r in from_state} == {pool[0].question_id}
    assert all(r["rounds"] >= 2 for r in from_state)  # the replayed query, then the sampler's reply
    from sqlscout.report import write_report

    md_path, html_path = write_report([tmp_path / "run"], tmp_path / "run")
    assert 'id="train-states"' in html_path.read_text() and "| state recovered |" in md_path.read_text()
    with pytest.raises(ConfigError, match="state_groups needs rollout.states"):
        config_from_dict({**data, "rollout": {**data["rollout"], "states": None}})
    write_states([State("no-such-question", ("x",))], tmp_path / "outside.jsonl")
    with pytest.raises(ConfigError, match="1 states are of questions outside the training pool"):
        train(config_from_dict({**data, "out": str(tmp_path / "r2"), "rollout": {**data["rollout"], "states": str(tmp_path / "outside.jsonl")}}),
              backend=inner)  # fmt: skip


def test_the_states_command_writes_a_runs_states_and_refuses_questions_outside_its_pool(tmp_path):
    """``python -m sqlscout.train.states`` as a user runs it: from a real evaluation's
    episodes on dev-tune, every state is written for a pool of all of dev-tune; for run 8's
    pool (120 of dev-tune's 316 and the written questions) some are outside, a one-line error."""
    import subprocess
    import sys

    import yaml

    episodes = REPO / "benchmarks" / "results" / "g05r4-step12-tune80-r6f4" / "episodes.jsonl.gz"
    config = yaml.safe_load((REPO / "configs" / "grpo-cpu-qwen2.5-coder-0.5b-run8.yaml").read_text())
    config["data"] = {"benchmark": "spider", "path": str(SPIDER), "split": "dev-tune"}
    (tmp_path / "all-tune.yaml").write_text(yaml.safe_dump(config))

    def states(config_path: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "sqlscout.train.states", "--config", str(config_path), "--episodes", str(episodes),
                               "--out", str(tmp_path / "states.jsonl")], capture_output=True, text=True, cwd=REPO, timeout=300)  # fmt: skip

    done = states(tmp_path / "all-tune.yaml")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("26 states -> ") and len(load_states(tmp_path / "states.jsonl")) == 26
    config["data"] = yaml.safe_load((REPO / "configs" / "grpo-cpu-qwen2.5-coder-0.5b-run8.yaml").read_text())["data"]
    config["data"]["path"] = str(SPIDER)
    config["data"]["also"][0].update(path=str(REPO / "configs" / "data" / "spider-train-questions.jsonl"), db_root=str(SPIDER / "database"))
    (tmp_path / "run8.yaml").write_text(yaml.safe_dump(config))
    refused = states(tmp_path / "run8.yaml")
    last = refused.stderr.strip().splitlines()[-1]  # after the data loader's note about wta_1
    assert refused.returncode == 2 and last.startswith("error: 16 states are of questions outside the pool (first: ")
    assert "Traceback" not in refused.stderr
