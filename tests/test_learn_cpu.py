"""The pieces of benchmarks/learn_cpu.py (GRPO with LoRA on the real 0.5B model): the
policy the trainer builds straight from the GGUF file, and the questions it trains and
is evaluated on."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from sqlscout.errors import ConfigError
from sqlscout.train.config import LoraConfig, LossConfig, ModelConfig, OptimConfig, load_config

from conftest import SPIDER, needs_shared_data

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("learn_cpu", ROOT / "benchmarks" / "learn_cpu.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["learn_cpu"] = module
    spec.loader.exec_module(module)
    return module


def test_the_config_file_loads_and_trains_lora_on_the_gguf_with_the_full_schema() -> None:
    cfg = load_config(ROOT / "configs" / "learn-cpu-qwen2.5-coder-0.5b.yaml")
    assert cfg.model.name_or_path.endswith("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf") and cfg.model.lora.enabled
    assert cfg.rollout.episode.schema.value == "full"
    assert cfg.rollout.runner_config(0).assist.rules == {}  # the plain protocol: free replies, no help
    assert 2 <= cfg.rollout.episode.max_rounds <= 3 and cfg.curriculum.beta_start < 0 < cfg.curriculum.strength


def test_a_missing_gguf_file_is_one_clear_config_error(tmp_path: Path) -> None:
    from sqlscout.train.model import build_policy

    config = ModelConfig(name_or_path=str(tmp_path / "absent.gguf"), lora=LoraConfig(enabled=True))
    with pytest.raises(ConfigError, match=r"GGUF file not found: .*absent\.gguf"):
        build_policy(config, kl_enabled=True, seed=0)


@needs_shared_data
def test_training_questions_leave_out_the_evaluation_slice_and_its_paraphrases() -> None:
    learn = _script()
    held = learn.eval_slice(SPIDER, 50)
    from sqlscout.data import load_tasks
    from sqlscout.evaluation.run import select_tasks

    dev = load_tasks("spider", SPIDER, split="dev", missing_db="skip")
    assert [t.question_id for t in held] == [t.question_id for t in select_tasks(dev, 50, "random", 0)]
    records = learn.dev_rest(SPIDER, held)
    held_ids = {f"dev-{t.question_id}" for t in held}
    held_sql = {(t.db_id, learn._normal_sql(t.gold_sql)) for t in held}
    assert not held_ids & {r["question_id"] for r in records}
    assert not held_sql & {(r["db_id"], learn._normal_sql(r["sql"])) for r in records}
    # Spider asks many questions twice: dropping the paraphrases removes more than the slice itself.
    assert len(records) < len(dev) - len(held)
    assert len(records) > 800


@pytest.mark.slow
def test_the_gguf_trains_as_a_lora_policy_and_one_update_moves_only_the_adapters(qwen05_gguf: Path) -> None:
    import torch

    from sqlscout.train.mask import TrainSample
    from sqlscout.train.model import build_policy
    from sqlscout.train.update import UpdateContext, grpo_update

    config = ModelConfig(name_or_path=str(qwen05_gguf), precision="fp32", gradient_checkpointing=False,
                         lora=LoraConfig(enabled=True, r=4, alpha=8))  # fmt: skip
    policy = build_policy(config, kl_enabled=True, seed=0)  # also checks the GGUF's tokenizer against the model
    assert policy.lora and policy.reference_model is None
    assert policy.tokenizer.convert_ids_to_tokens(policy.tokenizer.encode("<|im_end|>")) == ["<|im_end|>"]
    model = policy.model
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in name for name in trainable)

    ids = policy.tokenizer.encode("SELECT count(*) FROM singer<|im_end|>", add_special_tokens=False)
    positions = list(range(1, len(ids)))
    samples = [TrainSample(ids, positions, [float("nan")] * len(positions), 1.0),
               TrainSample(ids[:5], positions[:4], [float("nan")] * 4, -1.0)]  # fmt: skip
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    reference = policy.reference_fn(1.0)
    ctx = UpdateContext(model, LossConfig(), temperature=1.0, kl_coef=0.01, reference=reference, pad_id=policy.pad_id)
    stats = grpo_update(ctx, optimizer, None, samples, OptimConfig(micro_batch_tokens=64))
    assert stats.tokens == len(positions) + 4 and stats.kl_sum == pytest.approx(0.0, abs=1e-6)  # adapters start at zero

    moved = {name for name, p in model.named_parameters() if not torch.equal(p.detach(), before[name])}
    assert moved and moved <= trainable  # the base weights, embedding included, are untouched
    assert any("lora_B" in name for name in moved)
    with torch.no_grad():
        tensor = torch.tensor([ids])
        with policy.adapters_disabled():
            base = model(tensor).logits
        tuned = model(tensor).logits
    assert not torch.allclose(base, tuned)  # the update changed the policy, and only through the adapters
