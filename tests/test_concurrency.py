"""Many episodes read one database file at once (SPEC §2: thread-safe)."""

from __future__ import annotations

import json
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor

from conftest import spider_db
from sqlscout import Database, Episode, EpisodeConfig, StopReason, Task, score_sql

EPISODES = 64
DB = spider_db("concert_singer")


def call(tool: str, **args: object) -> str:
    return json.dumps({"tool": tool, "args": args})


def test_64_episodes_read_one_file_at_once() -> None:
    # Expected answers from a plain sqlite3 connection.
    with sqlite3.connect(f"file:{DB}?mode=ro", uri=True) as plain:
        singers = plain.execute("SELECT Singer_ID, Name FROM singer ORDER BY Singer_ID").fetchall()
        tables = [r[0] for r in plain.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
    plain.close()
    shared = Database(DB)  # half the episodes share one pool; the others open the file themselves
    barrier = threading.Barrier(EPISODES)

    def one(i: int) -> tuple[int, object, list[str], bool]:
        db = shared if i % 2 == 0 else Database(DB)
        singer_id, _ = singers[i % len(singers)]
        sql = f"SELECT Name FROM singer WHERE Singer_ID = {singer_id}"
        replies = [
            call("list_tables") + "\n" + call("describe_table", table_name="singer"),
            call("run_query", sql=sql) + "\n" + call("join_path", table_a="stadium", table_b="singer"),
            call("distinct_values", table_name="singer", column_name="Country"),
            call("submit_sql", sql=sql),
        ]
        episode = Episode(Task(f"q{i}", "Who is this singer?", DB), db, EpisodeConfig())
        barrier.wait(timeout=30)  # start together, so the reads really overlap
        for reply in replies:  # stepped by hand: each thread is one episode's driver
            episode.step(reply)
        result = episode.result()
        outputs = [c.output for r in result.rounds for c in r.calls]
        correct = score_sql(db, result.final_sql, sql).verdict.strict
        if db is not shared:
            db.close()
        return i, result, outputs, correct

    with ThreadPoolExecutor(max_workers=EPISODES) as pool:
        done = list(pool.map(one, range(EPISODES)))
    shared.close()

    assert len(done) == EPISODES
    for i, result, outputs, correct in done:
        assert result.stop_reason is StopReason.SUBMITTED and correct
        assert all(c.ok for r in result.rounds for c in r.calls), i
        assert outputs[0].split("\n") == tables
        expected_name = singers[i % len(singers)][1]
        assert outputs[2] == f"Name\n{expected_name}"
        assert outputs[3].startswith("Shortest join path from stadium to singer (3 joins):")
