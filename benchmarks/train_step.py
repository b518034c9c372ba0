"""Training-step cost: our GRPO update against a plain step, and our full step against TRL.

Part 1 — the update. The same tiny model (configs/tiny-cpu.yaml's random Qwen3.5 with
the real tokenizer) and the same batch of real episodes (scripted explorations of Spider
databases: list tables, describe, run the gold query, submit — so transcripts have tool
results and several model turns). Three variants, timed in one process in rounds that
interleave them (so a change in the machine's load hits all alike; median of ``--reps``
rounds after a warm-up); on a CPU, peak memory is measured in a fresh process per variant:

- ``plain``: a forward + backward + AdamW step with cross-entropy on the same trained
  tokens, micro-batched the same way — the ceiling for "train on these tokens";
- ``grpo``: our update (clipped surrogate, truncated IS weight, entropy) without KL;
- ``grpo+kl``: the same with the k3 KL term, which needs the frozen reference's forward.

Printed: seconds per step, trained tokens per second, peak memory (GPU: allocated;
CPU: resident growth over one step), and the throughput ratio plain time / variant time
(goal >= 0.85).

Part 2 — a full step (rollout + update) of configs/tiny-cpu.yaml against TRL's
``GRPOTrainer`` (PyPI ``trl``) given the same model, group size, questions and sampling,
with an equivalent environment through ``environment_factory``: the eight tools as
methods over the same read-only sandbox, ``get_reward`` scoring the submitted SQL with
the same reward. Ours is timed twice: as ``sqlscout train`` runs it (groups whose
rewards are all equal — every group, with a random model — are left out of the update)
and with the update forced on every episode (non-zero advantages), which is TRL's
amount of work. Per-step times exclude the first step (warm-up).

    python benchmarks/train_step.py                # both parts
    python benchmarks/train_step.py --part update --episodes 16 --reps 3
    python benchmarks/train_step.py --part full --steps 3

Part 1 on a GPU (benchmarks/gpu_train_step.sh): ``--synthetic qwen3.5-2b`` times the same
three variants for a randomly initialised model with Qwen3.5-2B's configuration, bf16
autocast through accelerate and gradient checkpointing (the recipe's settings), on the
recipe's batch shape — 144 episodes of ``--seq-len`` tokens whose model turns (the
trained tokens) alternate with environment turns — packed into micro-batches of
``--micro-batch-tokens``. No tokenizer or data is needed for it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
CONFIG = REPO / "configs" / "tiny-cpu.yaml"


def tiny_config(out: Path, **episode: Any) -> Any:
    import yaml

    from sqlscout.train.config import config_from_dict

    data = yaml.safe_load(CONFIG.read_text())
    data["data"]["path"] = str(DATA / "spider")
    data["out"] = str(out)
    data["telemetry"] = {"tensorboard": False, "progress": False, "save_episodes": False}
    data["checkpoint"] = {"every": 0, "keep": 1}
    data["rollout"].setdefault("episode", {}).update(episode)
    return config_from_dict(data)


# -- part 1: the update against a plain step ------------------------------------------


def explorer(questions: dict[str, str]) -> Any:
    import json as _json

    def reply(turn: Any) -> str:
        gold = next(sql for q, sql in questions.items() if q in turn.prompt)
        calls = [
            [{"tool": "list_tables", "args": {}}],
            [{"tool": "run_query", "args": {"sql": gold}}],
            [{"tool": "submit_sql", "args": {"sql": gold}}],
        ][min(turn.turn, 2)]
        return "I will look at the database first.\n" + "\n".join(_json.dumps(c) for c in calls)

    return reply


def episodes(n: int, out: Path) -> tuple[Any, list[Any]]:
    """(config, TrainSamples): ``n`` real scripted episodes with alternating advantages."""
    from sqlscout.backends.offline_tokenizers import qwen3_5_tokenizer
    from sqlscout.backends.scripted import ScriptedBackend
    from sqlscout.runner import RunnerConfig, run_all
    from sqlscout.train.mask import train_sample
    from sqlscout.train.questions import load_questions

    cfg = tiny_config(out, max_turn_tokens=256, max_rounds=3)
    tasks = load_questions(cfg.data)
    questions = {t.question: t.gold_sql for t in tasks}
    backend = ScriptedBackend(explorer(questions), tokenizer=qwen3_5_tokenizer())
    rollouts = run_all(backend, tasks[:n], RunnerConfig(episode=cfg.rollout.episode))
    samples = [train_sample(r.token_ids, r.segments, r.logprobs, 1.0 if i % 2 else -1.0) for i, r in enumerate(rollouts)]
    return cfg, samples


def plain_step(model: Any, optimizer: Any, samples: list[Any], pad_id: int, max_tokens: int) -> None:
    """Cross-entropy on the trained tokens, micro-batched like the update: the ceiling."""
    import torch

    from sqlscout.train.logprobs import _supports_mask_keep
    from sqlscout.train.update import micro_batches, pad_batch

    device = next(model.parameters()).device
    total = sum(s.n_trained for s in samples)
    for group in micro_batches([len(s.token_ids) for s in samples], max_tokens):
        ids, attention, trained = pad_batch([samples[i] for i in group], pad_id, device)
        predicting = torch.zeros_like(trained)
        predicting[:, :-1] = trained[:, 1:]
        if _supports_mask_keep():
            logits = model(input_ids=ids, attention_mask=attention, logits_to_keep=predicting, use_cache=False).logits
        else:  # older transformers (the H200 has 5.17) keep whole columns only
            columns = predicting.any(0).nonzero().squeeze(-1)
            out = model(input_ids=ids, attention_mask=attention, logits_to_keep=columns, use_cache=False)
            logits = out.logits[predicting[:, columns]]
        loss = torch.nn.functional.cross_entropy(logits.float(), ids[trained], reduction="sum") / total
        loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


QWEN3_5_2B = {  # Qwen/Qwen3.5-2B's text model (config.json's text_config)
    "model_type": "qwen3_5_text", "vocab_size": 248320, "hidden_size": 2048, "intermediate_size": 6144,
    "num_hidden_layers": 24, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256,
    "linear_num_key_heads": 16, "linear_num_value_heads": 16, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
    "linear_conv_kernel_dim": 4, "full_attention_interval": 4, "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
    "max_position_embeddings": 262144,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25},
}  # fmt: skip


def synthetic_samples(n: int, seq_len: int, vocab: int, prompt: int = 1024, turn: int = 256, env: int = 512) -> list[Any]:
    """``n`` episodes of ``seq_len`` tokens: a prompt, then model turns of ``turn`` tokens
    (trained) alternating with environment turns of ``env`` tokens (masked)."""
    import random

    from sqlscout.env.trace import SegmentKind
    from sqlscout.train.mask import train_sample

    rng = random.Random(0)
    samples = []
    for i in range(n):
        segments, at = [(SegmentKind.PROMPT, 0, min(prompt, seq_len))], min(prompt, seq_len)
        model_turn = True
        while at < seq_len:
            size = min(turn if model_turn else env, seq_len - at)
            segments.append((SegmentKind.MODEL if model_turn else SegmentKind.ENV, at, at + size))
            at, model_turn = at + size, not model_turn
        ids = [rng.randrange(vocab) for _ in range(seq_len)]
        samples.append(train_sample(ids, segments, [-1.0] * seq_len, 1.0 if i % 2 else -1.0))
    return samples


VARIANTS = ("plain", "grpo", "grpo+kl")


def setup(args: argparse.Namespace, variants: tuple[str, ...]) -> dict[str, Any]:
    """The model, its optimizer, the batch and one step function per variant, as the trainer
    runs them: accelerate (bf16 autocast on a GPU), gradient checkpointing when the config
    asks, a frozen reference copy in the compute precision for the KL variant."""
    import torch
    from accelerate import Accelerator

    from sqlscout.train.config import LossConfig, ModelConfig, OptimConfig
    from sqlscout.train.logprobs import Truncation, token_logprobs
    from sqlscout.train.model import _build_model, enable_checkpointing, resolve_precision
    from sqlscout.train.update import UpdateContext, grpo_update

    precision = resolve_precision("auto")
    accelerator = Accelerator(mixed_precision="bf16" if precision == "bf16" else "no")
    if args.synthetic:
        spec = QWEN3_5_2B if args.synthetic == "qwen3.5-2b" else __import__("yaml").safe_load(CONFIG.read_text())["model"]["random_init"]
        samples = synthetic_samples(args.episodes, args.seq_len, spec["vocab_size"])
        checkpointing, max_tokens = not args.no_checkpointing, args.micro_batch_tokens
    else:
        with tempfile.TemporaryDirectory() as tmp:
            cfg, samples = episodes(args.episodes, Path(tmp))
        spec, checkpointing, max_tokens = dict(cfg.model.random_init), cfg.model.gradient_checkpointing, cfg.optim.micro_batch_tokens
    build = ModelConfig(random_init=spec, tokenizer="qwen3.5")
    with torch.device(accelerator.device):  # initialise on the GPU: a 2B random init on a CPU takes minutes
        model = _build_model(build, seed=0)
        ref_model = _build_model(build, seed=0).eval().requires_grad_(False) if "grpo+kl" in variants else None
    model.config.use_cache = False
    if checkpointing:
        enable_checkpointing(model)
    if ref_model is not None:
        ref_model.to(dtype=torch.bfloat16 if precision == "bf16" else torch.float32)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    model, optimizer = accelerator.prepare(model, optimizer)

    def reference(ids: Any, attention: Any, trained: Any) -> Any:
        with torch.autocast(ids.device.type, enabled=False):
            return token_logprobs(ref_model, ids, attention, trained, temperature=0.6)[0]

    def grpo(kl: bool) -> Any:
        ctx = UpdateContext(model, LossConfig(), temperature=0.6, kl_coef=0.01 if kl else 0.0,
                            reference=reference if kl else None, pad_id=0, accelerator=accelerator,
                            truncation=Truncation(20, 0.95))  # as the loop: the sampler's cut, for the IS weight  # fmt: skip
        return lambda: grpo_update(ctx, optimizer, None, samples, OptimConfig(micro_batch_tokens=max_tokens))

    def plain() -> None:
        with accelerator.autocast():
            plain_step(model, optimizer, samples, 0, max_tokens)

    steps = {"plain": plain, "grpo": grpo(False), "grpo+kl": grpo(True)}
    model.train()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return {
        "steps": {v: steps[v] for v in variants},
        "device": device,
        "device_name": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "trained_tokens": sum(s.n_trained for s in samples),
        "total_tokens": sum(len(s.token_ids) for s in samples),
        "episodes": len(samples),
        "parameters": sum(p.numel() for p in model.parameters()),
        "checkpointing": checkpointing,
    }


def measure_times(args: argparse.Namespace) -> dict[str, Any]:
    """Seconds per step of each variant, timed in rounds that interleave the variants (so a
    change in the machine's load hits all of them alike); on a GPU, peak memory too."""
    import torch

    bench = setup(args, VARIANTS)
    device = bench["device"]
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    peak: dict[str, float] = {}
    for variant, step in bench["steps"].items():  # warm-up (and the optimizer state's allocation)
        start = time.perf_counter()
        step()
        print(f"[train_step] warm-up {variant}: {time.perf_counter() - start:.2f} s", file=sys.stderr, flush=True)
    for round_ in range(args.reps):
        for variant, step in bench["steps"].items():
            if device == "cuda":
                torch.cuda.reset_peak_memory_stats()
            _sync(device)
            start = time.perf_counter()
            step()
            _sync(device)
            times[variant].append(time.perf_counter() - start)
            print(f"[train_step] round {round_ + 1} {variant}: {times[variant][-1]:.2f} s", file=sys.stderr, flush=True)
            if device == "cuda":
                peak[variant] = max(peak.get(variant, 0.0), torch.cuda.max_memory_allocated() / 2**20)
    info = {k: v for k, v in bench.items() if k != "steps"}
    return {**info, "step_s": {v: statistics.median(t) for v, t in times.items()}, "all_s": times, "peak_mem_mb": peak}


def measure_memory(args: argparse.Namespace, variant: str) -> float:
    """Peak resident memory added by one step of ``variant`` (after a warm-up), in MiB (CPU)."""
    bench = setup(args, (variant,))
    step = bench["steps"][variant]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    step()
    step()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before) / 2**20


def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def _child(args: argparse.Namespace, mode: str, variant: str | None = None) -> Any:
    cmd = [sys.executable, __file__, "--child", mode, "--episodes", str(args.episodes), "--reps", str(args.reps),
           "--threads", str(args.threads), "--seq-len", str(args.seq_len), "--micro-batch-tokens", str(args.micro_batch_tokens)]  # fmt: skip
    if variant:
        cmd += ["--variant", variant]
    if args.synthetic:
        cmd += ["--synthetic", args.synthetic] + (["--no-checkpointing"] if args.no_checkpointing else [])
    # stderr passes through: progress lines appear as they happen (and survive a timeout)
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env={**os.environ, "TRANSFORMERS_VERBOSITY": "error"})
    if done.returncode != 0:
        sys.exit(f"{mode} {variant or ''} failed (exit {done.returncode}); its error is above")
    return json.loads(done.stdout.strip().splitlines()[-1])


def part_update(args: argparse.Namespace) -> None:
    timing = _child(args, "times")
    print(f"times: {json.dumps(timing)}", flush=True)  # kept if what follows dies
    peak = timing["peak_mem_mb"]
    if timing["device"] != "cuda":  # CPU: peak RSS is per process, so one process per variant
        peak = {v: _child(args, "memory", v) for v in VARIANTS}
    t = timing["step_s"]
    print(f"\n== Part 1: GRPO update vs a plain step ({timing['episodes']} episodes, {timing['total_tokens']} tokens, "
          f"{timing['trained_tokens']} trained; {timing['device_name']}; {timing['parameters'] / 1e6:.0f} M parameters; "
          f"gradient checkpointing {'on' if timing['checkpointing'] else 'off'}; median of {args.reps}) ==")  # fmt: skip
    memory = "peak GPU MiB" if timing["device"] == "cuda" else "peak RSS +MiB"
    print(f"{'variant':10} {'s/step':>8} {'trained tok/s':>14} {memory:>14} {'throughput vs plain':>20}")
    for v in VARIANTS:
        print(f"{v:10} {t[v]:8.3f} {timing['trained_tokens'] / t[v]:14.1f} {peak[v]:14.1f} {t['plain'] / t[v]:19.1%}")
    verdict = {v: "met" if t["plain"] / t[v] >= 0.85 else "NOT met" for v in ("grpo", "grpo+kl")}
    print(f"goal: >= 85 % of plain throughput — {verdict['grpo']} without KL, {verdict['grpo+kl']} with KL "
          "(the KL term needs the reference model's forward pass, which the plain step does not do)")  # fmt: skip


# -- part 2: a full step against TRL's GRPOTrainer ---------------------------------------


def ours_loop(steps: int) -> list[float]:
    """``sqlscout train`` itself on configs/tiny-cpu.yaml: per-step seconds."""
    from sqlscout.train.loop import train

    with tempfile.TemporaryDirectory() as tmp:
        cfg = tiny_config(Path(tmp) / "run").replace(steps=steps + 1)
        train(cfg)
        rows = [json.loads(line) for line in (Path(tmp) / "run" / "telemetry.jsonl").read_text().splitlines()]
    return [r["time/step_s"] for r in rows[1:]]


def ours_forced(steps: int) -> list[float]:
    """The loop's own pieces with the update forced on every episode (TRL's amount of work)."""
    import torch

    from sqlscout.runner import Runner
    from sqlscout.train.curriculum import LengthCurriculum
    from sqlscout.train.mask import train_sample
    from sqlscout.train.model import build_policy
    from sqlscout.train.optim import build_optimizer
    from sqlscout.train.questions import length_keys, load_questions
    from sqlscout.train.rollout import GoldCache, collect_groups
    from sqlscout.train.sampler import Sampler
    from sqlscout.train.logprobs import Truncation
    from sqlscout.train.update import UpdateContext, grpo_update

    with tempfile.TemporaryDirectory() as tmp:
        cfg = tiny_config(Path(tmp))
        from accelerate import Accelerator

        accelerator = Accelerator(mixed_precision="no")
        policy = build_policy(cfg.model, kl_enabled=True, seed=0)
        pool = load_questions(cfg.data)
        curriculum = LengthCurriculum(length_keys(pool, "sql_tokens", policy.tokenizer), cfg.curriculum, 0)
        optimizer, scheduler = build_optimizer(policy.model.parameters(), cfg.optim, steps + 1)
        model, optimizer, scheduler = accelerator.prepare(policy.model, optimizer, scheduler)
        sampler = Sampler(cfg.rollout, model, policy.tokenizer, accelerator, Path(tmp), 0)
        runner = Runner(sampler.backend, cfg.rollout.runner_config(0))
        reference = policy.reference_fn(0.6, wrapped=model)
        times = []
        for step in range(steps + 1):
            start = time.perf_counter()
            indices = curriculum.draw(step, cfg.rollout.questions_per_step)
            groups = collect_groups(runner, [pool[i] for i in indices], indices, group_size=cfg.rollout.group_size,
                                    seed=step, reward=cfg.reward.build(), scale_by_std=False, gold=GoldCache())  # fmt: skip
            samples = [train_sample(r.token_ids, r.segments, r.logprobs, 1.0 if k % 2 else -1.0)
                       for g in groups for k, r in enumerate(g.rollouts)]  # fmt: skip
            ctx = UpdateContext(model, cfg.loss, temperature=0.6, kl_coef=0.01, reference=reference, pad_id=policy.pad_id,
                                accelerator=accelerator, truncation=Truncation(20, 0.95))  # fmt: skip
            grpo_update(ctx, optimizer, scheduler, samples, cfg.optim)
            times.append(time.perf_counter() - start)
        runner.close()
        del torch
    return times[1:]


class SpiderSQLEnv:
    """The sqlscout tools as a TRL environment: one instance per rollout, reset per question."""

    def reset(self, **example: Any) -> None:
        from sqlscout.env.sandbox import Database

        self.db = Database(example["db_path"])
        self.gold = example["gold_sql"]
        self.submitted: str | None = None

    def _call(self, name: str, **args: Any) -> str:
        from sqlscout.env.tools import call_tool

        return call_tool(self.db, name, args).text

    def list_tables(self) -> str:
        """List the tables of the database.

        Returns:
            The table names.
        """
        return self._call("list_tables")

    def describe_table(self, table_name: str) -> str:
        """Show a table's CREATE TABLE statement.

        Args:
            table_name: The table to describe.

        Returns:
            The CREATE TABLE statement.
        """
        return self._call("describe_table", table_name=table_name)

    def foreign_keys(self, table_name: str) -> str:
        """Show a table's foreign keys, both directions.

        Args:
            table_name: The table.

        Returns:
            Its foreign keys.
        """
        return self._call("foreign_keys", table_name=table_name)

    def join_path(self, table_a: str, table_b: str) -> str:
        """The shortest chain of foreign-key joins between two tables.

        Args:
            table_a: The first table.
            table_b: The second table.

        Returns:
            The join chain.
        """
        return self._call("join_path", table_a=table_a, table_b=table_b)

    def sample_rows(self, table_name: str, limit: int = 5) -> str:
        """A few rows of a table.

        Args:
            table_name: The table.
            limit: How many rows.

        Returns:
            The rows.
        """
        return self._call("sample_rows", table_name=table_name, limit=limit)

    def distinct_values(self, table_name: str, column_name: str, limit: int = 10) -> str:
        """Distinct values of a column, most frequent first.

        Args:
            table_name: The table.
            column_name: The column.
            limit: How many values.

        Returns:
            The values with their counts.
        """
        return self._call("distinct_values", table_name=table_name, column_name=column_name, limit=limit)

    def run_query(self, sql: str) -> str:
        """Run a SQLite query and show the first rows.

        Args:
            sql: The query.

        Returns:
            The result.
        """
        return self._call("run_query", sql=sql)

    def submit_sql(self, sql: str) -> str:
        """Submit the final SQL answer.

        Args:
            sql: The final query.

        Returns:
            A confirmation.
        """
        self.submitted = sql
        return "Submitted."

    def get_reward(self) -> float:
        from sqlscout.scoring import REWARD_PRESETS, reward, score_sql

        scored = score_sql(self.db, self.submitted, self.gold)
        return reward(scored, REWARD_PRESETS["sqale-dense"], pred_sql=self.submitted, gold_sql=self.gold)


def trl_steps(steps: int) -> list[float]:
    """TRL's GRPOTrainer on the same model, questions, group size and sampling: per-step seconds."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from sqlscout.train.model import build_policy
    from sqlscout.train.questions import load_questions

    with tempfile.TemporaryDirectory() as tmp:
        cfg = tiny_config(Path(tmp))
        policy = build_policy(cfg.model, kl_enabled=False, seed=0)
        # TRL builds its reference model from the policy's path: hand it the same weights on disk.
        model_dir = Path(tmp) / "model"
        policy.model.save_pretrained(str(model_dir))
        policy.tokenizer.save_pretrained(str(model_dir))
        pool = load_questions(cfg.data)
        rows = [{"prompt": [{"role": "user", "content": t.question}], "db_path": str(t.db_path), "gold_sql": t.gold_sql}
                for t in pool]  # fmt: skip
        # Our episode writes at most (max_rounds + 1) turns of max_turn_tokens tokens.
        budget = (cfg.rollout.episode.max_rounds + 1) * (cfg.rollout.episode.max_turn_tokens or 16)
        args = GRPOConfig(
            output_dir=tmp, max_steps=steps + 1, per_device_train_batch_size=cfg.rollout.group_size * cfg.rollout.questions_per_step,
            num_generations=cfg.rollout.group_size, max_completion_length=budget, temperature=0.6, top_p=0.95, top_k=20,
            beta=0.01, epsilon=0.2, epsilon_high=0.28, loss_type="dr_grpo", learning_rate=cfg.optim.lr,
            max_tool_calling_iterations=cfg.rollout.episode.max_rounds, use_cpu=True, bf16=False, report_to="none",
            save_strategy="no", logging_steps=1, seed=0, gradient_checkpointing=False,
        )  # fmt: skip
        times: list[float] = []

        class Timer(TrainerCallback):
            def on_step_begin(self, *a: Any, **k: Any) -> None:
                self.start = time.perf_counter()

            def on_step_end(self, *a: Any, **k: Any) -> None:
                times.append(time.perf_counter() - self.start)

        trainer = GRPOTrainer(
            model=str(model_dir), args=args, train_dataset=Dataset.from_list(rows), processing_class=policy.tokenizer,
            environment_factory=SpiderSQLEnv, callbacks=[Timer()],
        )  # fmt: skip
        trainer.train()
    return times[1:]


def part_full(args: argparse.Namespace) -> None:
    loop = ours_loop(args.steps)
    forced = ours_forced(args.steps)
    trl = trl_steps(args.steps)
    mean = statistics.fmean
    print(f"\n== Part 2: a full step (rollout + update) of configs/tiny-cpu.yaml vs TRL GRPOTrainer ({args.steps} steps after warm-up) ==")
    print(f"{'trainer':44} {'s/step':>8} {'TRL time / ours':>16}")
    for name, t in (
        ("sqlscout train (uniform groups not updated)", loop),
        ("sqlscout, update forced on every episode", forced),
        ("TRL GRPOTrainer + environment_factory", trl),
    ):
        print(f"{name:44} {mean(t):8.2f} {mean(trl) / mean(t):15.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("update", "full", "all"), default="all")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1 is fastest on a shared 2-core box)")
    parser.add_argument("--synthetic", choices=("qwen3.5-2b", "tiny-cpu"), help="part 1 on synthetic episodes for a random model of this configuration")
    parser.add_argument("--seq-len", type=int, default=4096, help="synthetic episode length in tokens")
    parser.add_argument("--micro-batch-tokens", type=int, default=32768, help="padded tokens per micro-batch (synthetic)")
    parser.add_argument("--no-checkpointing", action="store_true", help="synthetic: no gradient checkpointing")
    parser.add_argument("--child", choices=("times", "memory"), help=argparse.SUPPRESS)
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    if args.child == "times":
        print(json.dumps(measure_times(args)))
        return
    if args.child == "memory":
        print(json.dumps(measure_memory(args, args.variant)))
        return
    if args.part in ("update", "all"):
        part_update(args)
    if args.part in ("full", "all"):
        part_full(args)


if __name__ == "__main__":
    main()
