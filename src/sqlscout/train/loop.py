"""GRPO for agentic text-to-SQL: the training loop.

Each step draws questions with the length curriculum, plays a group of episodes per
question against the real databases, rewards them with the evaluator's own scoring,
and takes one policy-gradient step on the tokens the model wrote. Where it departs
from textbook GRPO (Shao et al., 2024), and why:

1. **Multi-turn episodes.** A sample is a whole episode — up to 6 tool rounds and a
   final answer — and only the model's own tokens are trained (``mask.py``: tool
   results, budget lines and the forced final message are masked).
2. **Advantage = reward − group mean**, no division by the group's std (it inflates
   groups whose rewards barely differ); a group with equal rewards carries no signal
   and is left out of the update — or dropped and replaced by fresh questions
   (``rollout.equal_groups: resample``, DAPO's dynamic sampling).
3. **Asymmetric clip** 0.2 / 0.28 (DAPO's clip-higher keeps unlikely good tokens
   learnable) on a token-level surrogate, of the ratio pi_theta / pi_old, pi_old being
   the trainer's policy when the batch was sampled. With one update per batch (the
   recipe) that *is* the current policy: the ratio is 1 and the clip never binds
   (``clip_frac`` logs 0). It binds only with ``optim.mini_batches > 1``, on the updates
   after the first, where the policy has moved since sampling.
4. **Correction to the sampler, truncated.** The sampler's log-probabilities come back
   with every token; a truncated importance weight min(pi_old / pi_sampler, 2) corrects
   for the sampler computing other probabilities than the trainer (TIS: vLLM's kernels,
   bf16). Both sides are taken on one distribution: the samplers report log-probs after
   their top-k / top-p cut, and the trainer applies the same cut for the comparison, so
   equal weights give a weight of exactly 1.
5. **Constant normaliser.** The loss is the sum over tokens / 1024, averaged over the
   episodes that carry signal — those of groups with unequal rewards, over all
   processes (Dr. GRPO): no length bias from per-episode means, and a step's size does
   not shrink with the share of groups that happened to be uniform.
6. **k3 KL** to the frozen starting policy, its coefficient adapted to hold 0.005 per token.
7. **Length curriculum** on which questions are drawn (``curriculum.py``).
8. **One update per batch** (on-policy): AdamW, cosine schedule with 5 % warmup.

Everything else — checkpoints, telemetry, evaluation — is in its own module; this file
is the loop.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch
import yaml
from accelerate import Accelerator
from accelerate.utils import gather_object, set_seed

from sqlscout.backends.base import Backend
from sqlscout.env.task import Task
from sqlscout.errors import ConfigError
from sqlscout.runner import Runner, RunnerConfig
from sqlscout.train.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from sqlscout.train.config import TrainConfig, config_to_dict, load_config
from sqlscout.train.curriculum import LengthCurriculum
from sqlscout.train.demos import Demo, demonstration_groups, load_demos, require_in_pool, warmup_batches
from sqlscout.train.evaluation import evaluate, greedy
from sqlscout.train.kl import KLController
from sqlscout.train.logprobs import Truncation, can_share_prefix
from sqlscout.train.mask import train_sample
from sqlscout.train.model import build_policy, resolve_precision
from sqlscout.train.optim import build_optimizer
from sqlscout.train.processes import make_accelerator, replicas_agree
from sqlscout.train.questions import length_keys, load_questions, split_held_out
from sqlscout.scoring.gold import GoldResults
from sqlscout.train.rollout import Group, collect_groups
from sqlscout.train.pool import outside_pool
from sqlscout.train.states import State, draw_states, load_states
from sqlscout.train.sampler import Sampler
from sqlscout.train.memory import peak_memory_gb, reset_peak_memory, set_mmap_threshold, trim_heap
from sqlscout.train.telemetry import Telemetry, episode_records, episode_summaries, rollout_metrics
from sqlscout.train.update import UpdateContext, UpdateStats, grpo_update

__all__ = ["TrainRun", "train"]

StepCallback = Callable[[dict[str, Any]], None]


@dataclass
class TrainRun:
    """What a finished run leaves: its directory and the last step's telemetry (as seen
    by this process; ``main`` says whether it is the one that wrote them)."""

    out: Path
    steps: int
    last: dict[str, Any]
    main: bool = True


def train(
    config: TrainConfig,
    *,
    resume: bool = True,
    amend: bool = False,
    backend: Backend | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_step: StepCallback | None = None,
) -> TrainRun:
    """Train as ``config`` says; continue from the latest checkpoint in ``config.out``
    when ``resume`` (exactly: the remaining steps equal an uninterrupted run's).

    ``amend`` lets a resumed run go on under changed settings of the recipe
    (:data:`AMENDABLE`: reward, KL, loss, learning rate, sampling, episode); the change
    and the step it takes effect from are appended to ``amendments.jsonl`` in the run.

    ``backend`` replaces the sampler (tests pass a scripted one); by default episodes
    are sampled from the policy itself (``rollout.backend``). ``on_step`` gets each
    step's telemetry row after its checkpoint, if any, is written.
    """
    out = Path(config.out)
    if config.optim.heap_mmap_threshold_mb is not None:
        set_mmap_threshold(int(config.optim.heap_mmap_threshold_mb * 2**20))
    precision = resolve_precision(config.model.precision)
    accelerator = make_accelerator(precision)
    set_seed(config.seed)

    # -- the policy, its questions, its optimizer ---------------------------------
    kl = KLController(config.kl)
    checkpoint = latest_checkpoint(out) if resume else None  # a resumed run takes its checkpoint's weights
    policy = build_policy(config.model, kl_enabled=kl.enabled, seed=config.seed, init_adapters=checkpoint is None)
    pool, held_out = _questions(config)
    if config.rollout.questions_per_step > len(pool):
        raise ConfigError(f"rollout.questions_per_step ({config.rollout.questions_per_step}) exceeds the {len(pool)} training questions")
    curriculum = LengthCurriculum(length_keys(pool, config.curriculum.key, policy.tokenizer), config.curriculum, config.seed)
    optimizer, scheduler = build_optimizer(policy.model.parameters(), config.optim, config.steps)
    model, optimizer, scheduler = accelerator.prepare(policy.model, optimizer, scheduler)
    if policy.reference_model is not None:  # frozen: kept in the compute precision, not fp32
        policy.reference_model.to(accelerator.device, dtype=torch.bfloat16 if precision == "bf16" else torch.float32)
    temperature = config.loss.temperature or config.rollout.sampling.temperature
    # Both samplers (hf, vLLM) report log-probabilities after their top-k / top-p cut; the
    # update applies the same cut when it compares its probabilities with theirs.
    truncation = Truncation(config.rollout.sampling.top_k, config.rollout.sampling.top_p)
    reference = policy.reference_fn(temperature, wrapped=model) if kl.enabled else None

    # -- where episodes come from -------------------------------------------------
    sampler = Sampler(config.rollout, model, policy.tokenizer, accelerator, out, config.seed, backend=backend,
                      model_path=config.model.name_or_path)
    runner = Runner(sampler.backend, config.rollout.runner_config(config.seed))
    gold = GoldResults()
    warmup = _warmup(config, pool, accelerator)
    states = _states(config, pool)

    # -- resume ---------------------------------------------------------------------
    start = 0
    if not resume and accelerator.is_main_process:  # starting over: no stale checkpoint may be resumed later
        shutil.rmtree(out / "checkpoints", ignore_errors=True)
        shutil.rmtree(out / "eval", ignore_errors=True)
    accelerator.wait_for_everyone()
    if checkpoint is not None:
        amendments = _check_same_run(out, config, amend=amend)
        accelerator.wait_for_everyone()  # every process has read the recorded config before it is rewritten
        state = load_checkpoint(accelerator, checkpoint)
        start = int(state["step"])
        if amendments and accelerator.is_main_process:
            _record_amendments(out, start, amendments)
        curriculum.load_state_dict(state["curriculum"])
        kl.load_state_dict(state["kl"])
        sampler.sync()
        runner.backend = sampler.backend  # llama-cpp restarts on the new adapters
    if accelerator.is_main_process:
        out.mkdir(parents=True, exist_ok=True)
        _write_config(out, config)
    telemetry = Telemetry(
        out, start_step=start, tensorboard=config.telemetry.tensorboard, wandb=config.telemetry.wandb,
        wandb_project=config.telemetry.wandb_project, config=config_to_dict(config), enabled=accelerator.is_main_process,
    )  # fmt: skip
    if on_start is not None:
        on_start(start, config.steps)

    row: dict[str, Any] = {}
    try:
        if _eval_due(config, held_out, start) and not telemetry.has_eval(start):
            # The starting point of the held-out curve, or the evaluation an interruption
            # cut short: it follows its step's checkpoint, so the weights are the ones it
            # began with, and what it finished is kept.
            row = {"step": start, **_evaluate(config, sampler, held_out, runner.config, out, start, accelerator, resume=resume)}
            telemetry.log(row)
        for step in range(start, config.steps):
            began = time.perf_counter()
            reset_peak_memory()

            # 1. Experience: a group per question, scored, with advantages (or, in the
            #    warm-up, the step's demonstrations to imitate).
            lr = scheduler.get_last_lr()[0]
            if step < len(warmup):
                groups, drawn = _demonstrations(warmup[step], config, pool, runner, gold, policy.tokenizer, sampler.backend), []
            else:
                groups, drawn = _experience(step, config, pool, curriculum, runner, gold, accelerator, states, policy.tokenizer)
            rolled = time.perf_counter()

            # 2. One policy update on the episodes whose group carries signal.
            samples = [
                train_sample(r.token_ids, r.segments, r.logprobs, advantage)
                for g in groups if not g.uniform
                for r, advantage in zip(g.rollouts, g.advantages)
            ]  # fmt: skip
            ctx = UpdateContext(
                model, config.loss, temperature=temperature, kl_coef=kl.coef, reference=reference,
                pad_id=policy.pad_id, accelerator=accelerator, truncation=truncation,
                share_prefix=config.optim.share_prefix and can_share_prefix(policy.model),
            )  # fmt: skip
            sampler.release()  # its memory is the update's until sync() starts it on the new weights
            trim_heap()
            stats = grpo_update(ctx, optimizer, scheduler, samples, config.optim)
            trim_heap()  # the update's activations, freed, go back before llama.cpp starts again
            trained = _sum_over_processes(stats.tokens, accelerator)
            if trained:
                kl.update(_sum_over_processes(stats.kl_sum, accelerator) / trained)
            if not replicas_agree(model, accelerator):
                raise RuntimeError(f"the processes hold different weights after step {step + 1}: data parallelism is broken")
            sampler.sync()
            runner.backend = sampler.backend
            updated = time.perf_counter()

            # 3. Telemetry, evaluation, checkpoint.
            done = step + 1
            row = _step_row(done, groups, drawn, stats, curriculum, lr, ctx.kl_coef, (began, rolled, updated), accelerator)
            if step < len(warmup):
                row["warmup/demonstrations"] = float(sum(len(g.rollouts) for g in groups))
            telemetry.log(row)
            if config.telemetry.save_episodes:
                telemetry.log_episodes(_gathered(episode_records(done, groups), accelerator))
            if (config.checkpoint.every and done % config.checkpoint.every == 0) or done == config.steps:
                state = {"curriculum": curriculum.state_dict(), "kl": kl.state_dict()}
                save_checkpoint(
                    accelerator, model, policy.tokenizer, out, done, state, keep=config.checkpoint.keep,
                    pinned=lambda s: config.checkpoint.keep_evaluated and _eval_due(config, held_out, s),
                )  # fmt: skip
            if _eval_due(config, held_out, done):  # after the checkpoint: an interrupted evaluation resumes
                evaluated = _evaluate(config, sampler, held_out, runner.config, out, done, accelerator)
                telemetry.log({"step": done, **evaluated})
                row = {**row, **evaluated}
            if on_step is not None and accelerator.is_main_process:
                on_step(row)
    finally:
        telemetry.close()
        runner.close()
        sampler.close()
    accelerator.end_training()
    return TrainRun(out, config.steps, row, accelerator.is_main_process)


# -- the pieces of a step -----------------------------------------------------------


def _experience(step: int, config: TrainConfig, pool: list[Task], curriculum: LengthCurriculum, runner: Runner,
                gold: GoldResults, accelerator: Accelerator, states: list[State] | None = None,
                tokenizer: Any = None) -> tuple[list[Group], list[int]]:  # fmt: skip
    """Draw this step's questions, roll out and score their groups (this process's share).

    ``rollout.state_groups`` of them start from failure states drawn for the step (the
    same on every process and on resume), the rest are the curriculum's. With
    ``equal_groups: resample``, groups with equal rewards are replaced by fresh
    draws up to ``max_resample_rounds`` times; every process draws the same indices
    (the curriculum's state stays identical everywhere) and keeps its own share.
    """
    rollout = config.rollout
    reward = config.reward.build()
    drawn: list[int] = []
    kept: list[Group] = []
    seen: list[Group] = []
    if states:
        where = {t.question_id: i for i, t in enumerate(pool)}
        mine_states = draw_states(states, rollout.state_groups, config.seed, step)[accelerator.process_index :: accelerator.num_processes]
        indices = [where[s.question_id] for s in mine_states]
        seen += collect_groups(
            runner, [pool[i] for i in indices], indices,
            group_size=rollout.group_size, seed=_seed(config.seed, step, -1, accelerator.process_index),
            reward=reward, scale_by_std=config.loss.advantage_std, gold=gold,
            preludes=[s.replies for s in mine_states], tokenizer=tokenizer,
        )  # fmt: skip
        kept += [g for g in seen if not g.uniform] if rollout.equal_groups == "resample" else list(seen)
    wanted = rollout.questions_per_step - rollout.state_groups
    for round_ in range(1 + (rollout.max_resample_rounds if rollout.equal_groups == "resample" else 0)):
        if wanted == 0:
            break
        n = min(wanted, len(curriculum))
        indices = curriculum.draw(step, n)
        drawn += indices
        mine = indices[accelerator.process_index :: accelerator.num_processes]
        groups = collect_groups(
            runner, [pool[i] for i in mine], mine,
            group_size=rollout.group_size, seed=_seed(config.seed, step, round_, accelerator.process_index),
            reward=reward, scale_by_std=config.loss.advantage_std, gold=gold,
        )  # fmt: skip
        seen += groups
        kept += [g for g in groups if not g.uniform] if rollout.equal_groups == "resample" else groups
        if rollout.equal_groups == "keep":
            break
        wanted = int(_sum_over_processes(sum(1 for g in groups if g.uniform), accelerator))
    if rollout.equal_groups == "resample":
        # Telemetry describes every episode played; the update uses the informative ones.
        kept += [g for g in seen if g.uniform]
    return kept, drawn


def _warmup(config: TrainConfig, pool: list[Task], accelerator: Accelerator) -> list[list[Demo]]:
    """The warm-up's demonstrations, a batch per step (this process's share of each)."""
    if not config.warmup.steps:
        return []
    demos = load_demos(config.warmup.demos or "")
    require_in_pool(demos, (t.question_id for t in pool))
    batches = warmup_batches(demos, config.warmup.steps, config.seed)
    return [b[accelerator.process_index :: accelerator.num_processes] for b in batches]


def _states(config: TrainConfig, pool: list[Task]) -> list[State] | None:
    """The failure states a run's groups may start from (None without ``state_groups``);
    every one must be of a pool question."""
    if not config.rollout.state_groups:
        return None
    states = load_states(config.rollout.states or "")
    outside = outside_pool((s.question_id for s in states), (t.question_id for t in pool))
    if outside:
        raise ConfigError(f"rollout.states: {len(outside)} states are of questions outside the training pool (first: {outside[0]}): "
                          "build them from episodes on this config's pool")  # fmt: skip
    return states


def _demonstrations(batch: list[Demo], config: TrainConfig, pool: list[Task], runner: Runner, gold: GoldResults,
                    tokenizer: Any, backend: Backend) -> list[Group]:  # fmt: skip
    """A warm-up step's groups: its demonstrations played in the policy's tokens and its
    sampler's chat format, each to be imitated with advantage 1."""
    groups, dropped = demonstration_groups(
        batch, {t.question_id: t for t in pool}, {t.question_id: i for i, t in enumerate(pool)}, runner.config,
        config.reward.build(), gold, tokenizer=tokenizer, chat=backend.chat,
    )  # fmt: skip
    for why, n in dropped.items():
        print(f"warm-up: {n} demonstration(s) left out: {why}", flush=True)
    return groups


def _seed(seed: int, step: int, round_: int, process: int) -> int:
    """A distinct sampling seed per (run seed, step, resample round, process)."""
    digest = hashlib.blake2b(f"{seed}:{step}:{round_}:{process}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % (2**31 - 1)


def _questions(config: TrainConfig) -> tuple[list[Task], list[Task]]:
    """(training pool, held-out questions for periodic evaluation)."""
    pool = load_questions(config.data)
    if config.eval.data is not None:
        held = load_questions(config.eval.data)
    else:
        pool, held = split_held_out(pool, config.eval.held_out, config.seed)
    return pool, held[: config.eval.questions]


def _step_row(step: int, groups: list[Group], drawn: list[int], stats: UpdateStats, curriculum: LengthCurriculum,
              lr: float, kl_coef: float, times: tuple[float, float, float], accelerator: Accelerator) -> dict[str, Any]:  # fmt: skip
    """The step's telemetry row; ``times`` are (began, rolled out, updated)."""
    began, rolled, updated = times

    def total(name: str) -> float:  # the update's sums, over every process
        return float(_sum_over_processes(getattr(stats, name), accelerator))

    trained = max(total("tokens"), 1.0)
    episodes = _gathered(episode_summaries(groups), accelerator)
    elapsed = updated - began
    row = {"step": step, **rollout_metrics(episodes)}
    row.update(
        {
            "kl": total("kl_sum") / trained,
            "kl_coef": kl_coef,
            "clip_frac": total("clipped") / trained,
            "entropy": total("entropy_sum") / max(total("entropy_tokens"), 1),
            "is_weight": total("is_weight_sum") / trained,
            "loss": total("loss"),
            "grad_norm": stats.grad_norm,
            "tokens/trained": float(_sum_over_processes(stats.tokens, accelerator)),
            "tokens/computed": total("computed"),
            "update/recomputed": total("recomputed"),
            "curriculum/mean_key": curriculum.mean_key(drawn),
            "curriculum/beta": curriculum.beta(step - 1),
            "curriculum/epoch": curriculum.epoch,
            "lr": lr,
            "throughput/tokens_per_s": row["tokens/generated"] / elapsed if elapsed > 0 else 0.0,
            "time/rollout_s": rolled - began,
            "time/update_s": updated - rolled,
            "time/step_s": elapsed,
            "memory/peak_gb": peak_memory_gb(),
        }
    )
    return row


def _eval_due(config: TrainConfig, held_out: list[Task], step: int) -> bool:
    """Whether the held-out evaluation runs after ``step`` (0: the starting point)."""
    every = config.eval.every
    if step == 0 and not config.eval.at_start:
        return False
    return bool(every and held_out) and (step % every == 0 or step == config.steps)


def _evaluate(config: TrainConfig, sampler: Sampler, held_out: list[Task], runner_config: RunnerConfig, out: Path,
              step: int, accelerator: Accelerator, *, resume: bool = False) -> dict[str, Any]:  # fmt: skip
    metrics: dict[str, Any] = {}
    if accelerator.is_main_process:
        metrics = evaluate(
            sampler.backend, held_out, greedy(runner_config, config.eval.temperature), out / "eval" / f"step-{step:06d}",
            benchmark=(config.eval.data or config.data).benchmark, model=str(config.model.name_or_path or "random-init"),
            seed=config.seed, resume=resume,
        )  # fmt: skip
    accelerator.wait_for_everyone()
    return metrics


# Settings that split the same work differently without changing what is computed (the
# update's gradient does not depend on micro-batching, a test checks it), or that only
# decide how often the held-out evaluation looks (it changes no weight, optimizer state,
# curriculum draw or sampling seed): a run may continue with other values, e.g. a smaller
# micro-batch on a machine with less memory, or a denser held-out curve.
RESUMABLE_CHANGES = frozenset(
    {
        "optim.micro_batch_tokens",
        "optim.heap_mmap_threshold_mb",
        "rollout.tool_workers",
        "telemetry.progress",
        "checkpoint.keep",
        "checkpoint.keep_evaluated",
        "eval.every",
    }
)


# Settings of the recipe itself that a run may continue under when asked (``--amend``):
# they change what the policy learns from the next step on, never what was already
# learned or the state a checkpoint holds. Each amendment is recorded in the run.
AMENDABLE = ("reward.", "kl.", "loss.", "optim.lr", "rollout.sampling.", "rollout.episode.", "rollout.greedy_per_group")


def _check_same_run(out: Path, config: TrainConfig, *, amend: bool = False) -> dict[str, dict[str, Any]]:
    """Refuse to continue a run with different settings (``steps`` and the
    :data:`RESUMABLE_CHANGES` may change; with ``amend``, the :data:`AMENDABLE` ones
    too, which are returned as ``{path: {"from": old, "to": new}}``)."""
    recorded = out / "config.yaml"
    if not recorded.exists():
        return {}
    before = config_to_dict(load_config(recorded).replace(steps=config.steps, out=config.out))
    now = config_to_dict(config)
    changed = sorted(set(_differences(before, now)) - RESUMABLE_CHANGES)
    amended = [path for path in changed if amend and (path + ".").startswith(AMENDABLE)]
    refused = [path for path in changed if path not in amended]
    if refused:
        hint = "" if amend else f" or --amend where it is one of {', '.join(p.rstrip('.') for p in AMENDABLE)}"
        raise ConfigError(
            f"{out} holds a run started with other settings ({', '.join(refused)}); "
            f"continue it with the same config{hint}, start over with --fresh, or choose another --out"
        )
    return {path: {"from": _at(before, path), "to": _at(now, path)} for path in amended}


def _at(tree: dict[str, Any], path: str) -> Any:
    for key in path.split("."):
        tree = tree.get(key) if isinstance(tree, dict) else None
    return tree


def _record_amendments(out: Path, step: int, changes: dict[str, dict[str, Any]]) -> None:
    """Append ``changes`` to the run's ``amendments.jsonl``: from ``step`` on, it trained under them."""
    line = {"from_step": step, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "changes": changes}
    with (out / "amendments.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line, sort_keys=True) + "\n")


def _differences(a: Any, b: Any, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in a.keys() | b.keys() for d in _differences(a.get(k), b.get(k), f"{prefix}{k}.")]
    return [] if a == b else [prefix.rstrip(".")]


def _write_config(out: Path, config: TrainConfig) -> None:
    (out / "config.yaml").write_text(yaml.safe_dump(config_to_dict(config), sort_keys=False), encoding="utf-8")


def _gathered(items: list[dict[str, Any]], accelerator: Accelerator) -> list[dict[str, Any]]:
    """Every process's ``items``, in process order (a collective: every process calls it)."""
    return gather_object(items) if accelerator.num_processes > 1 else items


def _sum_over_processes(value: float, accelerator: Accelerator) -> float:
    """``value`` summed over every process (a collective: every process calls it); an
    integer stays an integer."""
    if accelerator.num_processes == 1:
        return value
    total = accelerator.reduce(torch.tensor(value, device=accelerator.device, dtype=torch.float64), reduction="sum")
    return int(total.round()) if isinstance(value, int) else float(total)
