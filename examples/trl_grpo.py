"""GRPO with TRL's GRPOTrainer on sqlscout's environment (docs/integrations.md).

With no arguments: a tiny random Qwen3 (real tokenizer) trains for 2 steps on CPU on a few
Spider questions, to show the wiring end to end in under a minute. With a model:

    python examples/trl_grpo.py --model Qwen/Qwen2.5-Coder-0.5B-Instruct --steps 100 [--use-vllm]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="a model directory or hub id (default: a tiny random Qwen3)")
    parser.add_argument("--data", default=None, help="Spider's folder (default: ../shared/data/spider, else the small fixture)")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--questions", type=int, default=4)
    parser.add_argument("--generations", type=int, default=2)
    parser.add_argument("--use-vllm", action="store_true")
    args = parser.parse_args()

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from sqlscout.data import load_tasks
    from sqlscout.env.config import EpisodeConfig
    from sqlscout.env.prompts import SchemaMode
    from sqlscout.integrations.trl import SqlscoutRollout, sqlscout_reward

    data = Path(args.data) if args.data else REPO.parent / "shared" / "data" / "spider"
    if not (data / "dev.json").is_file():
        data = REPO / "tests" / "data" / "spider_mini"
    tasks = load_tasks("spider", data, missing_db="skip")[: args.questions]
    if args.model is None:
        from tiny_models import tiny_qwen3

        model, tokenizer = tiny_qwen3(seed=0)
        episode = EpisodeConfig(max_rounds=1, token_budget=4096, max_turn_tokens=16, schema=SchemaMode.FULL)
    else:
        model, tokenizer = args.model, None
        episode = EpisodeConfig(max_rounds=6, token_budget=12_288, max_turn_tokens=512, schema=SchemaMode.FULL)
    rollout = SqlscoutRollout(tasks, episode=episode, max_batch=args.questions * args.generations)
    out = tempfile.mkdtemp(prefix="sqlscout-trl-")
    config = GRPOConfig(
        output_dir=out, max_steps=args.steps, per_device_train_batch_size=args.generations * 2,
        num_generations=args.generations, learning_rate=1e-5, logging_steps=1, report_to=[],
        use_cpu=args.model is None, use_vllm=args.use_vllm, save_strategy="no", max_completion_length=4096,
    )  # fmt: skip
    trainer = GRPOTrainer(
        model=model, reward_funcs=[sqlscout_reward], args=config, train_dataset=Dataset.from_list(rollout.dataset()),
        processing_class=tokenizer, rollout_func=rollout,
    )  # fmt: skip
    trainer.train()
    for row in trainer.state.log_history:
        if "reward" in row:
            print(f"step {row.get('step')}: reward {row['reward']:.3f}, completion length {row.get('completions/mean_length', 0):.0f}")
    print(f"{rollout.calls} rollout calls, {len(rollout.last_results)} episodes in the last; trainer output in {out}")


if __name__ == "__main__":
    main()
