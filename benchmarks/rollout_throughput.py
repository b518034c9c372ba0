"""Rollout throughput: the runner against the same episodes run one at a time.

The reference is the plain single-episode agent loop — one ``backend.generate`` call
per turn per episode, episodes one after another — over the same backend, model,
questions, episode limits and per-turn seeds, measured in the same run. The runner
keeps ``--episodes`` episodes in flight: on a backend that serves concurrent calls
(llama-cpp) each episode sends its turn alone and advances as soon as its reply is in
(continuous mode); on the others it batches the pending turns of all live episodes into
one call (waves); tool calls run on a thread pool. ``--waves`` adds the runner forced
into waves as a third contender. Printed: seconds, episodes per minute and generated
tokens of each run (to show the work is the same), the load average around each run,
and the ratio of the totals.

The contenders are interleaved (``--repeats`` rounds, the order flipped every round),
so that a machine whose load changes during the run weighs on all of them alike.

    python benchmarks/rollout_throughput.py --backend hf                 # tiny random Qwen3.5
    python benchmarks/rollout_throughput.py --backend hf --model tiny-qwen3
    python benchmarks/rollout_throughput.py --backend llama-cpp --model qwen2.5-coder-0.5b --threads 2
    python benchmarks/rollout_throughput.py --backend llama-cpp-python --model ~/.cache/sqlscout/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf

Every run gets a freshly loaded backend, so none finds another's prompts in the
cache; the llama-cpp backend's prompt-cache figures are printed too.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Callable

from sqlscout.backends.base import Backend, GenerationRequest, SamplingParams
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode import Episode
from sqlscout.runner import Runner, RunnerConfig, episode_seed
from sqlscout.env.sandbox import Database
from sqlscout.env.task import Task

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
QUESTIONS = [
    "How many albums are there?",
    "How many tracks are longer than five minutes?",
    "Which country has the most customers?",
    "List the names of all media types.",
    "What is the total of all invoices in 2010?",
    "Which employee supports the most customers?",
    "How many playlists contain at least one track?",
    "What is the most common genre among tracks?",
]


def tasks(n: int, data: Path) -> list[Task]:
    db = data / "chinook" / "Chinook_Sqlite.sqlite"
    return [Task(f"bench{i}", QUESTIONS[i % len(QUESTIONS)], db) for i in range(n)]


def reference_loop(backend: Backend, work: list[Task], config: RunnerConfig) -> tuple[float, int]:
    """One episode at a time, one generate call per turn: the baseline."""
    start = time.perf_counter()
    generated = 0
    dbs: dict[Path, Database] = {}
    for index, task in enumerate(work):
        db = dbs.setdefault(task.db_path, Database(task.db_path, config.sandbox))
        episode = Episode(task, db, config.episode, chat=backend.chat, counter=backend.counter)
        turn = 0
        while not episode.done:
            request = episode.request()
            params = config.sampling.with_(
                max_tokens=request.max_tokens,
                stop=tuple(dict.fromkeys(request.stop + config.sampling.stop)),
                seed=episode_seed(config.seed, index, 0, turn),
            )
            (gen,) = backend.generate([GenerationRequest(params, prompt=request.prompt)])
            episode.step(gen.text, n_tokens=len(gen.token_ids) or None, finish_reason=gen.finish_reason)
            turn += 1
        generated += episode.result().generated_tokens
    for db in dbs.values():
        db.close()
    return time.perf_counter() - start, generated


def runner_loop(backend: Backend, work: list[Task], config: RunnerConfig) -> tuple[float, int]:
    start = time.perf_counter()
    with Runner(backend, config) as runner:
        generated = sum(r.result.generated_tokens for r in runner.run(work))
    return time.perf_counter() - start, generated


def build_backend(args: argparse.Namespace) -> Backend:
    if args.backend == "hf":
        from sqlscout.backends.hf import HFBackend, HFConfig, load_hf

        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test models
        from tiny_models import tiny_qwen3, tiny_qwen3_5

        config = HFConfig(device=args.device, max_batch=args.episodes)
        if args.model in ("tiny-qwen3.5", "tiny-qwen3"):
            model, tokenizer = (tiny_qwen3_5 if args.model == "tiny-qwen3.5" else tiny_qwen3)(seed=0)
            return HFBackend(model.to("cpu" if args.device == "cpu" else "cuda"), tokenizer, config)
        return load_hf(args.model, config)
    if args.backend == "llama-cpp":
        from sqlscout.models import default_cache_dir, load_backend

        slots = min(64, args.episodes)
        options = {"slots": slots, "n_ctx": slots * 8192, "n_threads": args.threads}
        return load_backend(args.model, "llama-cpp", cache_dir=default_cache_dir(os.environ), **options)
    if args.backend == "llama-cpp-python":
        from sqlscout.backends.llama_cpp import LlamaCppBackend, LlamaCppConfig

        return LlamaCppBackend(Path(args.model).expanduser(), LlamaCppConfig(slots=min(64, args.episodes), n_threads=args.threads))
    raise SystemExit(f"unknown backend {args.backend}")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


Loop = Callable[[Backend, list[Task], RunnerConfig], tuple[float, int]]


def timed_run(args: argparse.Namespace, name: str, loop: Loop, work: list[Task], config: RunnerConfig) -> tuple[float, int]:
    backend = build_backend(args)  # a fresh cache for each run
    try:
        runner_loop(backend, work[:1], config)  # warm-up: first-call costs are nobody's
        stats = getattr(backend, "stats", None)
        before = (stats.prompt_tokens, stats.reused_tokens) if hasattr(stats, "hit_rate") else None
        load_before = load()
        seconds, tokens = loop(backend, work, config)
        line = f"  {name:<16}: {seconds:8.2f} s  {60 * len(work) / seconds:8.1f} episodes/min  {tokens:6d} tokens generated"
        print(f"{line}  load {load_before} -> {load()}")
        if before is not None:
            prompt, reused = stats.prompt_tokens - before[0], stats.reused_tokens - before[1]
            print(f"  {'':<16}  prompt cache {reused} of {prompt} prompt tokens reused ({reused / max(prompt, 1):.1%}); {stats.summary()} (warm-up included)")
        sys.stdout.flush()
        return seconds, tokens
    finally:
        backend.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["hf", "llama-cpp", "llama-cpp-python"], default="hf")
    parser.add_argument("--model", default="tiny-qwen3.5", help="tiny-qwen3.5, tiny-qwen3, a directory, a .gguf file or a GGUF preset")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp CPU threads (default: the idle cores)")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2, help="tool rounds per episode")
    parser.add_argument("--turn-tokens", type=int, default=32, help="max tokens per model turn")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved rounds of all contenders")
    parser.add_argument("--waves", action="store_true", help="also time the runner in lockstep waves")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--device", default="cpu", help="hf only: cpu or cuda")
    args = parser.parse_args(argv)

    config = RunnerConfig(
        episode=EpisodeConfig(max_rounds=args.rounds, max_turn_tokens=args.turn_tokens, token_budget=8192),
        sampling=SamplingParams(temperature=0.6, top_p=0.95, top_k=20),
        max_batch=args.episodes,
        seed=0,
    )
    contenders: list[tuple[str, Loop, RunnerConfig]] = [
        ("one at a time", reference_loop, config),
        ("runner", runner_loop, config),
    ]
    if args.waves:
        contenders.append(("runner (waves)", runner_loop, dataclasses.replace(config, continuous=False)))
    work = tasks(args.episodes, args.data)
    print(f"backend={args.backend} model={args.model} episodes={len(work)} rounds={args.rounds} turn_tokens={args.turn_tokens} threads={args.threads}")
    print(f"load average before: {load()}")
    totals = {name: [0.0, 0] for name, _, _ in contenders}
    for repeat in range(args.repeats):
        print(f"round {repeat + 1}:")
        for name, loop, cfg in contenders if repeat % 2 == 0 else contenders[::-1]:
            seconds, tokens = timed_run(args, name, loop, work, cfg)
            totals[name][0] += seconds
            totals[name][1] += int(tokens)
    ref_s = totals["one at a time"][0]
    print(f"total over {args.repeats} rounds:")
    for name, (seconds, tokens) in totals.items():
        episodes = len(work) * args.repeats
        print(f"  {name:<16}: {seconds:8.2f} s  {60 * episodes / seconds:8.1f} episodes/min  {tokens / seconds:6.1f} tokens/s  ratio {ref_s / seconds:.2f}x")
    print(f"load average after: {load()}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
