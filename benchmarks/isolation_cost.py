"""What a worker process costs a statement (sqlscout.env.isolation) against the in-process
sandbox, on the bundled Chinook database.

Prints, as medians over ``--repeat`` rounds of ``--queries`` statements each: the time of a
small statement in process and through a worker (its pickled round trip over a socket
pair), for a one-row count and a 5-row read as ``run_query`` makes; and the time to open an
``IsolatedDatabase`` (its first worker's start).

Run: ``python benchmarks/isolation_cost.py [--queries 500] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from sqlscout.env.isolation import IsolatedDatabase  # noqa: E402
from sqlscout.env.sandbox import Database  # noqa: E402

CHINOOK = ROOT / "src" / "sqlscout" / "data" / "chinook" / "Chinook_Sqlite.sqlite"
STATEMENTS = {
    "count": "SELECT count(*) FROM Track",
    "5 rows": "SELECT Name, Composer, Milliseconds FROM Track ORDER BY Milliseconds DESC LIMIT 5",
}


def _per_query(db: Database, sql: str, queries: int, repeat: int) -> float:
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(queries):
            db.execute(sql, max_rows=5)
        rounds.append((time.perf_counter() - start) / queries)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    opens = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        IsolatedDatabase(CHINOOK).close()
        opens.append(time.perf_counter() - start)
    print(f"open an IsolatedDatabase (its first worker): {1000 * statistics.median(opens):.0f} ms")
    with Database(CHINOOK) as plain, IsolatedDatabase(CHINOOK) as isolated:
        print(f"{'statement':<8} {'in process':>11} {'worker':>9} {'added':>8}")
        for name, sql in STATEMENTS.items():
            inside = _per_query(plain, sql, args.queries, args.repeat)
            worker = _per_query(isolated, sql, args.queries, args.repeat)
            print(f"{name:<8} {1000 * inside:>8.3f} ms {1000 * worker:>6.3f} ms {1000 * (worker - inside):>5.3f} ms")


if __name__ == "__main__":
    main()
