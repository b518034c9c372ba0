"""How much the environment costs on top of SQLite, and how it compares with skyrl-gym.

Replays an *oracle* episode for every runnable Spider dev question: ``list_tables``,
``describe_table`` on each table the gold SQL reads, ``run_query`` with the gold SQL,
``submit_sql`` with it, then scores the answer (``score_sql``, as the evaluator and the
reward do). One tool call per model turn, so a step is one model turn answered.

Figures printed:

- **episodes/s** and **steps/s** of sqlscout, sequential, one process.
- **overhead**: the share of episode time spent outside SQLite's own execution.
  *Method*: the benchmark's ``Database`` subclass records every statement the
  environment sends to SQLite (schema reads, tool queries, EXPLAIN checks, scoring),
  with its row cap. After the timed run, the same statements are replayed, in order,
  on a plain ``sqlite3`` connection to the same file (read-only URI, no authorizer,
  no progress handler, same fetch sizes) and timed. That replay time is *SQLite's
  own time*; everything else in the episode time (parsing, dispatch, rendering,
  prompts, token counting, the sandbox's authorizer and deadline callbacks, Python
  glue) is overhead. Goal: below 10 %.
- **step-throughput ratio** against skyrl-gym's ``SQLEnv`` (PyPI ``skyrl-gym``), driven
  with the same queries in the same order: its only tool is SQL, so ``list_tables``
  becomes ``<sql>SELECT name FROM sqlite_master ...</sql>``, ``describe_table`` a
  ``SELECT sql FROM sqlite_master WHERE name = ...``, ``run_query`` ``<sql>gold</sql>``,
  and the answer ``<solution>gold</solution>``, whose step computes skyrl-gym's
  reward (it runs the answer and the gold query). Goal: sqlscout at least 3x.

Where skyrl-gym comes from (it need not be installed beside sqlscout): the skyrl-gym
side runs in a subprocess of ``--skyrl-python PYTHON``, else of ``$SKYRL_PYTHON``, else
of this interpreter if it can import ``skyrl_gym``. To make one:
``python -m venv /tmp/skyrl && /tmp/skyrl/bin/pip install skyrl-gym`` and pass
``--skyrl-python /tmp/skyrl/bin/python``. Without it the comparison is skipped.
Use the same Python version on both sides (SQLite's version comes with it).

Run: ``python benchmarks/env_overhead.py [--data ../shared/data] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # run from a checkout without installing

LIST_TABLES_SQL = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
DESCRIBE_SQL = "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = '{table}'"


# -- the oracle episodes ------------------------------------------------------------


def load_oracle(data: Path) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Runnable Spider dev questions with the canonical names of their gold tables."""
    from sqlscout.env.sandbox import Database
    from sqlscout.scoring import tables_used

    questions = json.loads((data / "spider" / "dev.json").read_text())
    skipped = {"missing database": 0, "gold fails": 0}
    databases: dict[str, Database | None] = {}
    episodes = []
    for i, q in enumerate(questions):
        path = data / "spider" / "database" / q["db_id"] / f"{q['db_id']}.sqlite"
        if q["db_id"] not in databases:
            databases[q["db_id"]] = Database(path) if path.exists() else None
        db = databases[q["db_id"]]
        if db is None:
            skipped["missing database"] += 1
            continue
        try:
            db.execute(q["query"], max_rows=1_000_000, timeout_s=30)
        except Exception:  # noqa: BLE001 - a gold query that fails is not runnable
            skipped["gold fails"] += 1
            continue
        tables = []
        for name in sorted(tables_used(q["query"])):
            try:
                tables.append(db.schema.table(name).name)
            except Exception:  # noqa: BLE001 - an alias sqlglot took for a table
                pass
        episodes.append({"id": i, "db_id": q["db_id"], "db": str(path), "question": q["question"],
                         "gold": q["query"], "tables": tables})
    for db in databases.values():
        if db is not None:
            db.close()
    return episodes, skipped


def _turns(ep: dict[str, Any]) -> list[str]:
    call = lambda tool, **args: json.dumps({"tool": tool, "args": args})  # noqa: E731
    return (
        [call("list_tables")]
        + [call("describe_table", table_name=t) for t in ep["tables"]]
        + [call("run_query", sql=ep["gold"]), call("submit_sql", sql=ep["gold"])]
    )


def run_sqlscout(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """Time the oracle episodes, recording what reached SQLite; then time SQLite alone."""
    from sqlscout.env.config import EpisodeConfig
    from sqlscout.env.episode import Episode
    from sqlscout.env.trace import StopReason
    from sqlscout.env.sandbox import Database
    from sqlscout.scoring import score_sql
    from sqlscout.env.task import Task

    class RecordingDatabase(Database):
        """Keeps (sql, params, row cap) of every statement it is asked to run."""

        log: list[tuple[str, str, tuple[Any, ...], int]] = []

        def execute(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None,
                    params: tuple[Any, ...] = ()) -> Any:
            RecordingDatabase.log.append((str(self.path), sql, params, self.config.max_rows if max_rows is None else max_rows))
            return super().execute(sql, timeout_s=timeout_s, max_rows=max_rows, params=params)

    RecordingDatabase.log = []
    config = EpisodeConfig(max_rounds=32)  # room for one call per turn on every gold table
    # Tasks and the model's texts exist before a run starts (loaders, the model): not timed.
    work = [(Task(str(ep["id"]), ep["question"], ep["db"], gold_sql=ep["gold"]), _turns(ep)) for ep in episodes]
    databases: dict[str, Database] = {}
    steps = 0
    correct = 0
    start = time.perf_counter()
    for task, turns in work:
        db = databases.get(task.db_path)
        if db is None:  # opened once per file, as the runner does; its schema is read once
            db = databases[task.db_path] = RecordingDatabase(task.db_path)
        episode = Episode(task, db, config)
        for turn in turns:  # the environment alone, stepped as the runner steps it
            if episode.done:
                break
            episode.step(turn)
        result = episode.result()
        verdict = score_sql(db, result.final_sql, task.gold_sql).verdict
        steps += len(result.rounds)
        correct += verdict.official and result.stop_reason is StopReason.SUBMITTED
    elapsed = time.perf_counter() - start
    for db in databases.values():
        db.close()
    return {"elapsed_s": elapsed, "steps": steps, "correct": correct, "sqlite_s": replay(RecordingDatabase.log),
            "statements": len(RecordingDatabase.log)}


def replay(log: list[tuple[str, str, tuple[Any, ...], int]]) -> float:
    """Run the recorded statements on plain connections: SQLite's own time."""
    connections: dict[str, sqlite3.Connection] = {}
    total = 0.0
    for path, sql, params, cap in log:
        conn = connections.get(path)
        if conn is None:
            conn = connections[path] = sqlite3.connect(Path(path).as_uri() + "?mode=ro", uri=True, isolation_level=None)
        start = time.perf_counter()
        try:
            cursor = conn.execute(sql, params)
            cursor.fetchmany(cap + 1)
            cursor.close()
        except sqlite3.Error:
            pass  # the sandbox refused or SQLite failed it there too
        total += time.perf_counter() - start
    for conn in connections.values():
        conn.close()
    return total


# -- skyrl-gym, in its own interpreter ------------------------------------------------


def skyrl_worker(spec_file: Path) -> None:
    """Entry point inside the skyrl-gym interpreter: drive SQLEnv, print timings as JSON."""
    from skyrl_gym.envs.sql.env import SQLEnv, Text2SQLEnvConfig

    spec = json.loads(spec_file.read_text())
    config = Text2SQLEnvConfig(db_path=spec["data"])
    work = [
        (ep, [f"<think>survey</think><sql>{LIST_TABLES_SQL}</sql>"]
         + [f"<think>inspect</think><sql>{DESCRIBE_SQL.format(table=t)}</sql>" for t in ep["tables"]]
         + [f"<think>draft</think><sql>{ep['gold']}</sql>", f"<think>done</think><solution>{ep['gold']}</solution>"])
        for ep in spec["episodes"]
    ]
    steps = rewarded = 0
    start = time.perf_counter()
    for ep, actions in work:
        env = SQLEnv(config, {"db_id": ep["db_id"], "data": "spider", "max_turns": len(actions) + 1,
                              "reward_spec": {"ground_truth": ep["gold"]}})
        env.init([{"role": "user", "content": ep["question"]}])
        for action in actions:
            out = env.step(action)
            steps += 1
            if out["done"]:
                rewarded += out["reward"] == 1.0
                break
        env.close()
    print(json.dumps({"elapsed_s": time.perf_counter() - start, "steps": steps, "correct": rewarded}))


def find_skyrl_python(explicit: str | None) -> str | None:
    candidates = [explicit, os.environ.get("SKYRL_PYTHON")]
    try:
        import importlib.util

        if importlib.util.find_spec("skyrl_gym") is not None:
            candidates.append(sys.executable)
    except (ImportError, ValueError):
        pass
    for python in candidates:
        if python and Path(python).exists():
            probe = subprocess.run([python, "-c", "import skyrl_gym"], capture_output=True)
            if probe.returncode == 0:
                return python
    return None


def run_skyrl(python: str, data: Path, episodes: list[dict[str, Any]]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        spec_file = Path(tmp) / "episodes.json"
        spec_file.write_text(json.dumps({"data": str(data), "episodes": episodes}))
        out = subprocess.run([python, __file__, "--skyrl-worker", str(spec_file)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- main ---------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data", help="folder holding spider/")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes; the best is reported")
    parser.add_argument("--skyrl-python", help="a Python that can import skyrl_gym")
    parser.add_argument("--limit", type=int, default=None, help="only the first N runnable questions")
    parser.add_argument("--skyrl-worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.skyrl_worker:
        skyrl_worker(args.skyrl_worker)
        return

    data = args.data.resolve()
    episodes, skipped = load_oracle(data)
    episodes = episodes[: args.limit] if args.limit else episodes
    print(f"Spider dev: {len(episodes)} runnable questions "
          f"(skipped {skipped['missing database']} with no database, {skipped['gold fails']} whose gold SQL fails)")

    ours = min((run_sqlscout(episodes) for _ in range(args.repeat)), key=lambda r: r["elapsed_s"])
    overhead = (ours["elapsed_s"] - ours["sqlite_s"]) / ours["elapsed_s"]
    print(f"sqlscout:  {len(episodes) / ours['elapsed_s']:8.1f} episodes/s  {ours['steps'] / ours['elapsed_s']:8.1f} steps/s  "
          f"({ours['steps']} steps, {ours['statements']} statements, {ours['correct']}/{len(episodes)} scored correct)")
    per_step_us = (ours["elapsed_s"] - ours["sqlite_s"]) / ours["steps"] * 1e6
    print(f"SQLite's own time: {ours['sqlite_s']:.3f} s of {ours['elapsed_s']:.3f} s  ->  "
          f"overhead {overhead:.1%} of episode time (goal < 10 %), {per_step_us:.0f} us per step")

    python = find_skyrl_python(args.skyrl_python)
    if python is None:
        print("skyrl-gym: not found; pass --skyrl-python (see the docstring) to compare")
        return
    theirs = min((run_skyrl(python, data, episodes) for _ in range(args.repeat)), key=lambda r: r["elapsed_s"])
    ratio = (ours["steps"] / ours["elapsed_s"]) / (theirs["steps"] / theirs["elapsed_s"])
    print(f"skyrl-gym: {len(episodes) / theirs['elapsed_s']:8.1f} episodes/s  {theirs['steps'] / theirs['elapsed_s']:8.1f} steps/s  "
          f"({theirs['steps']} steps, {theirs['correct']}/{len(episodes)} rewarded 1.0; {python})")
    print(f"step-throughput ratio sqlscout / skyrl-gym: {ratio:.1f}x (goal >= 3x)")


if __name__ == "__main__":
    main()
