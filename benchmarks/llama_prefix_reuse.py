"""llama-cpp: a growing episode with its prefix kept in the KV cache vs re-read each turn.

Replays the same six-turn transcript (the real opening prompt, then fixed replies and
tool results) twice on the 0.5B preset, greedy, one generated token per turn so that
the prompt side dominates: once on a backend that keeps the episode in a cache slot,
once clearing the cache before every turn (the cost of an engine without prefix reuse).
Prints the seconds of each and the ratio, measured in the same run.

    python benchmarks/llama_prefix_reuse.py [--model PATH.gguf] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from sqlscout.backends.base import GenerationRequest, SamplingParams
from sqlscout.backends.llama_cpp import LlamaCppBackend, LlamaCppConfig
from sqlscout.models import PRESETS, default_cache_dir, fetch_gguf
from sqlscout.env.prompts import budget_line, initial_messages

REPLY = '{"tool": "run_query", "args": {"sql": "SELECT COUNT(*) FROM Album"}}<|im_end|>'
RESULT = "Result 1 of run_query(sql='SELECT COUNT(*) FROM Album'):\nCOUNT(*)\n347\n\n"


def transcript_turns(backend: LlamaCppBackend, turns: int) -> list[list[int]]:
    """The prompt ids of each turn of one episode."""
    ids = backend.tokenize(backend.chat.render(initial_messages("How many albums are there?")))
    prompts = [list(ids)]
    for left in range(turns - 1, 0, -1):
        ids += backend.tokenize(REPLY + backend.chat.next_turn(RESULT + budget_line(left)))
        prompts.append(list(ids))
    return prompts


def forget(backend: LlamaCppBackend) -> None:
    """Empty every cache slot (benchmark-only reach into the backend's internals)."""
    for slot in backend._slots:
        backend._lib.llama_memory_seq_rm(backend._memory, slot.seq_id, -1, -1)
        slot.ids.clear()


def replay(backend: LlamaCppBackend, prompts: list[list[int]], *, clear: bool) -> float:
    params = SamplingParams(temperature=0.0, max_tokens=1)
    forget(backend)  # both replays start from an empty cache
    start = time.perf_counter()
    for ids in prompts:
        if clear:
            forget(backend)  # an engine without prefix reuse reads the whole prompt
        backend.generate([GenerationRequest(params, prompt_ids=ids)])
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None, help="GGUF file (default: the 0.5B preset, fetched)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--turns", type=int, default=6)
    args = parser.parse_args()
    model = args.model or fetch_gguf(PRESETS["qwen2.5-coder-0.5b"], default_cache_dir(os.environ))
    backend = LlamaCppBackend(model, LlamaCppConfig(n_ctx=8192, slots=2, n_threads=args.threads))
    prompts = transcript_turns(backend, args.turns)
    replay(backend, prompts[:1], clear=True)  # page the weights in before timing anything
    reread = replay(backend, prompts, clear=True)
    before = backend.stats.reused_tokens
    reused = replay(backend, prompts, clear=False)
    reused_tokens = backend.stats.reused_tokens - before
    print(f"{args.turns} turns, final prompt {len(prompts[-1])} tokens, {args.threads} thread(s)")
    print(f"re-read every turn : {reread:6.2f} s")
    print(f"cached prefix      : {reused:6.2f} s")
    print(f"ratio              : {reread / reused:6.1f}x   (prompt tokens served from the cache: {reused_tokens})")


if __name__ == "__main__":
    main()
