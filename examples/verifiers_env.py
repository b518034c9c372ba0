"""Evaluate a model on sqlscout's environment through verifiers (docs/integrations.md).

With no arguments: llama.cpp's server (sqlscout's llama-cpp backend, in process, on
127.0.0.1) serves the 0.5B preset's GGUF as an OpenAI-compatible endpoint, and verifiers'
evaluation runner (what ``vf-eval`` runs) plays 3 Spider questions against it through
sqlscout's taskset, harness and reward. With a server of your own:

    python examples/verifiers_env.py --base-url http://127.0.0.1:8000/v1 --model NAME --questions 20
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b", help="a GGUF preset or file; with --base-url, the served model's name")
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible server (default: start llama.cpp's on loopback)")
    parser.add_argument("--data", default=None, help="Spider's folder (default: ../shared/data/spider, else the small fixture)")
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3, help="tool rounds before the final turn")
    parser.add_argument("--turn-tokens", type=int, default=192, help="most tokens in one model turn")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp's CPU threads (one is fastest on busy cores)")
    parser.add_argument("--output-dir", default=None, help="where verifiers writes the run (default: a temporary folder)")
    args = parser.parse_args()

    from verifiers.v1.cli.eval.runner import run_eval

    from sqlscout.integrations.verifiers import eval_config

    data = Path(args.data) if args.data else REPO.parent / "shared" / "data" / "spider"
    if not (data / "dev.json").is_file():
        data = REPO / "tests" / "data" / "spider_mini"
    # The full schema in the prompt: a small model answers in a round or two instead of exploring.
    episode = {"max_rounds": args.rounds, "token_budget": 4096, "max_turn_tokens": args.turn_tokens, "schema": "full"}
    backend = None
    started = time.perf_counter()
    if args.base_url is None:
        from sqlscout.models import open_backend

        # One slot per episode in flight, each twice the episode's budget: verifiers' endpoint has
        # no tokenize route, so the episode counts its budget approximately.
        backend = open_backend(args.model, "llama-cpp", episodes=args.questions, token_budget=2 * episode["token_budget"],
                               threads=args.threads)  # fmt: skip
        base_url = backend.url + "/v1"  # type: ignore[attr-defined]
        print(f"llama.cpp's server on {backend.url} ({time.perf_counter() - started:.1f} s to load {args.model})")
    else:
        base_url = args.base_url
    out = args.output_dir or tempfile.mkdtemp(prefix="sqlscout-verifiers-")
    config = eval_config(path=data, model=args.model, base_url=base_url, limit=args.questions, episode=episode,
                         output_dir=out, max_concurrent=args.questions)  # fmt: skip
    try:
        episodes = asyncio.run(run_eval(config))
    finally:
        if backend is not None:
            backend.close()
    rewards = []
    for ep in episodes:
        for trace in ep.traces:
            outcome = trace.info.get("sqlscout") or {}
            rewards.append(trace.reward)
            print(f"- {trace.task.data.question}\n  {outcome.get('final_sql')!r} ({outcome.get('stop_reason')}, "
                  f"{outcome.get('rounds')} rounds, {trace.num_turns} model turns): reward {trace.reward:.3f}, "
                  f"correct {trace.metrics.get('correct')}" + (f", error {trace.errors[-1].message}" if trace.errors else ""))  # fmt: skip
    mean = sum(rewards) / len(rewards) if rewards else 0.0
    print(f"{len(rewards)} episodes, mean reward {mean:.3f}, {time.perf_counter() - started:.0f} s; traces in {out}")


if __name__ == "__main__":
    main()
