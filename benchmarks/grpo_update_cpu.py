"""What one GRPO update costs on the real 0.5B model on a CPU, with and without sharing a
group's prompt (``optim.share_prefix``), on the same real episodes in the same run.

It rolls out ``--questions`` training questions x ``--group-size`` episodes of the issue-38
config (``configs/grpo-cpu-qwen2.5-coder-0.5b.yaml``: Qwen2.5-Coder-0.5B-Instruct, LoRA
r 16, llama.cpp sampling the GGUF, the plain protocol), then times the update over all of
those episodes (every group, so both variants do the same work whatever the rewards)
alternately without and with prefix sharing, ``--reps`` times each, and prints the
medians and their ratio. The KL term (the adapters-off reference) is on, as in the run.

    python benchmarks/grpo_update_cpu.py --questions 4 --group-size 4 --reps 2

``--compare precision`` times the same update in fp32 and in bf16 instead (bf16 as the
trainer runs it: the fp32 weights and adapters under bf16 autocast, which is what
accelerate's ``mixed_precision="bf16"`` does to the model's forward; prompt sharing as the
config has it), on the same episodes, alternately; the ratio is fp32 time / bf16 time.
It needs a CPU with bf16 arithmetic (``avx512_bf16`` or AMX, which ``precision: auto``
looks for) and says so in one line where there is none:

    python benchmarks/grpo_update_cpu.py --compare precision --config configs/grpo-cpu-qwen2.5-coder-0.5b-run3b.yaml

``--compare group_prompt`` times, with the prompt shared and in the config's precision, a
group's prompt computed in each of its micro-batches against once for the group (its
gradient sent back through it once, after the last); the ratio is per micro-batch time /
once per group time:

    python benchmarks/grpo_update_cpu.py --compare group_prompt --config configs/grpo-cpu-qwen2.5-coder-0.5b-run3b.yaml
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, default=ROOT / "configs" / "grpo-cpu-qwen2.5-coder-0.5b.yaml")
    p.add_argument("--questions", type=int, default=4)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--compare", choices=["share_prefix", "precision", "group_prompt"], default="share_prefix")
    args = p.parse_args()

    import torch

    from sqlscout.models import open_backend
    from sqlscout.runner import Runner
    from sqlscout.scoring.gold import GoldResults
    from sqlscout.train.config import load_config
    from sqlscout.train.logprobs import Truncation, can_share_prefix
    from sqlscout.train.mask import train_sample
    from sqlscout.train.model import build_policy, resolve_precision
    from sqlscout.train.optim import build_optimizer
    from sqlscout.train.questions import load_questions
    from sqlscout.train.rollout import collect_groups
    from sqlscout.train.update import UpdateContext, grpo_update, micro_batches, prefix_batches

    config = load_config(args.config)
    if args.compare == "precision" and resolve_precision("auto") != "bf16":
        sys.exit("--compare precision: this CPU has no bf16 arithmetic (avx512_bf16 or AMX in /proc/cpuinfo); nothing to compare")
    policy = build_policy(config.model, kl_enabled=True, seed=config.seed)
    pool = load_questions(config.data)
    import random

    tasks = random.Random(args.seed).sample(pool, args.questions)
    rollout = config.rollout
    gguf = str(Path(config.model.name_or_path).expanduser())
    began = time.perf_counter()
    with open_backend(gguf, "llama-cpp", episodes=min(rollout.max_batch, args.questions * args.group_size),
                      token_budget=rollout.episode.token_budget) as backend, Runner(backend, rollout.runner_config(args.seed)) as runner:  # fmt: skip
        groups = collect_groups(
            runner, tasks, list(range(len(tasks))), group_size=args.group_size, seed=args.seed,
            reward=config.reward.build(), scale_by_std=False, gold=GoldResults(),
        )  # fmt: skip
    rolled = time.perf_counter() - began
    samples = [
        train_sample(r.token_ids, r.segments, r.logprobs, 0.5 - (k % 2))  # every episode trained, both variants alike
        for g in groups for k, r in enumerate(g.rollouts)
    ]  # fmt: skip
    tokens = sum(len(s.token_ids) for s in samples)
    trained = sum(s.n_trained for s in samples)
    max_tokens = config.optim.micro_batch_tokens
    shared_tokens = sum(
        prefix + len(group) * (max(len(samples[i].token_ids) for i in group) - prefix)
        for group, prefix in prefix_batches(samples, max_tokens)
    )  # fmt: skip
    padded = sum(len(g) * max(len(samples[i].token_ids) for i in g) for g in micro_batches([len(s.token_ids) for s in samples], max_tokens))
    assert can_share_prefix(policy.model)

    temperature = config.loss.temperature or rollout.sampling.temperature
    truncation = Truncation(rollout.sampling.top_k, rollout.sampling.top_p)
    bf16 = resolve_precision(config.model.precision) == "bf16"
    # name -> (share_prefix, under bf16 autocast, prompt in every micro-batch)
    if args.compare == "precision":
        variants = {"fp32": (config.optim.share_prefix, False, False), "bf16": (config.optim.share_prefix, True, False)}
    elif args.compare == "group_prompt":
        variants = {"prompt per micro-batch": (True, bf16, True), "prompt once per group": (True, bf16, False)}
    else:
        variants = {"whole episodes": (False, False, False), "prompt shared": (True, False, False)}
    optimizer, scheduler = build_optimizer(policy.model.parameters(), config.optim, config.steps)
    reference = policy.reference_fn(temperature)
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.reps):
        for name, (share, autocast, per_micro_batch) in variants.items():
            ctx = UpdateContext(policy.model, config.loss, temperature=temperature, kl_coef=0.01, reference=reference,
                                pad_id=policy.pad_id, truncation=truncation, share_prefix=share,
                                prompt_per_micro_batch=per_micro_batch)  # fmt: skip
            t0 = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                stats = grpo_update(ctx, optimizer, scheduler, samples, config.optim)
            times[name].append(time.perf_counter() - t0)
            print(f"  {name}: {times[name][-1]:.1f} s, {stats.computed} tokens computed", flush=True)
    (a, ta), (b, tb) = ((name, statistics.median(t)) for name, t in times.items())
    print(f"episodes: {len(samples)} ({args.questions} questions x {args.group_size}); rollout {rolled:.0f} s")
    print(f"tokens: {tokens} in all, {trained} trained; padded micro-batches {padded}, with the prompt shared {shared_tokens}")
    print(f"torch threads {torch.get_num_threads()}; update, median of {args.reps}: {a} {ta:.1f} s, "
          f"{b} {tb:.1f} s; ratio {ta / tb:.2f}x")


if __name__ == "__main__":
    main()
