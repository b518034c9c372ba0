"""What batching can buy on this machine: decode speed of N concurrent streams against one.

The runner's gain over one episode at a time is bounded by how much faster the backend
decodes several sequences together than one. This asks the llama-cpp backend (the one
the offline presets use, loaded as ``sqlscout eval`` loads it) for ``--tokens`` tokens
from a short prompt, first as one stream, then as 2, 4, ... streams at once, each on
its own slot, and prints the aggregate tokens/s and its ratio to one stream measured in
the same run (medians of ``--repeats``).

    python benchmarks/decode_scaling.py --model qwen2.5-coder-0.5b --threads 2
    python benchmarks/decode_scaling.py --model qwen2.5-coder-1.5b --streams 1 4 8 16

Several ``--model`` are loaded side by side and measured interleaved, each width's speed
also printed as a ratio to the first model's: what a GGUF LoRA adapter applied by
llama.cpp costs a decode (the trained preset against its base), sampled as the GRPO
rollouts sample (``--temperature 1 --top-k 100 --logprobs``):

    python benchmarks/decode_scaling.py --model qwen2.5-coder-0.5b sqlscout-0.5b-grpo --streams 1 16 \
        --temperature 1 --top-k 100 --top-p 1 --logprobs --threads 2
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from sqlscout.backends.base import Backend, GenerationRequest, SamplingParams
from sqlscout.models.load import open_backend

PROMPT = "Write a long SQLite tutorial about joins, with many example queries.\n"


SAMPLING = {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "logprobs": False}  # the seed card's; main() may change it


def stream(backend: Backend, index: int, tokens: int) -> int:
    """One request of ``tokens`` sampled tokens on slot ``index``; the tokens it got."""
    params = SamplingParams(**SAMPLING, max_tokens=tokens, seed=index, stop=[])
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
    parser.add_argument("--model", nargs="+", default=["qwen2.5-coder-0.5b"])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--temperature", type=float, default=SAMPLING["temperature"])
    parser.add_argument("--top-k", type=int, default=SAMPLING["top_k"])
    parser.add_argument("--top-p", type=float, default=SAMPLING["top_p"])
    parser.add_argument("--logprobs", action="store_true", help="ask for the sampled tokens' log-probabilities, as rollouts do")
    args = parser.parse_args()
    SAMPLING.update(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, logprobs=args.logprobs)
    backends = {m: open_backend(m, episodes=max(args.streams), threads=args.threads) for m in args.model}
    try:
        for backend in backends.values():
            aggregate(backend, max(args.streams), 8)  # warm every slot once
        speeds = {(m, n): [] for m in backends for n in args.streams}
        for _ in range(args.repeats):  # interleaved, so a change of load weighs on every model and width
            for n in args.streams:
                for m, backend in backends.items():
                    speeds[m, n].append(aggregate(backend, n, args.tokens))
        first = args.model[0]
        print(f"threads={args.threads or 'auto'} tokens/stream={args.tokens} repeats={args.repeats} sampling={SAMPLING}")
        for m in backends:
            one = statistics.median(speeds[m, min(args.streams)])
            print(f"model={m}")
            for n in args.streams:
                speed = statistics.median(speeds[m, n])
                versus = f"   {speed / statistics.median(speeds[first, n]):.2f}x {first}" if m != first else ""
                print(f"  {n:>3} streams: {speed:6.1f} tokens/s aggregate   {speed / one:.2f}x one stream{versus}")
    finally:
        for backend in backends.values():
            backend.close()


if __name__ == "__main__":
    main()
