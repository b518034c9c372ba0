"""Where an evaluation's seconds went, from the records of a run directory (``sqlscout eval --out``).

Sums over every round of every episode: prompt tokens evaluated vs read from the cache,
tokens generated, prefill and decode seconds (the backend's own figures; requests in
flight together overlap, so these add up to more than the wall time), and how the
replies' lengths are spread, first turns, tool turns and forced final turns apart.

    python benchmarks/eval_time_breakdown.py runs/agent-full
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    args = parser.parse_args()
    episodes = [json.loads(line)["episode"] for line in (args.run / "episodes.jsonl").read_text().splitlines() if line.strip()]
    rounds = [r for e in episodes for r in e["rounds"]]
    evaluated = sum(r.get("prompt_evaluated", 0) for r in rounds)
    reused = sum(r.get("prompt_reused", 0) for r in rounds)
    generated = sum(r["completion_tokens"] for r in rounds)
    prefill = sum(r.get("prefill_s", 0.0) for r in rounds)
    decode = sum(r.get("decode_s", 0.0) for r in rounds)
    print(f"{len(episodes)} episodes, {len(rounds)} rounds, wall per episode {sum(e['wall_time_s'] for e in episodes) / len(episodes):.1f} s")
    print(f"prompt tokens: {evaluated:,} evaluated, {reused:,} from the cache ({reused / max(1, evaluated + reused):.1%} hit rate)")
    print(f"prefill {prefill:.1f} s ({evaluated / max(prefill, 1e-9):.1f} tok/s per request), "
          f"decode {decode:.1f} s for {generated:,} tokens ({generated / max(decode, 1e-9):.1f} tok/s per request)")  # fmt: skip
    kinds = {
        "first turn": [e["rounds"][0] for e in episodes if e["rounds"]],
        "later tool turns": [r for e in episodes for r in e["rounds"][1:] if not r["final"]],
        "forced final turns": [r for r in rounds if r["final"]],
    }
    for name, group in kinds.items():
        if not group:
            continue
        lengths = sorted(r["completion_tokens"] for r in group)
        cut = sum(1 for r in group if r.get("finish_reason") == "length")
        print(
            f"{name:18s}: {len(group):3d} rounds, reply tokens median {lengths[len(lengths) // 2]}, max {lengths[-1]}, "
            f"{sum(lengths):,} in all ({sum(lengths) / max(1, generated):.0%}); {cut} cut at the length limit; "
            f"prefill {sum(r.get('prefill_s', 0.0) for r in group):.1f} s, decode {sum(r.get('decode_s', 0.0) for r in group):.1f} s"
        )
    stops: dict[str, int] = {}
    for e in episodes:
        stops[e["stop_reason"]] = stops.get(e["stop_reason"], 0) + 1
    print("stop reasons:", ", ".join(f"{k} {v}" for k, v in sorted(stops.items())))


if __name__ == "__main__":
    main()
