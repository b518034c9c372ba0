"""The hostile-SQL corpus (tests/data/hostile_sql.jsonl) against real databases.

Every statement goes through ``run_query``, ``submit_sql`` and the scoring executor on
a *copy* of Chinook, of a Spider database and of a fixture. Each is refused with a
clear message, or is a harmless read; afterwards the file's bytes are unchanged and no
journal or WAL file has appeared beside it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from conftest import CHINOOK, spider_db
from sqlscout.env.sandbox import Database, SandboxConfig
from sqlscout.scoring import execute_for_scoring
from sqlscout.env.tools import call_tool

CORPUS = Path(__file__).parent / "data" / "hostile_sql.jsonl"
CASES = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]

FIXTURE_SQL = """
CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT);
INSERT INTO people (name, city) VALUES ('Ada', 'London'), ('Grace', 'New York'), ('Linus', NULL);
CREATE INDEX people_city ON people (city);
CREATE VIEW londoners AS SELECT name FROM people WHERE city = 'London';
CREATE TRIGGER people_guard BEFORE DELETE ON people BEGIN SELECT RAISE(ABORT, 'no'); END;
"""

# (file maker, table, column) — the corpus names {t} and {c} to hit real objects.
TARGETS = {
    "chinook": ("Album", "Title"),
    "spider_concert_singer": ("singer", "Name"),
    "fixture": ("people", "name"),
}


def test_corpus_is_large_and_well_formed() -> None:
    assert len(CASES) >= 40
    assert {c["expect"] for c in CASES} <= {"refused", "error", "any", "ok"}
    assert all(c["sql"].strip() and c["why"] for c in CASES)
    assert len({c["sql"] for c in CASES}) == len(CASES), "duplicate statements in the corpus"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(params=sorted(TARGETS))
def hostile_copy(request: pytest.FixtureRequest, tmp_path: Path, make_db) -> tuple[Path, str, str]:
    name = request.param
    folder = tmp_path / "db"
    folder.mkdir()
    if name == "chinook":
        path = Path(shutil.copy(CHINOOK, folder / "chinook.sqlite"))
    elif name == "fixture":
        path = Path(shutil.move(make_db(FIXTURE_SQL), folder / "fixture.sqlite"))
    else:
        path = Path(shutil.copy(spider_db("concert_singer"), folder / "concert_singer.sqlite"))
    table, column = TARGETS[name]
    return path, table, column


def test_hostile_statements_are_refused_or_harmless(hostile_copy: tuple[Path, str, str]) -> None:
    path, table, column = hostile_copy
    before_hash, before_files = _sha256(path), sorted(p.name for p in path.parent.iterdir())
    db = Database(path, SandboxConfig(timeout_s=2.0))
    problems: list[str] = []
    for case in CASES:
        sql = case["sql"].replace("{t}", table).replace("{c}", column).replace("{dir}", str(path.parent))
        ran = call_tool(db, "run_query", {"sql": sql})
        submitted = call_tool(db, "submit_sql", {"sql": sql})
        scored = execute_for_scoring(db, sql, timeout_s=2.0, max_rows=1_000)
        expect = case["expect"]
        if expect == "refused":
            for tool, outcome in (("run_query", ran), ("submit_sql", submitted)):
                if outcome.ok or not outcome.text.startswith("Error: Refused"):
                    problems.append(f"{tool} did not refuse {sql!r}: {outcome.text[:120]!r}")
            if scored.ok or not (scored.error or "").startswith("Refused"):
                problems.append(f"scoring did not refuse {sql!r}: {scored.error!r}")
        elif expect == "error":
            # A read that fails (memory cap, missing function): an error the model can read.
            if ran.ok or not ran.text.startswith("Error: SQL error:"):
                problems.append(f"run_query should fail cleanly on {sql!r}: {ran.text[:120]!r}")
            if scored.ok:
                problems.append(f"scoring should fail on {sql!r}")
        elif expect == "ok":
            if not (ran.ok and submitted.ok):
                problems.append(f"harmless read {sql!r} failed: {ran.text[:120]!r}")
        # "any": must only not raise and not write, which the checks below cover.
        if not ran.text.strip():
            problems.append(f"empty observation for {sql!r}")
    # The connections are still locked down after the whole corpus.
    assert db.execute("PRAGMA query_only").rows == [(1,)]
    db.close()
    assert not problems, "\n".join(problems)
    assert _sha256(path) == before_hash
    assert sorted(p.name for p in path.parent.iterdir()) == before_files, "a file appeared beside the database"


def test_writes_are_refused_before_touching_a_missing_object(make_db) -> None:
    # No object to authorize: DROP ... IF EXISTS of a missing view would be a silent no-op.
    db = Database(make_db("CREATE TABLE t (x INTEGER);"))
    outcome = call_tool(db, "run_query", {"sql": "DROP VIEW IF EXISTS nothing_here"})
    assert not outcome.ok
    assert outcome.text == (
        "Error: Refused: the database is read-only; only SELECT queries are allowed (DROP is not)."
    )
    # submit_sql compiles with EXPLAIN, which the authorizer does not see for VACUUM.
    assert call_tool(db, "submit_sql", {"sql": "VACUUM"}).text.startswith("Error: Refused")
    assert call_tool(db, "submit_sql", {"sql": "EXPLAIN DELETE FROM t"}).text.startswith("Error: Refused")


def test_a_refused_statement_never_earns_more_than_no_answer(hostile_copy: tuple[Path, str, str]) -> None:
    # Issue 13: ';DELETE FROM Album' scored *parsable* (0.05), above a plain refusal; every
    # statement the sandbox refuses now ranks with no answer at all, under every preset.
    from sqlscout.scoring import REWARD_PRESETS, Outcome, reward, score_sql

    path, table, column = hostile_copy
    db = Database(path)
    gold = f"SELECT COUNT(*) FROM {table}"
    nothing = score_sql(db, "-- no answer", gold)
    refused = 0
    for case in CASES:
        sql = case["sql"].replace("{t}", table).replace("{c}", column).replace("{dir}", str(path.parent))
        scored = score_sql(db, sql, gold)
        if not scored.pred.refused:
            continue
        refused += 1
        assert scored.verdict.outcome is Outcome.INVALID, (sql, scored.verdict.outcome)
        for preset in REWARD_PRESETS.values():
            assert reward(scored, preset, pred_sql=sql, gold_sql=gold) <= reward(nothing, preset, pred_sql="", gold_sql=gold), sql
    assert refused >= 40
