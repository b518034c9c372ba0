"""The sandbox's deadline, caps, decoding and error handling, on real SQLite files."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path

import pytest

from conftest import CHINOOK
from sqlscout.errors import ConfigError, DatabaseError, QueryError, QueryRefused, QueryTimeout
from sqlscout.env.sandbox import Database, SandboxConfig
from sqlscout.env.tools import call_tool

DEADLINE_S = 0.4
SLACK_S = 0.5  # the bound: a runaway ends within deadline + 0.5 s

RUNAWAYS = {
    "endless_recursive_cte": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    "large_cross_join": "SELECT count(*) FROM Track a, Track b, Track c",
    "huge_sort": "SELECT a.Name, b.Name FROM Track a, Track b ORDER BY a.Name || b.Name LIMIT 3",
    "sort_of_endless_cte": (
        "SELECT x FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c) "
        "ORDER BY x DESC LIMIT 1"
    ),
}


@pytest.fixture(scope="module")
def chinook() -> Database:
    db = Database(CHINOOK, SandboxConfig(timeout_s=DEADLINE_S))
    yield db
    db.close()


@pytest.mark.parametrize("sql", list(RUNAWAYS.values()), ids=list(RUNAWAYS))
def test_runaway_query_times_out_and_the_database_stays_usable(chinook: Database, sql: str) -> None:
    start = time.perf_counter()
    outcome = call_tool(chinook, "run_query", {"sql": sql})
    elapsed = time.perf_counter() - start
    assert not outcome.ok
    assert outcome.text == (
        f"Error: Query timed out after {DEADLINE_S:g} s and was stopped; simplify it (add LIMIT, avoid cross joins)."
    )
    assert DEADLINE_S <= elapsed < DEADLINE_S + SLACK_S
    # The same (only) pooled connection answers the next query, with no handler left over.
    assert call_tool(chinook, "run_query", {"sql": "SELECT COUNT(*) FROM Track"}).text == "COUNT(*)\n3503"
    assert chinook.execute("SELECT COUNT(*) FROM Album").rows == [(347,)]


def test_per_call_deadline_overrides_the_config(chinook: Database) -> None:
    start = time.perf_counter()
    with pytest.raises(QueryTimeout, match="after 0.1 s"):
        chinook.execute(RUNAWAYS["endless_recursive_cte"], timeout_s=0.1)
    assert time.perf_counter() - start < 0.1 + SLACK_S


def test_endless_result_is_streamed_not_fetched(chinook: Database) -> None:
    # No deadline is hit: only the first rows (plus one, to know there are more) are read.
    start = time.perf_counter()
    outcome = call_tool(chinook, "run_query", {"sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c"})
    assert time.perf_counter() - start < DEADLINE_S
    assert outcome.text == "x\n1\n2\n3\n4\n5\n... (showing first 5 rows; more rows exist)"


def test_row_cap_and_truncation_flag(chinook: Database) -> None:
    result = chinook.execute("SELECT TrackId FROM Track ORDER BY TrackId", max_rows=3)
    assert result.rows == [(1,), (2,), (3,)] and result.truncated
    exact = chinook.execute("SELECT GenreId FROM Genre", max_rows=25)
    assert len(exact.rows) == 25 and not exact.truncated
    assert exact.columns == ("GenreId",)


def test_default_row_cap_comes_from_the_config() -> None:
    with Database(CHINOOK, SandboxConfig(max_rows=10)) as db:
        result = db.execute("SELECT * FROM Track")
    assert len(result.rows) == 10 and result.truncated


def test_one_statement_with_a_trailing_semicolon_and_comment_is_fine(chinook: Database) -> None:
    assert chinook.execute("SELECT 1; -- done").rows == [(1,)]
    with pytest.raises(QueryRefused, match="exactly one SQL statement"):
        chinook.execute("SELECT 1; SELECT 2")


def test_errors_are_readable(chinook: Database) -> None:
    with pytest.raises(QueryError, match="^Empty query"):
        chinook.execute("   ")
    with pytest.raises(QueryError, match="^SQL error: no such column: Nme"):
        chinook.execute("SELECT Nme FROM Artist")
    outcome = call_tool(chinook, "run_query", {"sql": "SELEC 1"})
    assert outcome.text == 'Error: SQL error: near "SELEC": syntax error'


def test_text_that_is_not_utf8_is_decoded_with_replacement(make_db) -> None:
    db = Database(make_db(
        "CREATE TABLE t (id INTEGER, name TEXT, data BLOB);"
        "INSERT INTO t VALUES (1, CAST(X'41ff42' AS TEXT), X'00ff'), (2, 'ok', NULL);"
    ))
    assert db.execute("SELECT name FROM t ORDER BY id").rows == [("A\ufffdB",), ("ok",)]
    assert call_tool(db, "run_query", {"sql": "SELECT * FROM t"}).text == (
        "id | name | data\n1 | A\ufffdB | <blob 2 bytes>\n2 | ok | NULL"
    )
    assert call_tool(db, "distinct_values", {"table_name": "t", "column_name": "name"}).text == (
        "name | count\nA\ufffdB | 1\nok | 1"
    )
    # The connection goes back to strict decoding for the next statement.
    assert db.execute("SELECT 'fine'").rows == [("fine",)]


def test_long_cells_and_separators_are_rendered_safely(make_db) -> None:
    db = Database(make_db("CREATE TABLE t (s TEXT); INSERT INTO t VALUES (printf('%.300c', 'x')), ('a|b\nc');"))
    lines = call_tool(db, "run_query", {"sql": "SELECT s FROM t"}).text.split("\n")
    assert lines[1] == "x" * 99 + "…"
    assert lines[2] == "a\\|b\\nc"
    assert len(lines) == 3


def test_value_size_cap(make_db) -> None:
    db = Database(make_db("CREATE TABLE t (x);"), SandboxConfig(max_value_bytes=10_000))
    with pytest.raises(QueryError, match="string or blob too big"):
        db.execute("SELECT zeroblob(20000)")
    assert db.execute("SELECT length(zeroblob(5000))").rows == [(5000,)]


def test_bad_files_get_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(DatabaseError, match="no such file; pass the path of a SQLite database"):
        Database(tmp_path / "missing.sqlite")
    with pytest.raises(DatabaseError, match="not a file"):
        Database(tmp_path)
    text = tmp_path / "notes.sqlite"
    text.write_text("hello, not a database at all")
    with pytest.raises(DatabaseError, match=r"not a SQLite database \(bad header\)") as info:
        Database(text)
    assert "\n" not in str(info.value)


def test_an_empty_file_or_a_proc_file_is_not_a_database(tmp_path: Path) -> None:
    """Both once opened as an empty database: a typo'd path answered "no tables"."""
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    with pytest.raises(DatabaseError, match=r"empty \(0 bytes\), not a SQLite database"):
        Database(empty)
    assert empty.stat().st_size == 0
    with pytest.raises(DatabaseError, match="not a SQLite database"):  # reports size 0, yet has text
        Database("/proc/self/status")


def test_content_hash_is_the_files_sha256(chinook: Database) -> None:
    assert chinook.content_hash() == hashlib.sha256(CHINOOK.read_bytes()).hexdigest()
    assert chinook.content_hash() == chinook.content_hash()  # cached, same answer


@pytest.mark.parametrize(
    "kwargs",
    [{"timeout_s": 0}, {"timeout_s": -1}, {"max_rows": 0}, {"max_value_bytes": 10}, {"progress_interval": 0}],
)
def test_config_is_validated(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        SandboxConfig(**kwargs)
    with pytest.raises(ValueError):  # ConfigError is a ValueError too
        SandboxConfig(**kwargs)


def test_a_snapshot_reads_one_version_of_the_file_and_ends_cleanly(make_db) -> None:
    import sqlite3

    path = make_db("PRAGMA journal_mode = WAL; CREATE TABLE t (x INT); INSERT INTO t VALUES (1);")
    writer = sqlite3.connect(path, isolation_level=None)  # keeps the WAL files in place
    db = Database(path, SandboxConfig(timeout_s=DEADLINE_S, live_wal=True))
    with db.snapshot():
        assert db.execute("SELECT x FROM t").rows == [(1,)]
        writer.execute("UPDATE t SET x = 2")
        assert db.execute("SELECT x FROM t").rows == [(1,)]  # the snapshot's version
        with db.snapshot():  # nested: the same snapshot
            assert db.execute("SELECT x FROM t").rows == [(1,)]
        for verb in ("COMMIT", "ROLLBACK", "END", "BEGIN", "SAVEPOINT s", "EXPLAIN COMMIT"):
            with pytest.raises(QueryRefused):
                db.execute(verb)
        with pytest.raises(QueryTimeout):
            db.execute(RUNAWAYS["endless_recursive_cte"])
        assert db.execute("SELECT x FROM t").rows == [(1,)]  # a timeout does not end it
    assert db.execute("SELECT x FROM t").rows == [(2,)]
    with pytest.raises(QueryRefused):
        db.execute("UPDATE t SET x = 3")
    db.close()
    writer.close()


def test_a_table_whose_name_is_not_utf8_is_addressed_by_its_listed_escaped_form(tmp_path: Path) -> None:
    """A name stored as bytes that are not UTF-8 (``caf`` + 0xE9, Latin-1) was listed as
    ``caf\ufffd`` and no tool could name it; it is now listed escaped (``caf\\xe9``) and
    every tool takes that name, over an in-memory copy (the file is not written)."""
    path = tmp_path / "latin1.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE cafx(a INTEGER, b TEXT); INSERT INTO cafx VALUES (1, 'x'), (2, 'y');"
                       "CREATE INDEX cafx_a ON cafx(a); CREATE VIEW v AS SELECT a FROM cafx;")  # fmt: skip
    conn.execute("PRAGMA writable_schema = ON")
    cafe = "CAST(x'22636166e922' AS TEXT)"  # "caf" + 0xE9 in double quotes
    conn.execute(f"UPDATE sqlite_master SET name = CAST(x'636166e9' AS TEXT), tbl_name = CAST(x'636166e9' AS TEXT), "
                 f"sql = 'CREATE TABLE ' || {cafe} || '(a INTEGER, b TEXT)' WHERE name = 'cafx'")  # fmt: skip
    conn.execute(f"UPDATE sqlite_master SET tbl_name = CAST(x'636166e9' AS TEXT), sql = 'CREATE INDEX cafx_a ON ' || {cafe} || '(a)' "
                 "WHERE name = 'cafx_a'")  # fmt: skip
    conn.execute(f"UPDATE sqlite_master SET sql = 'CREATE VIEW v AS SELECT a FROM ' || {cafe} WHERE name = 'v'")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with Database(path) as db:
        assert call_tool(db, "list_tables", {}).text.splitlines() == ["caf\\xe9", "v"]
        assert "a INTEGER" in call_tool(db, "describe_table", {"table_name": "caf\\xe9"}).text
        assert call_tool(db, "sample_rows", {"table_name": "caf\\xe9"}).text == "a | b\n1 | x\n2 | y"
        assert call_tool(db, "run_query", {"sql": 'SELECT count(*) FROM "caf\\xe9" WHERE a > 0'}).text == "count(*)\n2"
        assert call_tool(db, "run_query", {"sql": "SELECT sum(a) FROM v"}).text == "sum(a)\n3"
        assert call_tool(db, "run_query", {"sql": "DELETE FROM \"caf\\xe9\""}).text.startswith("Error: Refused")
    assert path.read_bytes() == before


def test_a_user_table_named_sqlite_something_is_seen_by_every_tool(tmp_path: Path) -> None:
    """Once hidden from the schema tools (a prefix rule) yet readable by run_query."""
    path = tmp_path / "odd.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1), (2);"
                       "CREATE TABLE s(id INTEGER PRIMARY KEY AUTOINCREMENT, v); INSERT INTO s(v) VALUES (3);")  # fmt: skip
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_master SET name = 'sqlite_users', tbl_name = 'sqlite_users', "
                 "sql = 'CREATE TABLE sqlite_users(a INTEGER)' WHERE name = 't'")  # fmt: skip
    conn.commit()
    conn.close()
    with Database(path) as db:
        assert call_tool(db, "list_tables", {}).text.splitlines() == ["sqlite_users", "s"]  # not sqlite_sequence
        assert call_tool(db, "sample_rows", {"table_name": "sqlite_users"}).text == "a\n1\n2"
        assert call_tool(db, "run_query", {"sql": "SELECT count(*) FROM sqlite_users"}).text == "count(*)\n2"
