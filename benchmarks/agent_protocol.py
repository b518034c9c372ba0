"""Protocol help, measured on a small slice: each option on and off (issue 11 items 1-2).

Runs a few Spider dev questions through an OpenAI-compatible server (``llama-server``
with the 0.5B GGUF on loopback) under each named setting, scores every answer with the
official metric, and prints per setting: accuracy, submit rate, mean tool rounds, share
of exploration replies that held no parsed call, and wall seconds per question. Every
episode is appended to ``--out`` as it finishes, so a long run can be read while it goes.

    llama-server -m ~/.cache/sqlscout/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf \\
        --host 127.0.0.1 --port 18431 -t 2 -c 16384 &
    PYTHONPATH=src python benchmarks/agent_protocol.py --url http://127.0.0.1:18431 \\
        --limit 10 --settings free,constrained --out /tmp/protocol.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from pathlib import Path

from sqlscout.assist import Profile
from sqlscout.backends.base import SamplingParams
from sqlscout.backends.openai_compat import OpenAIBackend, OpenAIConfig
from sqlscout.data import load_tasks
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.prompts import SchemaMode
from sqlscout.env.trace import StopReason
from sqlscout.evaluation.run import select_tasks
from sqlscout.runner import RunMode, Runner, RunnerConfig
from sqlscout.scoring.verdict import score_sql

# The 0.5B preset's limits (models/presets.py) without its help: each setting names its own.
BASE = EpisodeConfig(max_rounds=6, token_budget=12_288, max_turn_tokens=768)
FULL = replace(BASE, schema=SchemaMode.FULL)
SETTINGS: dict[str, tuple[RunMode, EpisodeConfig, dict]] = {
    "free": (RunMode.AGENT, BASE, {}),
    "constrained": (RunMode.AGENT, BASE, {"constrain": True}),
    "constrained+defer": (RunMode.AGENT, BASE, {"constrain": True, "defer_mixed_submit": True}),
    "free+defer": (RunMode.AGENT, BASE, {"defer_mixed_submit": True}),
    "constrained+example": (RunMode.AGENT, BASE, {"constrain": True, "worked_example": True}),
    "free+example": (RunMode.AGENT, BASE, {"worked_example": True}),
    "full+constrained": (RunMode.AGENT, FULL, {"constrain": True}),
    "full+constrained+values": (RunMode.AGENT, FULL, {"constrain": True, "example_values": True}),
    "single-shot": (RunMode.SINGLE_SHOT, BASE, {}),
    "single-shot+values": (RunMode.SINGLE_SHOT, BASE, {"example_values": True}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--data", default="../shared/data/spider")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--settings", default="free,constrained", help=f"comma-separated: {', '.join(SETTINGS)}")
    parser.add_argument("--max-rounds", type=int, default=None, help="override the preset's 6")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    tasks = select_tasks(load_tasks("spider", args.data, missing_db="skip"), args.limit, "random", args.seed)
    backend = OpenAIBackend(OpenAIConfig(args.url, timeout_s=7200, concurrency=1))
    sampling = SamplingParams()  # the 0.5B preset's: 0.6 / 0.95 / 20
    for name in args.settings.split(","):
        mode, episode, rules = SETTINGS[name]
        if args.max_rounds:
            episode = replace(episode, max_rounds=args.max_rounds)
        assist = Profile.build(name, rules)
        config = RunnerConfig(episode=episode, assist=assist, sampling=sampling, max_batch=1, seed=args.seed, mode=mode)
        rows = []
        started = time.perf_counter()
        with Runner(backend, config) as runner:
            for rollout in runner.run(tasks):
                task, result = tasks[rollout.index], rollout.result
                db = runner.database(task.db_path)
                verdict = score_sql(db, result.final_sql, task.gold_sql or "").verdict
                explore = [r for r in result.rounds if not r.final]
                row = {
                    "setting": name,
                    "question_id": task.question_id,
                    "official": verdict.official,
                    "submitted": result.stop_reason is StopReason.SUBMITTED,
                    "stop_reason": result.stop_reason.value,
                    "tool_rounds": len(explore),
                    "no_call_rounds": sum(1 for r in explore if not r.calls),
                    "wall_s": round(result.wall_time_s, 1),
                    "final_sql": result.final_sql,
                    "replies": [r.model_text for r in result.rounds],
                }
                rows.append(row)
                with args.out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(f"{name:24s} {task.question_id:>5s} ok={verdict.official!s:5s} {row['stop_reason']:18s} "
                      f"rounds={row['tool_rounds']} {row['wall_s']:7.1f}s", flush=True)
        total = time.perf_counter() - started
        explore_rounds = sum(r["tool_rounds"] for r in rows)
        print(
            f"== {name}: n={len(rows)} accuracy={statistics.mean(r['official'] for r in rows):.2f} "
            f"submit_rate={statistics.mean(r['submitted'] for r in rows):.2f} "
            f"tool_rounds={statistics.mean(r['tool_rounds'] for r in rows):.1f} "
            f"no_call_share={sum(r['no_call_rounds'] for r in rows) / max(1, explore_rounds):.2f} "
            f"wall_per_q={total / len(rows):.0f}s",
            flush=True,
        )
    backend.close()


if __name__ == "__main__":
    main()
