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
