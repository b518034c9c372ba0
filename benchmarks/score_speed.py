"""`sqlscout score` against the official BIRD evaluation approach, on the same predictions.

The reference is the official BIRD script's method, re-implemented here as it works:
a ``multiprocessing.Pool`` with one ``apply_async`` task per question; each task runs
under ``func_timeout`` (the PyPI package the script uses), opens a fresh ``sqlite3``
connection, runs the predicted then the gold query with ``fetchall()``, and compares
``set(pred) == set(gold)``; nothing is cached.

The predictions are Spider dev's runnable gold queries, perturbed
(``sqlscout.evaluation.perturb``) so that the verdicts vary. Both sides use one process
per core. sqlscout is timed cold (empty gold cache) and warm (the cache the cold run
filled). Each figure is the median of ``--repeats`` runs in this process.

    PYTHONPATH=src python benchmarks/score_speed.py --data ../shared/data
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from sqlscout.data import load_tasks
from sqlscout.evaluation.perturb import VARIANTS, perturb
from sqlscout.evaluation.scorer import Prediction, ScoreConfig, score_predictions

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


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()

    tasks = load_tasks("spider", args.data / "spider", missing_db="skip")
    predictions = [Prediction(t, perturb(t.gold_sql or "", i)) for i, t in enumerate(tasks)]
    pairs = [(p.sql or "", p.task.gold_sql or "") for p in predictions]
    db_paths = [str(t.db_path) for t in tasks]
    print(f"{len(tasks)} Spider dev questions, predictions = gold perturbed {len(VARIANTS)} ways; "
          f"{args.workers} processes each; median of {args.repeats} runs")

    official_times, cold_times, warm_times = [], [], []
    official = cold = warm = None
    for _ in range(args.repeats):
        seconds, official = _timed(lambda: official_scores(pairs, db_paths, args.workers))
        official_times.append(seconds)
        with tempfile.TemporaryDirectory() as cache:
            config = ScoreConfig(workers=args.workers, cache_dir=Path(cache))
            seconds, cold = _timed(lambda: score_predictions(predictions, config))
            cold_times.append(seconds)
            seconds, warm = _timed(lambda: score_predictions(predictions, config))
            warm_times.append(seconds)
            assert warm.gold_cache_hits == len(predictions), "the warm run should take every gold result from the cache"

    assert official is not None and cold is not None and warm is not None
    mine = [int(v.official) for v in cold.verdicts]
    agree = sum(a == b for a, b in zip(official, mine))
    warm_agree = sum(int(a.official) == int(b.official) for a, b in zip(cold.verdicts, warm.verdicts))
    t_official, t_cold, t_warm = (statistics.median(t) for t in (official_times, cold_times, warm_times))
    print(f"official approach        {t_official:7.3f} s   accuracy {sum(official) / len(official):.4f}")
    print(f"sqlscout score, cold     {t_cold:7.3f} s   {t_official / t_cold:5.1f}x faster   (goal >= 3x)")
    print(f"sqlscout score, cached   {t_warm:7.3f} s   {t_official / t_warm:5.1f}x faster   (goal >= 20x)")
    print(f"verdict agreement        {agree}/{len(mine)} with the official approach; cached run {warm_agree}/{len(mine)} with cold")
    by_variant = Counter()
    for i, v in enumerate(cold.verdicts):
        by_variant[(VARIANTS[i % len(VARIANTS)][0], v.official, v.strict, v.spider)] += 1
    print("verdict mix (variant, official, strict, spider): count")
    for key, n in sorted(by_variant.items()):
        print(f"  {key}: {n}")
    if agree != len(mine):
        for i, (a, b) in enumerate(zip(official, mine)):
            if a != b:
                print(f"  disagree on question {tasks[i].question_id}: official {a}, sqlscout {b}: {pairs[i][0][:100]}")
        sys.exit(1)


if __name__ == "__main__":
    main()
