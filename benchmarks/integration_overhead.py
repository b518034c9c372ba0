"""What an episode step costs through each trainer integration against sqlscout's own path.

The same scripted episodes (``run_query`` with the gold query, then ``submit_sql`` with
it) on the first N runnable Spider dev questions, rewarded with ``sqale-dense``:

- **TRL** (`sqlscout.integrations.trl.SqlscoutRollout`, what ``GRPOTrainer`` calls) against
  sqlscout's trainer path (``collect_groups`` over a :class:`~sqlscout.runner.Runner`),
  both with the scripted backend and the real Qwen3.5 tokenizer: the rollout's own work
  (token ids, ``env_mask``, log-probabilities, the reward) beside the runner's.
- **SkyRL** (``skyrl_gym.make("sqlscout")``: ``init`` then ``step`` per reply) against the
  same episodes driven on :class:`~sqlscout.env.episode.Episode` directly and rewarded as
  the environment rewards (``score_sql`` then the preset): the adapter's own cost.
- **verifiers**, where ``sqlscout.integrations.verifiers`` and the package import.

Prints seconds per step (medians of ``--repeat`` runs) and each ratio; goal ≤ 1.5×.
An integration whose package is not installed is skipped with a line saying so.

Run: ``python benchmarks/integration_overhead.py [--questions 40] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import types
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from sqlscout.backends.scripted import ScriptedBackend  # noqa: E402
from sqlscout.data import load_tasks  # noqa: E402
from sqlscout.env.config import EpisodeConfig  # noqa: E402
from sqlscout.env.prompts import SchemaMode  # noqa: E402
from sqlscout.scoring import REWARD_PRESETS  # noqa: E402

EPISODE = EpisodeConfig(max_rounds=3, token_budget=8192, schema=SchemaMode.FULL)
PRESET = REWARD_PRESETS["sqale-dense"]
STEPS_PER_EPISODE = 2


def _data(given: str | None) -> Path:
    for candidate in ([Path(given)] if given else []) + [ROOT.parent / "shared/data/spider", ROOT / "tests/data/spider_mini"]:
        if (candidate / "dev.json").is_file():
            return candidate
    raise SystemExit("no Spider data: pass --data DIR (a folder with dev.json and database/)")


def _call(tool: str, sql: str) -> str:
    return json.dumps({"tool": tool, "args": {"sql": sql}})


def _oracle(tasks: list[Any]) -> Callable[[Any], str]:
    gold = {t.question: t.gold_sql for t in tasks}

    def reply(turn: Any) -> str:
        question = turn.prompt.rsplit("Question: ", 1)[1].split("<|im_end|>", 1)[0].strip()
        return _call("run_query" if turn.turn == 0 else "submit_sql", gold[question])

    return reply


def _median(work: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def trl_pair(tasks: list[Any], repeat: int) -> tuple[float, float] | None:
    try:
        from sqlscout.integrations.trl import SqlscoutRollout
    except ImportError as exc:
        print(f"TRL: skipped ({exc})")
        return None
    from sqlscout.backends.offline_tokenizers import qwen3_5_tokenizer

    from sqlscout.runner import Runner, RunnerConfig
    from sqlscout.scoring.gold import GoldResults
    from sqlscout.train.rollout import collect_groups

    tokenizer = qwen3_5_tokenizer()
    reply = _oracle(tasks)

    def ours() -> None:
        with Runner(ScriptedBackend(reply, tokenizer=tokenizer), RunnerConfig(episode=EPISODE, max_batch=64)) as runner:
            collect_groups(runner, tasks, list(range(len(tasks))), group_size=1, seed=0, reward=PRESET,
                           scale_by_std=False, gold=GoldResults())  # fmt: skip

    def theirs() -> None:
        rollout = SqlscoutRollout(tasks, episode=EPISODE, max_batch=64, backend=lambda _t: ScriptedBackend(reply, tokenizer=tokenizer))
        rollout([row["prompt"] for row in rollout.dataset()], types.SimpleNamespace())

    ours(), theirs()  # warm: gold results, tokenizer, databases
    return _median(ours, repeat), _median(theirs, repeat)


def skyrl_pair(tasks: list[Any], repeat: int) -> tuple[float, float] | None:
    try:
        import skyrl_gym  # type: ignore[import-not-found]

        from sqlscout.integrations.skyrl import dataset_rows, register
    except ImportError as exc:
        print(f"SkyRL: skipped ({exc}); pip install 'sqlscout[skyrl]'")
        return None
    from sqlscout.engines import open_database
    from sqlscout.env.episode import Episode
    from sqlscout.scoring import reward, score_sql
    from sqlscout.scoring.gold import GoldResults

    register()
    rows = dataset_rows(tasks, EPISODE)
    databases = {t.db_path: open_database(t.db_path) for t in tasks}
    gold = GoldResults()

    def ours() -> None:
        for task in tasks:
            db = databases[task.db_path]
            episode = Episode(task, db, EPISODE)
            episode.request()
            for tool in ("run_query", "submit_sql"):
                episode.step(_call(tool, task.gold_sql))
            final = episode.result().final_sql
            scored = score_sql(db, final, task.gold_sql, gold=gold.get(db, task.gold_sql)[0], semantics=PRESET.semantics)
            reward(scored, PRESET, pred_sql=final, gold_sql=task.gold_sql)

    def theirs() -> None:
        for task, row in zip(tasks, rows):
            env = skyrl_gym.make(row["env_class"], env_config={"episode": EPISODE, "reward": "sqale-dense"}, extras=row)
            env.init(row["prompt"])
            for tool in ("run_query", "submit_sql"):
                env.step(_call(tool, task.gold_sql))

    ours(), theirs()
    return _median(ours, repeat), _median(theirs, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="Spider folder (default: ../shared/data/spider, else the repo's fixture)")
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tasks = load_tasks("spider", _data(args.data), missing_db="skip")[: args.questions]
    steps = len(tasks) * STEPS_PER_EPISODE
    print(f"{len(tasks)} questions x {STEPS_PER_EPISODE} steps, medians of {args.repeat} runs")
    print(f"{'integration':<10} {'sqlscout ms/step':>17} {'through it ms/step':>19} {'ratio':>6}")
    for name, pair in (("TRL", trl_pair), ("SkyRL", skyrl_pair)):
        measured = pair(tasks, args.repeat)
        if measured is None:
            continue
        ours, theirs = measured
        print(f"{name:<10} {1000 * ours / steps:>17.3f} {1000 * theirs / steps:>19.3f} {theirs / ours:>5.2f}x")


if __name__ == "__main__":
    main()
