"""Bad input to the commands gives a one-line error, never a traceback (issue 13 item 9)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest
from conftest import SPIDER, REPO
from typer.testing import CliRunner

from sqlscout.cli.main import app
from sqlscout.data import load_tasks


def _one_line_error(result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    lines = [line for line in result.output.strip().splitlines() if line.strip()]
    assert lines and lines[-1].startswith("error:"), result.output
    return lines[-1]


def test_tool_on_a_symlink_loop(tmp_path):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    line = _one_line_error(CliRunner().invoke(app, ["tool", str(tmp_path / "loop"), "list_tables"]))
    assert "symbolic links" in line or "symlink" in line.lower()


def test_tool_on_a_file_name_too_long(tmp_path):
    line = _one_line_error(CliRunner().invoke(app, ["tool", str(tmp_path / ("a" * 300 + ".sqlite")), "list_tables"]))
    assert "too long" in line


def test_tool_on_an_unknown_users_home():
    line = _one_line_error(CliRunner().invoke(app, ["tool", "~nosuchuser/x.sqlite", "list_tables"]))
    assert "nosuchuser" in line


def test_play_on_a_database_with_a_broken_view(tmp_path):
    path = tmp_path / "bv.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript("CREATE TABLE a (x INTEGER); CREATE VIEW v AS SELECT * FROM missing_table;")
    conn.close()
    result = CliRunner().invoke(app, ["play", str(path), "How many?", "--schema", "full"], input="SELECT count(*) FROM a\n\n" * 8)
    # Either the episode runs (the schema skips the broken view) or it stops with one line.
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 2), (result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    from sqlscout.evaluation import EvalConfig, run_eval, scripted_source

    tasks = load_tasks("spider", SPIDER, missing_db="skip")[:3]

    def policy(job, turn):
        return json.dumps({"tool": "submit_sql", "args": {"sql": job.task.gold_sql}})

    out = tmp_path_factory.mktemp("run") / "run"
    run_eval(tasks, EvalConfig("spider", "scripted"), scripted_source(policy), out)
    return out


def _copy_run(run_dir, tmp_path, tail: bytes):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    with open(copy / "episodes.jsonl", "ab") as handle:
        handle.write(tail)
    return copy


@pytest.mark.parametrize(
    "tail",
    [b"\xff\xfe", "{\"episode\": {\"final_sql\": \"SELECT '\u00e9".encode()[:-1]],  # bad bytes; torn inside a character
    ids=["bad-bytes", "torn-utf8"],
)
def test_score_and_report_read_past_a_torn_last_line(run_dir, tmp_path, tail):
    from sqlscout.evaluation.predictions import read_predictions
    from sqlscout.evaluation.store import RunDir

    run = _copy_run(run_dir, tmp_path, tail)
    assert len(read_predictions(run).predictions) == 3
    assert len(RunDir(run).read_records()) == 3
    result = CliRunner().invoke(app, ["score", str(run), "--no-cache"])
    assert result.exit_code == 0, (result.output, result.exception)
    result = CliRunner().invoke(app, ["report", str(run), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 0, (result.output, result.exception)
    # --resume cuts the torn line before it appends.
    writer = RunDir(run).open_for_append()
    writer.close()
    assert (run / "episodes.jsonl").read_bytes().endswith(b"}\n")


def test_bad_bytes_inside_a_run_file_are_named(run_dir, tmp_path):
    from sqlscout.errors import DataError
    from sqlscout.evaluation.predictions import read_predictions
    from sqlscout.evaluation.store import RunDir

    run = _copy_run(run_dir, tmp_path, b"\xff\xfe\n")
    with pytest.raises(DataError, match="line 4"):
        read_predictions(run)
    with pytest.raises(DataError, match=":4"):
        RunDir(run).read_records()
    line = _one_line_error(CliRunner().invoke(app, ["score", str(run), "--no-cache"]))
    assert "line 4" in line and "UTF-8" in line


def test_report_on_a_run_whose_config_is_not_utf8(run_dir, tmp_path):
    run = _copy_run(run_dir, tmp_path, b"")
    (run / "config.json").write_bytes(b"\xff\xfe{}")
    line = _one_line_error(CliRunner().invoke(app, ["report", str(run), "--out", str(tmp_path / "rep")]))
    assert "not UTF-8" in line


def test_score_a_predictions_file_with_a_bad_byte(tmp_path):
    file = tmp_path / "P.jsonl"
    file.write_bytes(b'{"question_id": 0, "sql": "SELECT 1"}\n{"question_id": 1, "sql": "SELECT 1\xff"}\n')
    args = ["score", str(file), "--benchmark", "spider", "--data", str(SPIDER), "--missing-db", "skip", "--no-cache"]
    line = _one_line_error(CliRunner().invoke(app, args))
    assert "line 2" in line and "UTF-8" in line


def test_the_console_script_turns_an_unexpected_os_error_into_one_line(run_dir, tmp_path):
    # The last resort of the application itself, run as users run it: a process of its own.
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = subprocess.run(
        [sys.executable, "-m", "sqlscout.cli.main", "report", str(run_dir), "--out", str(blocker / "report")],
        capture_output=True, text=True, env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("error:") and "not a directory" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_score_paths_that_cannot_be_used(tmp_path):
    file = tmp_path / "p.jsonl"
    file.write_text(json.dumps({"question_id": "0", "sql": "SELECT 1"}) + "\n")
    args = ["score", str(file), "--benchmark", "spider", "--data", str(SPIDER), "--missing-db", "skip", "--only-predicted"]
    line = _one_line_error(CliRunner().invoke(app, [*args, "--verdicts", str(tmp_path)]))
    assert "cannot write the verdicts" in line and "is a directory" in line
    line = _one_line_error(CliRunner().invoke(app, [*args, "--cache-dir", "~nosuchuser/cache"]))
    assert "no such user" in line


def test_a_run_kept_compressed_is_read_as_is_and_not_appended_to(run_dir, tmp_path):
    """benchmarks/results keeps runs as episodes.jsonl.gz: report and score read them (a
    report of one used to show 0 questions), and a resume asks for them unpacked rather
    than starting a second, plain file beside the packed one."""
    import gzip
    import shutil

    from sqlscout.errors import DataError
    from sqlscout.evaluation.predictions import read_predictions
    from sqlscout.evaluation.store import RunDir

    packed = tmp_path / "packed"
    shutil.copytree(run_dir, packed)
    plain = packed / "episodes.jsonl"
    (packed / "episodes.jsonl.gz").write_bytes(gzip.compress(plain.read_bytes()))
    plain.unlink()
    assert [r.task.question_id for r in RunDir(packed).read_records()] == [r.task.question_id for r in RunDir(run_dir).read_records()]
    assert len(read_predictions(packed).predictions) == 3
    result = CliRunner().invoke(app, ["report", str(packed), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 0, (result.output, result.exception)
    assert "| questions | 3 |" in (tmp_path / "rep" / "report.md").read_text()
    with pytest.raises(DataError, match="unpack it first"):
        RunDir(packed).open_for_append()
