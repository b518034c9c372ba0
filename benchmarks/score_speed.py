"""`sqlscout score` against the official BIRD evaluation approach, on the same predictions.

The reference is the official BIRD script's method, re-implemented here as it works:
a ``multiprocessing.Pool`` with one ``apply_async`` task per question; each task runs
under ``func_timeout`` (the PyPI package the script uses), opens a fresh ``sqlite3``
connection, runs the predicted then the gold query with ``fetchall()``, and compares
``set(pred) == set(gold)``; nothing is cached.

The predictions are Spider dev's runnable gold queries, perturbed
(``sqlscout.evaluation.perturb``) so that the verdicts vary. The official approach uses
one process per core (``--workers``). sqlscout is timed as ``sqlscout score`` runs by
default (it decides where to score: on these small queries, in this process) and with
a pool of ``--workers`` processes from the start; each cold (empty gold cache) and warm
(the cache the cold run filled, so only the predictions run), and with
``--cache-predictions`` once every result is cached. Every figure is the median of
``--repeats`` runs in this process, as wall time and as CPU time (this process plus its
joined pool workers); memoised parses are forgotten before each run. On a shared,
loaded machine the CPU figure is the steadier one: wall time there mostly measures the
scheduler.

Note what each side computes per question: the official approach one set comparison;
sqlscout the official, strict and Spider verdicts and the outcome tier (which parses a
failing prediction with sqlglot), in the sandbox (read-only, deadline, row cap).

    PYTHONPATH=src python benchmarks/score_speed.py --data ../shared/data
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

from sqlscout.data import load_tasks
from sqlscout.evaluation.perturb import VARIANTS, perturb
from sqlscout.evaluation.batch_score import Prediction, ScoreConfig, ScoreRun, score_predictions
from sqlscout.scoring.compare import _parsed_order_by
from sqlscout.scoring.verdict import parses

# -- the official approach ----------------------------------------------------------


def _official_execute(predicted_sql: str, ground_truth: str, db_path: str) -> int:
    conn = sqlite3.connect(db_path)
    cursor = conn.cursor()
    cursor.execute(predicted_sql)
    predicted = cursor.fetchall()
    cursor.execute(ground_truth)
    gold = cursor.fetchall()
    return int(set(predicted) == set(gold))


def _official_task(predicted_sql: str, ground_truth: str, db_path: str, index: int, timeout_s: float) -> dict:
    from func_timeout import FunctionTimedOut, func_timeout

    try:
        res = func_timeout(timeout_s, _official_execute, args=(predicted_sql, ground_truth, db_path))
    except FunctionTimedOut:
        res = 0
    except Exception:  # noqa: BLE001 - the official script scores any failure as wrong
        res = 0
    return {"sql_idx": index, "res": res}


def official_scores(pairs: list[tuple[str, str]], db_paths: list[str], cpus: int, timeout_s: float = 30.0) -> list[int]:
    results: list[dict] = []
    pool = mp.Pool(processes=cpus)
    for i, (pred, gold) in enumerate(pairs):
        pool.apply_async(_official_task, args=(pred, gold, db_paths[i], i, timeout_s), callback=results.append)
    pool.close()
    pool.join()
    results.sort(key=lambda r: r["sql_idx"])
    return [r["res"] for r in results]


# -- the comparison -----------------------------------------------------------------


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the pool workers)."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def _forget() -> None:
    """Drop what this process memoised (parses, ORDER BY decisions), so that no timed
    run profits from an earlier one except through the on-disk cache it is meant to use."""
    parses.cache_clear()
    _parsed_order_by.cache_clear()


def _timed(fn):
    """(wall seconds, CPU seconds, value). Both pools are joined before they return, so
    their workers' CPU time is counted; on a shared machine CPU time is the steadier figure."""
    _forget()
    start, cpu = time.perf_counter(), _cpu()
    value = fn()
    return time.perf_counter() - start, _cpu() - cpu, value


def _median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="processes of the official approach, and of sqlscout's forced-pool lines")
    args = parser.parse_args()

    tasks = load_tasks("spider", args.data / "spider", missing_db="skip")
    predictions = [Prediction(t, perturb(t.gold_sql or "", i)) for i, t in enumerate(tasks)]
    pairs = [(p.sql or "", p.task.gold_sql or "") for p in predictions]
    db_paths = [str(t.db_path) for t in tasks]
    print(f"{len(tasks)} Spider dev questions, predictions = gold perturbed {len(VARIANTS)} ways; "
          f"official approach on {args.workers} processes; median of {args.repeats} runs; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    times: dict[str, list[tuple[float, float]]] = {key: [] for key, _, _ in ROWS}
    runs: dict[str, ScoreRun] = {}
    official: list[int] = []
    for _ in range(args.repeats):
        wall, cpu, official = _timed(lambda: official_scores(pairs, db_paths, args.workers))
        times["official"].append((wall, cpu))
        for pool in (None, args.workers):  # decided as it goes (the default), then a pool from the start
            suffix = "" if pool is None else "-pool"
            with tempfile.TemporaryDirectory() as cache:
                config = ScoreConfig(workers=pool, cache_dir=Path(cache))
                for key in ("cold", "warm"):
                    wall, cpu, runs[key + suffix] = _timed(lambda: score_predictions(predictions, config))
                    times[key + suffix].append((wall, cpu))
                assert runs["warm" + suffix].gold_runs == 0, "the warm run should take every gold result from the cache"
                if pool is None:
                    everything = replace(config, cache_predictions=True)
                    score_predictions(predictions, everything)  # fills the prediction results in
                    wall, cpu, runs["all"] = _timed(lambda: score_predictions(predictions, everything))
                    times["all"].append((wall, cpu))

    cold = runs["cold"]
    mine = [int(v.official) for v in cold.verdicts]
    agree = sum(a == b for a, b in zip(official, mine))
    same = {key: sum(a == b for a, b in zip(cold.verdicts, run.verdicts)) for key, run in runs.items()}
    median = {k: (_median([w for w, _ in v]), _median([c for _, c in v])) for k, v in times.items()}
    (ow, oc) = median["official"]
    print(f"{'':44} {'wall':>8} {'ratio':>7}   {'CPU':>8} {'ratio':>7}")
    for key, label, goal in ROWS:
        wall, cpu = median[key]
        print(f"{label:44} {wall:7.3f}s {ow / wall:6.1f}x   {cpu:7.3f}s {oc / cpu:6.1f}x   {goal}")
    for key, run in runs.items():
        executed = len(run.verdicts) - run.pred_cache_hits
        print(f"  {key:9} predictions executed {executed}/{len(run.verdicts)}; gold queries run {run.gold_runs}, "
              f"from cache {run.gold_cache_hits}, repeated {run.gold_repeats}; processes {run.workers}; "
              f"verdicts identical to cold {same[key]}/{len(run.verdicts)}")
    print(f"official accuracy {sum(official) / len(official):.4f}; sqlscout {sum(mine) / len(mine):.4f}")
    print(f"verdict agreement {agree}/{len(mine)} with the official approach")
    by_variant = Counter()
    for i, v in enumerate(cold.verdicts):
        by_variant[(VARIANTS[i % len(VARIANTS)][0], v.official, v.strict, v.spider)] += 1
    print("verdict mix (variant, official, strict, spider): count")
    for key, n in sorted(by_variant.items()):
        print(f"  {key}: {n}")
    if agree != len(mine) or any(n != len(mine) for n in same.values()):
        for i, (a, b) in enumerate(zip(official, mine)):
            if a != b:
                print(f"  disagree on question {tasks[i].question_id}: official {a}, sqlscout {b}: {pairs[i][0][:100]}")
        sys.exit(1)


ROWS = [
    ("official", "official approach", ""),
    ("cold", "sqlscout score, cold", "(goal >= 3x)"),
    ("warm", "sqlscout score, gold cached", "(goal >= 20x)"),
    ("all", "sqlscout score, --cache-predictions", "(every result cached)"),
    ("cold-pool", "sqlscout score --workers N, cold", "(a pool from the start)"),
    ("warm-pool", "sqlscout score --workers N, gold cached", "(a pool from the start)"),
]


if __name__ == "__main__":
    main()
