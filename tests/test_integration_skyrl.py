"""sqlscout's environment in skyrl-gym: the real skyrl_gym package makes and steps the
registered environment, the example runs, and the rewards are sqlscout's trainer's."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO, SPIDER
from sqlscout.data import load_tasks
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.prompts import SchemaMode

skyrl_gym = pytest.importorskip("skyrl_gym", reason="skyrl-gym is the [skyrl] extra and is not installed")


def _submit(sql: str) -> str:
    return json.dumps({"tool": "submit_sql", "args": {"sql": sql}})


def test_the_module_imports_without_skyrl_gym_and_registers_once() -> None:
    code = "import sys, sqlscout.integrations.skyrl; assert 'skyrl_gym' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    from sqlscout.integrations.skyrl import SqlscoutSkyRLEnv, register

    register()
    register()  # idempotent
    assert skyrl_gym.registry["sqlscout"].entry_point == "sqlscout.integrations.skyrl:SqlscoutSkyRLEnv"
    assert issubclass(SqlscoutSkyRLEnv, skyrl_gym.envs.base_text_env.BaseTextEnv)


def test_an_episode_through_skyrl_gym_make_has_sqlscouts_prompt_tools_and_reward() -> None:
    from sqlscout.integrations.skyrl import dataset_rows, register
    from sqlscout.scoring import REWARD_PRESETS

    register()
    task = load_tasks("spider", SPIDER, missing_db="skip")[0]
    episode = EpisodeConfig(max_rounds=2, token_budget=8192)
    row = dataset_rows([task], episode)[0]
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")} | {"max_turns": 5}
    env = skyrl_gym.make(row["env_class"], env_config={"episode": episode, "reward": "tiered"}, extras=extras)
    messages, _ = env.init(row["prompt"])
    assert messages == row["prompt"] and messages[-1]["role"] == "user" and task.question in messages[-1]["content"]
    assert env.max_turns == 3  # two tool rounds and the final answer
    out = env.step(json.dumps({"tool": "run_query", "args": {"sql": "SELECT count(*) FROM singer"}}))
    assert not out["done"] and out["reward"] == 0.0
    assert out["observations"][0]["role"] == "user" and "count(*)\n6" in out["observations"][0]["content"]
    out = env.step("no call here")
    assert not out["done"] and out["metadata"]["final_turn_next"]  # rounds spent: the final turn is forced
    out = env.step(task.gold_sql or "")
    assert out["done"] and out["observations"] == []
    assert out["reward"] == REWARD_PRESETS["tiered"].equivalent
    assert (out["metadata"]["stop_reason"], out["metadata"]["answer_source"]) == ("round_limit", "final_turn")
    assert env.get_metrics()["correct"] == 1.0


def test_the_example_runs_with_no_arguments() -> None:
    done = subprocess.run([sys.executable, str(REPO / "examples" / "skyrl_env.py")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "reward 3.00 (equivalent, submitted)" in done.stdout and "6 episodes in" in done.stdout


def test_the_same_scripted_episodes_earn_the_same_rewards_as_in_sqlscouts_trainer() -> None:
    """Parity: 20 questions, the same scripted replies (a run_query, then a submit_sql of
    a right, a wrong or a near answer), the same rewards through sqlscout's trainer
    (collect_groups) and through environments made by skyrl_gym."""
    from sqlscout.backends.scripted import ScriptedBackend
    from sqlscout.integrations.skyrl import register
    from sqlscout.runner import Runner, RunnerConfig
    from sqlscout.scoring import REWARD_PRESETS
    from sqlscout.scoring.gold import GoldResults
    from sqlscout.train.rollout import collect_groups

    tasks = load_tasks("spider", SPIDER, missing_db="skip")[:20]
    answers = {t.question: [t.gold_sql, "SELECT 1", "SELECT count(*) FROM singer"] for t in tasks}

    def reply(question: str, which: int, turn: int) -> str:  # three kinds of answer per question: right, wrong, near
        sql = answers[question][which]
        return json.dumps({"tool": "run_query" if turn == 0 else "submit_sql", "args": {"sql": sql}})

    episode = EpisodeConfig(max_rounds=2, token_budget=8192, schema=SchemaMode.FULL)
    preset = REWARD_PRESETS["sqale-dense"]

    def scripted(turn):  # noqa: ANN001, ANN202 - the question as the prompt shows it; the answer by sample
        question = turn.prompt.rsplit("Question: ", 1)[1].split("<|im_end|>", 1)[0].strip()
        return reply(question, turn.episode[1], turn.turn)

    with Runner(ScriptedBackend(scripted), RunnerConfig(episode=episode, max_batch=64)) as runner:
        groups = collect_groups(runner, tasks, list(range(20)), group_size=3, seed=0, reward=preset,
                                scale_by_std=False, gold=GoldResults())  # fmt: skip
    theirs = [r for g in groups for r in g.rewards]

    register()
    ours = []
    for task in tasks:
        for which in range(3):
            env = skyrl_gym.make("sqlscout", env_config={"episode": episode, "reward": "sqale-dense"}, extras={"task": task})
            messages, _ = env.init([])
            question = messages[-1]["content"].rsplit("Question: ", 1)[1].strip()
            turn, out = 0, {"done": False}
            while not out["done"]:
                out = env.step(reply(question, which, turn))
                turn += 1
            assert turn == 2  # the query ran, then the answer was submitted
            ours.append(out["reward"])
    assert ours == theirs and len(theirs) == 60
    assert len(set(theirs)) >= 2  # right, wrong and near answers are told apart


def test_the_plurality_bonus_is_the_one_term_a_trajectory_alone_cannot_earn() -> None:
    """What SkyRL's per-trajectory environment cannot see: two samples of a group that
    agree on a wrong result earn sqale-dense's plurality bonus in sqlscout's trainer;
    each scored alone, as a SkyRL environment scores it, earns the rest and no more."""
    from sqlscout.backends.scripted import ScriptedBackend
    from sqlscout.integrations.skyrl import register
    from sqlscout.runner import Runner, RunnerConfig
    from sqlscout.scoring import REWARD_PRESETS
    from sqlscout.scoring.gold import GoldResults
    from sqlscout.train.rollout import collect_groups

    task = load_tasks("spider", SPIDER, missing_db="skip")[0]
    group = [task.gold_sql or "", "SELECT 1", "SELECT 1"]
    episode = EpisodeConfig(max_rounds=2, token_budget=8192)
    preset = REWARD_PRESETS["sqale-dense"]
    with Runner(ScriptedBackend(lambda turn: _submit(group[turn.episode[1]])), RunnerConfig(episode=episode)) as runner:
        theirs = collect_groups(runner, [task], [0], group_size=3, seed=0, reward=preset, scale_by_std=False, gold=GoldResults())[0].rewards

    register()
    ours = []
    for sql in group:
        env = skyrl_gym.make("sqlscout", env_config={"episode": episode}, extras={"task": task})
        env.init([])
        ours.append(env.step(_submit(sql))["reward"])
    assert ours[0] == theirs[0] == preset.equivalent
    assert [t - o for t, o in zip(theirs[1:], ours[1:])] == pytest.approx([preset.plurality] * 2)
