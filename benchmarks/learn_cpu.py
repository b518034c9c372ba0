"""Learning on a real model, on a CPU: GRPO with LoRA on Qwen2.5-Coder-0.5B-Instruct.

One command runs the whole experiment, resumably, in ``--out``:

1. ``eval-before/``: the starting policy on a fixed slice of Spider dev (``--eval-questions``
   drawn with ``--select random --seed 0`` from the dev questions whose database is
   present), agent mode, schema full, constraints off, greedy, through llama.cpp on the
   GGUF file;
2. training (``configs/learn-cpu-qwen2.5-coder-0.5b.yaml``, the trainer's own loop:
   ``telemetry.jsonl``, ``episodes.jsonl``, ``checkpoints/``): the update on the
   dequantised fp32 weights with LoRA, the rollouts sampled by llama.cpp from the GGUF
   file with the policy's current adapters (``rollout.backend: llama-cpp``);
3. ``eval-after/``: the last checkpoint's adapters, written as a GGUF LoRA, on the same
   slice through llama.cpp;
4. ``report.md`` (and stdout): the before/after table and the per-step curves (outcome
   mix, episode shape, reward, KL), a snippet for docs/training.md; ``report.json``.

Run again after an interruption and it continues where it stopped (evaluations from
their last finished episode, training from its last checkpoint). The training
questions are Spider's train split when its question files are present; otherwise
(``--train-source dev-rest``, what the shared data allows: it has the training
databases but not their questions) the dev questions outside the evaluation slice,
minus any whose gold SQL is also an evaluated question's on the same database (Spider
phrases many questions twice), so no evaluated question or its paraphrase is trained on.

    nice -n 19 python benchmarks/learn_cpu.py --out /work/runs/learn --steps 8

``--eval-questions 5 --steps 1 --questions-per-step 2 --group-size 2`` is the timing probe.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "learn-cpu-qwen2.5-coder-0.5b.yaml"
SPIDER = ROOT.parent / "shared" / "data" / "spider"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("runs/learn"), help="run directory (resumed when it exists)")
    p.add_argument("--config", type=Path, default=CONFIG, help="the trainer config to scale")
    p.add_argument("--spider", type=Path, default=SPIDER, help="the Spider folder")
    p.add_argument("--model", default=None, help="override model.name_or_path (a .gguf file or a model directory)")
    p.add_argument("--steps", type=int, default=None, help="training steps (default: the config's)")
    p.add_argument("--questions-per-step", type=int, default=None)
    p.add_argument("--group-size", type=int, default=None)
    p.add_argument("--max-rounds", type=int, default=None)
    p.add_argument("--eval-questions", type=int, default=50, help="size of the fixed Spider dev slice")
    p.add_argument("--eval-batch", type=int, default=8, help="evaluation episodes generated together")
    p.add_argument("--train-source", choices=("auto", "train", "dev-rest"), default="auto")
    p.add_argument("--phases", default="before,train,after,report", help="comma-separated subset to run")
    return p.parse_args(argv)


# -- questions ---------------------------------------------------------------------


def eval_slice(spider: Path, n: int) -> list[Any]:
    """The fixed evaluation questions: ``n`` Spider dev questions drawn with seed 0 (as
    ``sqlscout eval --benchmark spider --limit n --select random --seed 0 --missing-db skip``)."""
    from sqlscout.data import load_tasks
    from sqlscout.evaluation.run import select_tasks

    return select_tasks(load_tasks("spider", spider, split="dev", missing_db="skip"), n, "random", 0)


def _normal_sql(sql: str | None) -> str:
    return " ".join((sql or "").lower().replace(";", " ").split())


def dev_rest(spider: Path, held: Sequence[Any]) -> list[dict[str, Any]]:
    """Dev questions outside ``held``, minus those asking for an evaluated question's
    gold SQL on its database, as JSONL records for the trainer's ``jsonl`` loader."""
    from sqlscout.data import load_tasks

    held_ids = {t.question_id for t in held}
    held_sql = {(t.db_id, _normal_sql(t.gold_sql)) for t in held}
    return [
        {"question_id": f"dev-{t.question_id}", "question": t.question, "sql": t.gold_sql, "db_id": t.db_id,
         "difficulty": t.difficulty}
        for t in load_tasks("spider", spider, split="dev", missing_db="skip")
        if t.question_id not in held_ids and (t.db_id, _normal_sql(t.gold_sql)) not in held_sql
    ]  # fmt: skip


def training_data(args: argparse.Namespace, held: Sequence[Any]) -> tuple[dict[str, Any], str]:
    """The trainer's ``data`` section and a line saying where its questions come from."""
    has_train = (args.spider / "train_spider.json").is_file()
    source = args.train_source if args.train_source != "auto" else ("train" if has_train else "dev-rest")
    if source == "train":
        if not has_train:
            sys.exit(f"error: {args.spider}/train_spider.json is missing; use --train-source dev-rest")
        return {"benchmark": "spider", "path": str(args.spider), "split": "train"}, "Spider train split"
    records = dev_rest(args.spider, held)
    path = args.out / "train-questions.jsonl"
    args.out.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in records)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    line = (f"{len(records)} Spider dev questions outside the {len(held)}-question evaluation slice "
            "(and not sharing an evaluated question's gold SQL): the shared data has no Spider training questions")  # fmt: skip
    return {"benchmark": "jsonl", "path": str(path.resolve()), "split": None,
            "db_root": str((args.spider / "database").resolve())}, line  # fmt: skip


def train_config(args: argparse.Namespace, data: dict[str, Any]) -> Any:
    """The config file with this run's scale, data and directory."""
    from sqlscout.train.config import config_to_dict, load_config

    cfg = config_to_dict(load_config(args.config))
    cfg["out"] = str(args.out.resolve())
    cfg["data"] = {**cfg["data"], **data}
    if args.model:
        cfg["model"]["name_or_path"] = args.model
    if args.steps:  # the curriculum's ramp stays the config's, so a run can be extended by --steps on resume
        cfg["steps"] = args.steps
    if args.questions_per_step:
        cfg["rollout"]["questions_per_step"] = args.questions_per_step
    if args.group_size:
        cfg["rollout"]["group_size"] = args.group_size
    if args.max_rounds:
        cfg["rollout"]["episode"]["max_rounds"] = args.max_rounds
    from sqlscout.train.config import config_from_dict

    return config_from_dict(cfg)


# -- evaluation ----------------------------------------------------------------------


def evaluate(config: Any, tasks: Sequence[Any], out: Path, adapters: Path | None, batch: int) -> None:
    """Run (or finish) the greedy evaluation of the GGUF model (+ a checkpoint's LoRA
    ``adapters``, written as a GGUF LoRA) through llama.cpp into ``out``: the quantised
    model the policy was dequantised from, as the trainer's llama-cpp sampler runs it."""
    from sqlscout.backends.llama_server import LlamaServerBackend, LlamaServerConfig
    from sqlscout.evaluation import EvalConfig, run_eval
    from sqlscout.evaluation.run import runner_source
    from sqlscout.runner import Runner
    from sqlscout.train.gguf_lora import checkpoint_lora_gguf, gguf_architecture

    if _finished(out, len(tasks)):
        return
    gguf = Path(str(config.model.name_or_path)).expanduser()
    lora = None
    if adapters is not None:
        lora = checkpoint_lora_gguf(adapters, out.parent / f"{out.name}-lora.gguf", gguf_architecture(gguf))
    runner_config = config.rollout.runner_config(config.seed)
    runner_config = replace(runner_config, sampling=replace(runner_config.sampling, temperature=0.0, logprobs=False),
                            max_batch=batch)  # fmt: skip
    server = LlamaServerConfig(n_ctx=batch * runner_config.episode.token_budget, slots=batch, seed=config.seed, lora=lora)
    settings = EvalConfig(
        benchmark="spider", model=str(config.model.name_or_path), backend="llama-cpp", episode=runner_config.episode,
        sampling=runner_config.sampling, seed=config.seed, split="dev", limit=len(tasks), select="random",
        extra={"adapters": str(adapters) if adapters else None},
    )  # fmt: skip
    with LlamaServerBackend(gguf, server) as backend, Runner(backend, runner_config) as runner:
        run_eval(list(tasks), settings, runner_source(runner, list(tasks), 1), out, resume=True)


def _finished(out: Path, n: int) -> bool:
    episodes = out / "episodes.jsonl"
    return episodes.is_file() and sum(1 for line in episodes.open(encoding="utf-8") if line.strip()) >= n


def eval_summary(out: Path, config: Any) -> dict[str, Any]:
    """Reward (the trainer's reward, one episode per question), submit rate, accuracy,
    outcome mix and episode shape of an evaluation directory."""
    from sqlscout.env.sandbox import Database
    from sqlscout.evaluation import compute_metrics
    from sqlscout.evaluation.store import RunDir
    from sqlscout.scoring import execute_for_scoring, reward, score_sql

    records = RunDir(out).read_records()
    m = compute_metrics(records)
    reward_config = config.reward.build()
    rewards = []
    for r in records:
        db = Database(r.task.db_path)
        try:
            gold = execute_for_scoring(db, r.task.gold_sql, timeout_s=5.0)
            scored = score_sql(db, r.result.final_sql, r.task.gold_sql, gold=gold, semantics=reward_config.semantics)
            rewards.append(reward(scored, reward_config, pred_sql=r.result.final_sql, gold_sql=r.task.gold_sql))
        finally:
            db.close()
    return {
        "questions": m.n_questions,
        "reward": statistics.fmean(rewards) if rewards else None,
        "submit_rate": m.submit_rate,
        "accuracy": m.accuracy.official,
        "executes": m.executes_rate,
        "outcomes": m.outcomes,
        "rounds": m.rounds_mean,
        "tokens": statistics.fmean(r.result.generated_tokens for r in records) if records else None,
    }


# -- report --------------------------------------------------------------------------


def _f(value: Any, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def report(args: argparse.Namespace, config: Any, source: str, timings: dict[str, float]) -> str:
    before = eval_summary(args.out / "eval-before", config) if _finished(args.out / "eval-before", 1) else None
    after = eval_summary(args.out / "eval-after", config) if _finished(args.out / "eval-after", 1) else None
    telemetry = args.out / "telemetry.jsonl"
    rows = [json.loads(line) for line in telemetry.read_text(encoding="utf-8").splitlines() if line.strip()] if telemetry.exists() else []
    ro = config.rollout
    lines = [
        f"Model: `{config.model.name_or_path}` dequantised to fp32, LoRA r={config.model.lora.r} "
        f"(alpha {config.model.lora.alpha}, all linear layers), lr {config.optim.lr}, KL {config.kl.mode} "
        f"(target {config.kl.target}). Training questions: {source}. {len(rows)} of {config.steps} steps ran, "
        f"{ro.questions_per_step} questions x {ro.group_size} episodes per step, episodes of at most "
        f"{ro.episode.max_rounds} rounds ({ro.episode.max_turn_tokens} tokens a turn, {ro.episode.token_budget} in all), "
        f"schema full, constraints off, sampling {ro.sampling.temperature}/{ro.sampling.top_p}/{ro.sampling.top_k}. "
        f"Evaluation: {args.eval_questions} Spider dev questions (`--select random --seed 0`), greedy through llama.cpp on the GGUF "
        f"(after: with the adapters as a GGUF LoRA), same episode limits. Rollouts: {ro.backend}.",
        "",
        "| | questions | reward | submit rate | accuracy (official) | executes | rounds | tokens/episode |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, s in (("before", before), ("after", after)):
        if s is None:
            lines.append(f"| {name} | not run | | | | | | |")
        else:
            lines.append(
                f"| {name} | {s['questions']} | {_f(s['reward'])} | {_f(s['submit_rate'])} | {_f(s['accuracy'])} | "
                f"{_f(s['executes'])} | {_f(s['rounds'], 2)} | {_f(s['tokens'], 0)} |"
            )
    lines += [
        "",
        "| step | equivalent | executable | parsable | invalid | rounds | tokens/episode | submit | reward | uniform groups | KL | KL coef | step s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        episodes = max(r["episodes"] - r["episodes/dropped"], 1)
        lines.append(
            f"| {r['step']} | {_f(r['outcome/equivalent'], 2)} | {_f(r['outcome/executable'], 2)} | {_f(r['outcome/parsable'], 2)} | "
            f"{_f(r['outcome/invalid'], 2)} | {_f(r['episode/rounds'], 2)} | {_f(r['tokens/generated'] / episodes, 0)} | "
            f"{_f(r['episode/submit_rate'], 2)} | {_f(r['reward/mean'])} | {_f(r['groups/uniform'], 2)} | {_f(r['kl'], 5)} | "
            f"{_f(r['kl_coef'], 4)} | {_f(r['time/step_s'], 0)} |"
        )
    if timings:
        lines += ["", "Wall time of this invocation's phases (s): " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items())]
    text = "\n".join(lines) + "\n"
    (args.out / "report.md").write_text(text, encoding="utf-8")
    (args.out / "report.json").write_text(json.dumps({"before": before, "after": after, "steps": rows, "source": source}, indent=1), encoding="utf-8")
    return text


# -- the experiment --------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    phases = set(args.phases.split(","))
    from sqlscout.train import train
    from sqlscout.train.checkpoint import latest_checkpoint

    held = eval_slice(args.spider, args.eval_questions)
    data, source = training_data(args, held)
    config = train_config(args, data)
    print(f"training questions: {source}", flush=True)
    timings: dict[str, float] = {}

    def timed(name: str, fn: Any) -> None:
        began = time.perf_counter()
        fn()
        timings[name] = time.perf_counter() - began
        print(f"[{time.strftime('%H:%M:%S')}] {name}: {timings[name]:.0f} s", flush=True)

    if "before" in phases:
        timed("eval-before", lambda: evaluate(config, held, args.out / "eval-before", None, args.eval_batch))
    if "train" in phases:
        done = latest_checkpoint(args.out)
        if done is None or int(done.name.split("-")[1]) < config.steps:
            timed("train", lambda: train(config, resume=True, on_step=lambda row: print(
                f"[{time.strftime('%H:%M:%S')}] step {row['step']}: reward {row['reward/mean']:.3f} kl {row['kl']:.5f} "
                f"rollout {row['time/rollout_s']:.0f} s update {row['time/update_s']:.0f} s", flush=True)))  # fmt: skip
    if "after" in phases:
        last = latest_checkpoint(args.out)
        if last is None:
            print("no checkpoint: training has not finished a step; skipping the after evaluation", flush=True)
        else:
            timed("eval-after", lambda: evaluate(config, held, args.out / "eval-after", last / "model", args.eval_batch))
    if "report" in phases:
        print(report(args, config, source, timings), flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(main())
