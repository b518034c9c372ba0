"""sqlscout's environment in skyrl-gym (docs/integrations.md): the episodes a SkyRL
generator would drive, driven here by scripted replies.

With no arguments: registers the environment, makes one with ``skyrl_gym.make("sqlscout",
...)`` per episode on a few Spider questions, and steps each through a scripted reply
sequence — explore then answer right (list_tables, run_query of the gold query,
submit_sql of it), and answer wrong at once — printing every step and the rewards:

    python examples/skyrl_env.py [--data ../shared/data/spider] [--questions 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src")]


def call(tool: str, **args: str) -> str:
    """A model reply calling one of sqlscout's tools, as a model writes it."""
    return json.dumps({"tool": tool, "args": args})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="Spider's folder (default: ../shared/data/spider, else the small fixture)")
    parser.add_argument("--questions", type=int, default=3)
    args = parser.parse_args()

    import skyrl_gym

    from sqlscout.data import load_tasks
    from sqlscout.env.config import EpisodeConfig
    from sqlscout.env.prompts import SchemaMode
    from sqlscout.env.task import Task
    from sqlscout.integrations.skyrl import dataset_rows, register

    started = time.perf_counter()
    data = Path(args.data) if args.data else REPO.parent / "shared" / "data" / "spider"
    if not (data / "dev.json").is_file():
        data = REPO / "tests" / "data" / "spider_mini"
    firsts: dict[str, Task] = {}
    for task in load_tasks("spider", data, missing_db="skip"):  # one question of each database
        firsts.setdefault(task.db_id or "", task)
    tasks = list(firsts.values())[: args.questions]
    register()  # skyrl_gym.make("sqlscout", ...) from here on, as for skyrl_gym's own envs
    episode = EpisodeConfig(max_rounds=4, token_budget=8192, schema=SchemaMode.WITHHELD)
    env_config = {"episode": episode.to_dict(), "reward": "sqale-dense"}  # what SkyRL's config section holds
    rewards: list[tuple[str, str, float]] = []
    for row in dataset_rows(tasks, episode):  # what a SkyRL dataset row holds; the rest reaches the env in extras
        extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
        gold = row["task"]["gold_sql"]
        scripts = {
            "explore, then right": [call("list_tables"), call("run_query", sql=gold), call("submit_sql", sql=gold)],
            "wrong at once": [call("submit_sql", sql="SELECT 1")],
        }
        for name, replies in scripts.items():
            env = skyrl_gym.make(row["env_class"], env_config=env_config, extras=extras)
            messages, _ = env.init(row["prompt"])
            print(f"\n== {row['task']['db_id']} q{row['task']['question_id']} ({name}): {row['task']['question']}")
            print(f"   prompt: {len(messages)} messages, {sum(len(m['content']) for m in messages)} characters")
            for reply in replies:
                out = env.step(reply)
                print(f"   > {reply}")
                for obs in out["observations"]:
                    lines = obs["content"].splitlines()
                    shown = "\n     ".join(lines[:6] + (["..."] if len(lines) > 6 else []))
                    print(f"   < [{obs['role']}] {shown}")
                if out["done"]:
                    meta = out["metadata"]
                    print(f"   done: reward {out['reward']:.2f} ({meta['outcome']}, {meta['stop_reason']})")
                    rewards.append((row["task"]["question_id"], name, float(out["reward"])))
                    break
            env.close()
    print("\nrewards:")
    for question_id, name, value in rewards:
        print(f"  q{question_id:<5} {name:<20} {value:.2f}")
    print(f"{len(rewards)} episodes in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
