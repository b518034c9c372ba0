"""What batching can buy on this machine: decode speed of N concurrent streams against one.

The runner's gain over one episode at a time is bounded by how much faster the backend
decodes several sequences together than one. This asks the llama-cpp backend (the one
the offline presets use, loaded as ``sqlscout eval`` loads it) for ``--tokens`` tokens
from a short prompt, first as one stream, then as 2, 4, ... streams at once, each on
its own slot, and prints the aggregate tokens/s and its ratio to one stream measured in
the same run (medians of ``--repeats``).

    python benchmarks/decode_scaling.py --model qwen2.5-coder-0.5b --threads 2
    python benchmarks/decode_scaling.py --model qwen2.5-coder-1.5b --streams 1 4 8 16
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from sqlscout.backends.base import Backend, GenerationRequest, SamplingParams
from sqlscout.models.load import open_backend

PROMPT = "Write a long SQLite tutorial about joins, with many example queries.\n"


def stream(backend: Backend, index: int, tokens: int) -> int:
    """One request of ``tokens`` sampled tokens on slot ``index``; the tokens it got."""
    params = SamplingParams(temperature=0.6, top_p=0.95, top_k=20, max_tokens=tokens, seed=index, stop=[])
    request = GenerationRequest(params=params, prompt=f"{index}. {PROMPT}", episode=(index, 0))
    return len(backend.generate([request])[0].token_ids)


def aggregate(backend: Backend, streams: int, tokens: int) -> float:
    """Tokens per second over ``streams`` requests sent at once."""
    start = time.perf_counter()
    with ThreadPoolExecutor(streams) as pool:
        done = sum(pool.map(lambda i: stream(backend, i, tokens), range(streams)))
    return done / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    backend = open_backend(args.model, episodes=max(args.streams), threads=args.threads)
    try:
        aggregate(backend, max(args.streams), 8)  # warm every slot once
        speeds = {n: [] for n in args.streams}
        for _ in range(args.repeats):  # interleaved, so a change of load weighs on every width
            for n in args.streams:
                speeds[n].append(aggregate(backend, n, args.tokens))
        one = statistics.median(speeds[min(args.streams)])
        print(f"model={args.model} threads={args.threads or 'auto'} tokens/stream={args.tokens} repeats={args.repeats}")
        for n in args.streams:
            speed = statistics.median(speeds[n])
            print(f"  {n:>3} streams: {speed:6.1f} tokens/s aggregate   {speed / one:.2f}x one stream")
    finally:
        backend.close()


if __name__ == "__main__":
    main()
