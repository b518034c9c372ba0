"""Rollout throughput: the runner against the same episodes run one at a time.

The reference is the plain single-episode agent loop — one ``backend.generate`` call
per turn per episode, episodes one after another — over the same backend, model,
questions, episode limits and per-turn seeds, measured in the same run. The runner
batches the pending turns of all live episodes into one call and runs tool calls on a
thread pool. Printed: episodes per minute of each, generated tokens of each (to show
the work is the same), and the ratio.

    python benchmarks/rollout_throughput.py --backend hf                 # tiny random Qwen3.5
    python benchmarks/rollout_throughput.py --backend hf --model tiny-qwen3
    python benchmarks/rollout_throughput.py --backend llama-cpp --model qwen2.5-coder-0.5b --threads 2
    python benchmarks/rollout_throughput.py --backend llama-cpp-python --model ~/.cache/sqlscout/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf

Each of the two runs gets a freshly loaded backend, so neither finds the other's
prompts in the cache; the llama-cpp backend's prompt-cache figures are printed too.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["hf", "llama-cpp", "llama-cpp-python"], default="hf")
    parser.add_argument("--model", default="tiny-qwen3.5", help="tiny-qwen3.5, tiny-qwen3, a directory, a .gguf file or a GGUF preset")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp CPU threads (default: the idle cores)")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2, help="tool rounds per episode")
    parser.add_argument("--turn-tokens", type=int, default=32, help="max tokens per model turn")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--device", default="cpu", help="hf only: cpu or cuda")
    args = parser.parse_args(argv)

    config = RunnerConfig(
        episode=EpisodeConfig(max_rounds=args.rounds, max_turn_tokens=args.turn_tokens, token_budget=8192),
        sampling=SamplingParams(temperature=0.6, top_p=0.95, top_k=20),
        max_batch=args.episodes,
        seed=0,
    )
    work = tasks(args.episodes, args.data)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    timings = {}
    for name, loop in (("one at a time", reference_loop), ("runner", runner_loop)):
        backend = build_backend(args)  # a fresh cache for each
        runner_loop(backend, work[:1], config)  # warm-up: first-call costs are nobody's
        stats = getattr(backend, "stats", None)
        before = (stats.prompt_tokens, stats.reused_tokens, stats.evaluated_tokens) if hasattr(stats, "hit_rate") else None
        timings[name] = loop(backend, work, config)
        if before is not None:
            prompt, reused = stats.prompt_tokens - before[0], stats.reused_tokens - before[1]
            print(f"{name}: prompt cache {reused} of {prompt} prompt tokens reused; {stats.summary()} (warm-up included)")
        backend.close()
    (ref_s, ref_tokens), (run_s, run_tokens) = timings["one at a time"], timings["runner"]
    ref_rate, run_rate = 60 * len(work) / ref_s, 60 * len(work) / run_s
    print(f"backend={args.backend} model={args.model} episodes={len(work)} rounds={args.rounds} turn_tokens={args.turn_tokens} threads={args.threads}")
    print(f"one at a time : {ref_s:8.2f} s  {ref_rate:8.1f} episodes/min  {ref_tokens} tokens generated")
    print(f"runner        : {run_s:8.2f} s  {run_rate:8.1f} episodes/min  {run_tokens} tokens generated")
    print(f"ratio         : {run_rate / ref_rate:.2f}x")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
