"""Two runs on the same questions compared question by question (gained, lost, sign test),
in the API and in `sqlscout report` as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import CHINOOK, REPO
from sqlscout.env.task import Task
from sqlscout.evaluation import EvalConfig
from sqlscout.evaluation.paired import paired, sign_test
from sqlscout.evaluation.run import run_eval
from sqlscout.evaluation.sources import scripted_source

QUESTIONS = [
    ("How many genres are there?", "SELECT COUNT(*) FROM Genre"),
    ("How many albums are there?", "SELECT COUNT(*) FROM Album"),
    ("How many artists are there?", "SELECT COUNT(*) FROM Artist"),
    ("How many media types are there?", "SELECT COUNT(*) FROM MediaType"),
]


def _run(out: Path, right: set[int]) -> list:
    tasks = [Task(str(i), q, CHINOOK, gold_sql=g) for i, (q, g) in enumerate(QUESTIONS)]

    def reply(job, turn) -> str:
        sql = QUESTIONS[job.index][1] if job.index in right else "SELECT 0"
        return json.dumps({"tool": "submit_sql", "args": {"sql": sql}})

    return run_eval(tasks, EvalConfig("custom", "scripted"), scripted_source(reply), out).records


def test_gained_and_lost_count_questions_and_the_sign_test_weighs_them(tmp_path: Path) -> None:
    base = _run(tmp_path / "base", {0, 1})
    other = _run(tmp_path / "other", {1, 2, 3})
    p = paired(base, other)
    assert (p.n, p.base_correct, p.other_correct, p.gained, p.lost) == (4, 2, 3, 2, 1)
    assert p.difference == 25.0 and p.p_value == 1.0
    assert sign_test(0, 0) == 1.0 and abs(sign_test(0, 6) - 2 / 64) < 1e-12 and sign_test(10, 0) < 0.002

    done = subprocess.run(
        [sys.executable, "-m", "sqlscout.cli.main", "report", str(tmp_path / "base"), str(tmp_path / "other"), "--out", str(tmp_path / "rep")],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "## Paired with base" in text and "| other | 4 | +25.0 | 2 | 1 | 1 |" in text
