"""Statements in supervised worker processes (issue 40, item 1): a deadline and a memory
cap that hold whatever one SQLite function call does.

The probe is a single ``printf`` call whose work SQLite never interrupts: with the length
limit raised so the bounded-function check lets it through, it runs for seconds inside one
C call in this process, past every progress-handler check and interrupt.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import resource
import shutil
import time
from pathlib import Path

import httpx
import pytest

from conftest import CHINOOK
from sqlscout.env.isolation import IsolatedDatabase
from sqlscout.env.sandbox import Database, SandboxConfig
from sqlscout.env.tools import call_tool
from sqlscout.serve import Catalog, ServeConfig, ToolService
from sqlscout.serve.http_api import create_app
from sqlscout.serve.listen import ServerThread

DATA = Path(__file__).parent / "data"
RUNAWAY = [json.loads(line) for line in (DATA / "runaway_sql.jsonl").read_text().splitlines() if line.strip()]
DEADLINE_S = 0.5
SLACK_S = 0.5
# Lets one printf build 2 GB: the in-process check passes it and SQLite loops in C.
LOOSE = SandboxConfig(timeout_s=DEADLINE_S, max_value_bytes=2_000_000_000, max_result_bytes=2_000_000_000)
ONE_LONG_CALL = "SELECT length(printf('%.*c', 400000000, 'x'))"


@pytest.fixture
def chinook_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "db"
    folder.mkdir()
    return Path(shutil.copy(CHINOOK, folder / "chinook.sqlite"))


def _timed(db: Database, sql: str) -> tuple[float, str]:
    start = time.perf_counter()
    text = call_tool(db, "run_query", {"sql": sql}).text
    return time.perf_counter() - start, text


def test_one_long_function_call_is_stopped_by_killing_its_worker(chinook_copy: Path) -> None:
    with Database(chinook_copy, LOOSE) as plain:
        took, _ = _timed(plain, ONE_LONG_CALL)
    assert took > DEADLINE_S + SLACK_S  # in this process nothing stops it: the probe is real
    with IsolatedDatabase(chinook_copy, LOOSE, memory_mb=2_048) as db:
        took, text = _timed(db, ONE_LONG_CALL)
        assert took < DEADLINE_S + SLACK_S, took
        assert text.startswith(f"Error: Query timed out after {DEADLINE_S:g} s and was stopped")
        # A fresh worker answers the next statement.
        assert call_tool(db, "run_query", {"sql": "SELECT count(*) FROM Genre"}).text == "count(*)\n25"


def test_a_statement_over_the_memory_cap_fails_in_its_worker_not_in_this_process(chinook_copy: Path) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with IsolatedDatabase(chinook_copy, SandboxConfig(timeout_s=10, max_result_bytes=2_000_000_000), memory_mb=256) as db:
        # 3,503 one-megabyte blobs in one value would be 3.5 GB
        took, text = _timed(db, "SELECT length(group_concat(zeroblob(999999))) FROM Track")
        assert text.startswith("Error: SQL error:") and ("memory" in text or "too big" in text), text
        # one row of many one-megabyte blobs (score once reached 3.8 GB on it)
        wide = "SELECT " + ", ".join(["zeroblob(999999)"] * 400)
        took, text = _timed(db, wide)
        assert "more memory than the sandbox allows (256 MB)" in text or "larger than" in text, text
        assert call_tool(db, "run_query", {"sql": "SELECT 1"}).text == "1\n1"
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 100, grown_mb


def test_the_runaway_corpus_through_workers_ends_within_the_deadline(chinook_copy: Path) -> None:
    digest = hashlib.sha256(chinook_copy.read_bytes()).hexdigest()
    slow = []
    with IsolatedDatabase(chinook_copy, SandboxConfig(timeout_s=1.0)) as db:
        for case in RUNAWAY:
            took, _text = _timed(db, case["sql"].replace("{t}", "Track").replace("{c}", "Name"))
            if took > 1.0 + SLACK_S:
                slow.append(f"{took:.2f} s: {case['why']}")
    assert not slow, "\n".join(slow)
    assert hashlib.sha256(chinook_copy.read_bytes()).hexdigest() == digest


def test_closing_stops_every_worker(chinook_copy: Path) -> None:
    db = IsolatedDatabase(chinook_copy, LOOSE, memory_mb=2_048)
    _timed(db, ONE_LONG_CALL)  # one worker killed, its replacement started
    call_tool(db, "run_query", {"sql": "SELECT 1"})
    processes = [w.process for w in db._live]
    db.close()
    assert processes and all(p.poll() is not None for p in processes)
    with pytest.raises(Exception, match="closed"):
        db.execute("SELECT 1")


def test_sixteen_runaway_requests_do_not_starve_the_server(chinook_copy: Path) -> None:
    """Once, 16 requests past their HTTP deadline kept all 16 tool threads for 116 s and
    every other client got 504; each now ends with its worker at the query's deadline."""
    config = ServeConfig(LOOSE, request_timeout_s=30, tool_workers=16)
    catalog = Catalog.from_args([f"music={chinook_copy}"], config.sandbox, query_memory_mb=2_048)
    tools = ToolService(catalog, config)
    try:
        with ServerThread(create_app(tools, None, None)) as url, httpx.Client(base_url=url, timeout=30) as client:

            def runaway(_: int) -> dict:
                return client.post("/v1/tools/run_query", json={"db": "music", "args": {"sql": ONE_LONG_CALL}}).json()

            start = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(16) as pool:
                answers = list(pool.map(runaway, range(16)))
            assert all(a.get("output", "").startswith("Error: Query timed out") for a in answers), [a for a in answers if "output" not in a][:1]
            took = time.perf_counter() - start
            assert took < 16 * (DEADLINE_S + SLACK_S)  # four workers at a time, each killed at its deadline
            health = time.perf_counter()
            assert client.get("/healthz").status_code == 200
            ok = client.post("/v1/tools/run_query", json={"db": "music", "args": {"sql": "SELECT count(*) FROM Genre"}}).json()
            assert ok["output"] == "count(*)\n25" and time.perf_counter() - health < 2
    finally:
        tools.close()
        catalog.close()


def test_a_full_queue_answers_429_with_retry_after(chinook_copy: Path) -> None:
    """One tool thread admits four requests (running or waiting); the rest are refused at
    once instead of queueing without end."""
    config = ServeConfig(LOOSE, request_timeout_s=30, tool_workers=1)
    catalog = Catalog.from_args([f"music={chinook_copy}"], config.sandbox, query_memory_mb=2_048)
    tools = ToolService(catalog, config)
    try:
        with ServerThread(create_app(tools, None, None)) as url, httpx.Client(base_url=url, timeout=30) as client:

            def runaway(_: int) -> httpx.Response:
                return client.post("/v1/tools/run_query", json={"db": "music", "args": {"sql": ONE_LONG_CALL}})

            with concurrent.futures.ThreadPoolExecutor(12) as pool:
                answers = list(pool.map(runaway, range(12)))
            busy = [a for a in answers if a.status_code == 429]
            assert busy and all(a.headers["Retry-After"] == "1" and a.json()["error"]["type"] == "busy" for a in busy)
            assert all(a.json()["output"].startswith("Error: Query timed out") for a in answers if a.status_code == 200)
            assert len(answers) - len(busy) >= 4
            ok = client.post("/v1/tools/run_query", json={"db": "music", "args": {"sql": "SELECT 1"}})
            assert ok.status_code == 200  # every admitted slot came back
    finally:
        tools.close()
        catalog.close()


def test_score_with_a_memory_cap_survives_a_row_of_huge_blobs(tmp_path: Path) -> None:
    """`score --query-memory 256`: a prediction whose one row holds 400 one-megabyte blobs
    is a wrong answer, and no process of the command grows past the cap + 200 MB (once,
    2,000 such blobs took `score` to 3.8 GB)."""
    import subprocess
    import sys

    from conftest import REPO

    wide = "SELECT " + ", ".join(["zeroblob(999999)"] * 400)
    predictions = tmp_path / "bomb.jsonl"
    predictions.write_text(json.dumps({"question_id": "0", "sql": wide}) + "\n" + json.dumps({"question_id": "1", "sql": "SELECT count(*) FROM Genre"}) + "\n")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"question_id": str(i), "question": "?", "db_path": str(CHINOOK), "sql": "SELECT count(*) FROM Genre"}) + "\n" for i in range(2)))
    command = [sys.executable, "-m", "sqlscout.cli.main", "score", str(predictions), "--benchmark", "jsonl", "--data", str(tasks),
               "--query-memory", "256", "--no-cache", "--json"]  # fmt: skip
    probe = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
             "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); print(done.stdout); print(done.stderr)")  # fmt: skip
    env = {**__import__("os").environ, "PYTHONPATH": str(REPO / "src")}
    out = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, env=env, timeout=300).stdout
    code, peak_kb = out.splitlines()[0].split()
    assert code == "0", out
    assert json.loads(out.split("\n", 1)[1].strip().split("\n\n")[0])["total"]["correct"] == 1
    assert int(peak_kb) / 1024 < 256 + 200, out


@pytest.mark.slow
def test_eval_over_hostile_gold_results_finishes_every_question_in_bounded_memory(tmp_path: Path, qwen05_gguf: Path) -> None:
    """`sqlscout eval` (the 0.5B, single-shot) on questions whose gold SQL returns a row of
    2,000 one-megabyte blobs or a million rows of 97 columns: every question is recorded
    (those two with `resource_limit: gold`, once `eval --resume` reran them and died
    again), the command's peak memory is the benign run's + at most 200 MB, and a resume
    finds nothing left to do."""
    import os
    import subprocess
    import sys

    from conftest import REPO
    from hostile_golds import BENIGN, HOSTILE, write_questions

    probe = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
             "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); print(done.stdout[-3000:], done.stderr[-3000:])")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}

    def run(name: str, questions: list[tuple[str, str, str]], *extra: str) -> tuple[int, float, str]:
        data = write_questions(tmp_path, name, questions)
        command = [sys.executable, "-m", "sqlscout.cli.main", "eval", "--benchmark", "jsonl", "--data", str(data), "--db-root", str(tmp_path),
                   "--model", str(qwen05_gguf), "--mode", "single-shot", "--threads", "1", "--out", str(tmp_path / name), *extra]  # fmt: skip
        out = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, env=env, timeout=600).stdout
        code, peak_kb = out.splitlines()[0].split()
        return int(code), int(peak_kb) / 1024, out

    code, benign_mb, out = run("benign", BENIGN)
    assert code == 0, out
    code, hostile_mb, out = run("hostile", HOSTILE)
    assert code == 0, out
    records = {r["key"]: r["verdict"] for r in map(json.loads, (tmp_path / "hostile" / "episodes.jsonl").read_text().splitlines())}
    assert set(records) == {"ok", "ok2", "blobs", "rows"}
    assert records["blobs"]["resource_limit"] == records["rows"]["resource_limit"] == "gold"
    assert "resource_limit" not in records["ok"]
    assert hostile_mb < benign_mb + 200, (benign_mb, hostile_mb)
    code, _, out = run("hostile", HOSTILE, "--resume")
    assert code == 0 and len((tmp_path / "hostile" / "episodes.jsonl").read_text().splitlines()) == 4, out
