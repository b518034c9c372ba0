"""Databases that broke the tools (issue 13, items 6 and 7), built from the SQL text
under tests/data/odd_databases/: every tool keeps working on their healthy tables, and
the file is never changed."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode import Episode
from sqlscout.env.prompts import SchemaMode
from sqlscout.env.sandbox import Database
from sqlscout.env.task import Task
from sqlscout.env.tools import call_tool

ODD = Path(__file__).parent / "data" / "odd_databases"


def _build(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript((ODD / f"{name}.sql").read_text())
    conn.commit()
    conn.close()
    return path


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _call(db: Database, tool: str, **args: object) -> str:
    return call_tool(db, tool, args).text


def test_tables_named_sqlite_something_are_listed(tmp_path: Path) -> None:
    path = _build(tmp_path, "sqlite_prefixed")
    before = _sha256(path)
    with Database(path) as db:
        assert _call(db, "list_tables").splitlines() == ["sqliteusers", "sqlite3data", "sqlite-notes", "plain"]
        assert _call(db, "describe_table", table_name="sqliteusers").startswith("CREATE TABLE sqliteusers")
        assert "sqlite3data.user_id -> sqliteusers.id" in _call(db, "foreign_keys", table_name="sqlite3data")
        assert "sqlite3data.user_id = sqliteusers.id" in _call(db, "join_path", table_a="sqliteusers", table_b="sqlite3data")
        # SQLite's own tables stay hidden.
        assert "Unknown table 'sqlite_stat1'" in _call(db, "describe_table", table_name="sqlite_stat1")
    assert _sha256(path) == before


@pytest.mark.parametrize("name, bad", [("broken_view", "broken"), ("unknown_module", "lyrics")])
def test_one_broken_object_does_not_break_the_tools(tmp_path: Path, name: str, bad: str) -> None:
    path = _build(tmp_path, name)
    before = _sha256(path)
    healthy = "album" if name == "broken_view" else "track"
    with Database(path) as db:
        listed = _call(db, "list_tables").splitlines()
        assert healthy in listed and bad in listed
        assert _call(db, "describe_table", table_name=healthy).startswith(f"CREATE TABLE {healthy}")
        described = _call(db, "describe_table", table_name=bad)
        assert "cannot be read:" in described and not described.startswith("Error")
        assert _call(db, "sample_rows", table_name=healthy, limit=1).count("\n") == 1
        # An error message still gets its name hint (it reads the schema).
        missing = _call(db, "run_query", sql=f"SELECT * FROM {healthy}s")
        assert missing.startswith("Error: SQL error: no such table:") and f"Did you mean: {healthy}" in missing
        broken = call_tool(db, "run_query", {"sql": f"SELECT * FROM {bad}"})
        assert not broken.ok and broken.text.startswith("Error: SQL error:")
        # The full-schema prompt still opens an episode.
        task = Task("q", "How many rows?", str(path))
        episode = Episode(task, db, EpisodeConfig(schema=SchemaMode.FULL))
        assert f"CREATE TABLE {healthy}" in episode.transcript
    assert _sha256(path) == before


def test_json_and_dbstat_table_functions_work(tmp_path: Path) -> None:
    path = _build(tmp_path, "broken_view")
    with Database(path) as db:
        assert db.execute("SELECT value FROM json_each('[1, 2, 3]')").rows == [(1,), (2,), (3,)]
        assert db.execute("SELECT count(*) FROM json_tree('{\"a\": [1, 2]}')").rows == [(4,)]
        assert db.execute("SELECT count(*) > 0 FROM dbstat").rows == [(1,)]
        counted = _call(db, "run_query", sql="SELECT count(*) AS n FROM json_each('[1, 2]')")
        assert counted == "n\n2"
        # Still read-only: SQLite's page writer is no reading function.
        assert not call_tool(db, "run_query", {"sql": "SELECT * FROM sqlite_dbpage"}).ok


def test_a_files_own_virtual_tables_can_be_read(tmp_path: Path) -> None:
    path = tmp_path / "fts.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(
            "CREATE VIRTUAL TABLE docs USING fts5(body);"
            "INSERT INTO docs VALUES ('hello world'), ('goodbye');"
        )
    conn.close()
    with Database(path) as db:
        assert db.execute("SELECT body FROM docs WHERE docs MATCH 'hello'").rows == [("hello world",)]
        assert "docs" in _call(db, "list_tables").splitlines()
