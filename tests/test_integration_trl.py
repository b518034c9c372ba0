"""TRL's GRPOTrainer on sqlscout's environment (issue 41): the real trl package trains a
tiny model through SqlscoutRollout, and the rollout hands TRL sqlscout's transcript, mask
and reward."""

from __future__ import annotations

import pytest

from conftest import SPIDER
from sqlscout.data import load_tasks
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.prompts import SchemaMode

trl = pytest.importorskip("trl", reason="trl is the [trl] extra and is not installed")


@pytest.mark.slow
def test_grpo_trainer_trains_on_sqlscout_episodes_with_its_mask_and_reward(one_torch_thread, tmp_path) -> None:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from sqlscout.integrations.trl import SqlscoutRollout, sqlscout_reward
    from sqlscout.scoring import REWARD_PRESETS
    from tiny_models import tiny_qwen3

    model, tokenizer = tiny_qwen3(seed=0)
    tasks = load_tasks("spider", SPIDER, missing_db="skip")[:2]
    episode = EpisodeConfig(max_rounds=1, token_budget=4096, max_turn_tokens=8, schema=SchemaMode.FULL)
    rollout = SqlscoutRollout(tasks, episode=episode, max_batch=4)
    seen = {}

    def recording(prompts, trainer):
        out = rollout(prompts, trainer)
        seen.update(prompts=list(prompts), out=out)
        return out

    config = GRPOConfig(
        output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=4, num_generations=2, report_to=[],
        use_cpu=True, save_strategy="no", logging_steps=1, max_completion_length=4096,
    )  # fmt: skip
    trainer = GRPOTrainer(model=model, reward_funcs=[sqlscout_reward], args=config, processing_class=tokenizer,
                          train_dataset=Dataset.from_list(rollout.dataset()), rollout_func=recording)  # fmt: skip
    trainer.train()
    out = seen["out"]
    assert len(seen["prompts"]) == 4 and len(out["completion_ids"]) == 4  # each prompt once per generation
    for ids, mask, logprobs, result in zip(out["completion_ids"], out["env_mask"], out["logprobs"], rollout.last_results):
        assert len(ids) == len(mask) == len(logprobs) and 0 < sum(mask) < len(mask)  # model tokens and tool results
        assert result.prompt_version == "sqlscout-prompt-3"  # the plain protocol, no help
    assert all(r in {c.invalid for c in REWARD_PRESETS.values()} or r >= 0 for r in out["sqlscout_reward"])
    assert any("reward" in row for row in trainer.state.log_history)


def test_the_same_scripted_episodes_earn_the_same_rewards_as_in_sqlscouts_trainer() -> None:
    """Issue 41's parity: 20 questions, the same scripted replies, the same rewards through
    sqlscout's trainer (collect_groups) and through the TRL rollout."""
    import json
    import types

    from sqlscout.backends.scripted import ScriptedBackend
    from sqlscout.integrations.trl import SqlscoutRollout
    from sqlscout.runner import Runner, RunnerConfig
    from sqlscout.scoring import REWARD_PRESETS
    from sqlscout.scoring.gold import GoldResults
    from sqlscout.train.rollout import collect_groups

    tasks = load_tasks("spider", SPIDER, missing_db="skip")[:20]
    answers = {t.question: [t.gold_sql, "SELECT 1", "SELECT count(*) FROM singer"] for t in tasks}

    def script(which):  # noqa: ANN001, ANN202 - three kinds of answer per question: right, wrong, near
        def reply(turn):  # noqa: ANN001, ANN202
            question = turn.prompt.rsplit("Question: ", 1)[1].split("<|im_end|>", 1)[0].strip()
            return json.dumps({"tool": "submit_sql", "args": {"sql": answers[question][which(turn.episode)]}})

        return reply

    episode = EpisodeConfig(max_rounds=2, token_budget=8192, schema=SchemaMode.FULL)
    preset = REWARD_PRESETS["sqale-dense"]
    # sqlscout's trainer runs 3 samples of each question; TRL hands each question 3 times
    with Runner(ScriptedBackend(script(lambda e: e[1])), RunnerConfig(episode=episode, max_batch=64)) as runner:
        groups = collect_groups(runner, tasks, list(range(20)), group_size=3, seed=0, reward=preset,
                                scale_by_std=False, gold=GoldResults())  # fmt: skip
    theirs = [r for g in groups for r in g.rewards]

    rollout = SqlscoutRollout(tasks, episode=episode, backend=lambda trainer: ScriptedBackend(script(lambda e: e[0] % 3)), max_batch=64)
    keys = [key for row in rollout.dataset() for key in [row["prompt"]] * 3]
    out = rollout(keys, types.SimpleNamespace())
    assert out["sqlscout_reward"] == theirs and len(theirs) == 60
    assert len(set(theirs)) >= 2  # right, wrong and near answers are told apart
