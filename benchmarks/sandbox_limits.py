"""Worst-case time and memory of the sandbox over the hostile corpora (issue 13).

Every statement of ``tests/data/hostile_sql.jsonl`` and ``tests/data/runaway_sql.jsonl``
runs on a copy of Chinook through ``run_query``, ``submit_sql`` and the scoring executor
(``execute_for_scoring``, up to a million rows), each statement in a fresh process so
that its peak RSS is its own. Prints the slowest statements, the largest peak RSS, and
whether every one ended within the deadline plus 0.5 s; the file's sha256 is checked
unchanged and the folder checked free of new files.

    PYTHONPATH=src python benchmarks/sandbox_limits.py --data ../shared/data [--deadline 1]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPORA = [REPO / "tests" / "data" / "hostile_sql.jsonl", REPO / "tests" / "data" / "runaway_sql.jsonl"]

# Run in a child: one statement, three paths; prints seconds per path and peak RSS (MB).
CHILD = """
import json, resource, sys, time
from sqlscout.env.sandbox import Database, SandboxConfig
from sqlscout.env.tools import call_tool
from sqlscout.scoring import execute_for_scoring
path, deadline, sql = sys.argv[1], float(sys.argv[2]), sys.argv[3]
db = Database(path, SandboxConfig(timeout_s=deadline))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
times = {}
for name, run in (
    ("run_query", lambda: call_tool(db, "run_query", {"sql": sql})),
    ("submit_sql", lambda: call_tool(db, "submit_sql", {"sql": sql})),
    ("scoring", lambda: execute_for_scoring(db, sql, timeout_s=deadline)),
):
    start = time.perf_counter()
    run()
    times[name] = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"times": times, "rss_mb": rss / 1024, "base_mb": base / 1024}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--deadline", type=float, default=1.0, help="statement deadline in seconds")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="sqlscout-limits-"))
    db = Path(shutil.copy(args.data / "chinook" / "Chinook_Sqlite.sqlite", folder / "chinook.sqlite"))
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    results = []
    for corpus in CORPORA:
        for line in corpus.read_text().splitlines():
            if not line.strip():
                continue
            case = json.loads(line)
            sql = case["sql"].replace("{t}", "Track").replace("{c}", "Name").replace("{dir}", str(folder))
            if "\x00" in sql:
                sql = sql.replace("\x00", "\\0")  # argv cannot carry NUL; the tests cover those
            done = subprocess.run(
                [sys.executable, "-c", CHILD, str(db), str(args.deadline), sql],
                capture_output=True, text=True, env=env, timeout=600,
            )
            if done.returncode != 0:
                raise SystemExit(f"child failed on {case['why']!r}:\n{done.stderr}")
            measured = json.loads(done.stdout)
            results.append((max(measured["times"].values()), measured["rss_mb"], measured["base_mb"], corpus.stem, case["why"]))
    after = hashlib.sha256(db.read_bytes()).hexdigest()
    beside = sorted(p.name for p in folder.iterdir())
    shutil.rmtree(folder)
    worst_time = max(results)
    worst_rss = max(results, key=lambda r: r[1])
    late = [r for r in results if r[0] > args.deadline + 0.5]
    print(f"{len(results)} statements x 3 paths (run_query, submit_sql, scoring), deadline {args.deadline:g} s")
    print("slowest:")
    for took, rss, _base, corpus, why in sorted(results, reverse=True)[:5]:
        print(f"  {took:6.2f} s  {rss:7.1f} MB  [{corpus}] {why}")
    print(f"worst time: {worst_time[0]:.2f} s ({worst_time[4]})")
    print(f"worst peak RSS: {worst_rss[1]:.1f} MB (process after import: {worst_rss[2]:.1f} MB; {worst_rss[4]})")
    print(f"over deadline + 0.5 s: {len(late)}")
    print(f"file unchanged: {after == before}; files beside it: {beside}")


if __name__ == "__main__":
    main()
