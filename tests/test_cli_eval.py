"""`sqlscout eval` end to end: a tiny random Qwen3 through the hf backend on real Spider
databases; a run killed mid-way and resumed equals an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import REPO, SPIDER
from sqlscout.cli.main import app
from sqlscout.evaluation import RunDir
from sqlscout.evaluation.metrics import latest_records


def eval_args(model: Path, out: Path, *extra: str) -> list[str]:
    return [
        "eval", "--benchmark", "spider", "--data", str(SPIDER), "--missing-db", "skip",
        "--model", str(model), "--backend", "hf", "--limit", "3", "--select", "random", "--seed", "3",
        "--samples", "2", "--set", "max_rounds=1", "--set", "max_turn_tokens=12", "--max-batch", "1",
        "--cache-dir", str(out.parent / "cache"), "--out", str(out), *extra,
    ]


def launch(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.Popen(
        [sys.executable, "-c", "from sqlscout.cli.main import app; app()", *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def outcome_of(out: Path) -> list[tuple]:
    return [
        (r.key, r.sample, r.result.final_sql, [x.model_text for x in r.result.rounds], r.result.generated_tokens,
         r.verdict.to_dict() if r.verdict else None)
        for r in latest_records(RunDir(out).read_records())
    ]


@pytest.mark.slow  # three processes that each import torch and load a model
def test_killed_run_resumes_to_the_uninterrupted_result(tiny_model_dir: Path, tmp_path: Path) -> None:
    whole = launch(eval_args(tiny_model_dir, tmp_path / "whole"))
    broken = launch(eval_args(tiny_model_dir, tmp_path / "broken"))
    episodes = tmp_path / "broken" / "episodes.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and broken.poll() is None:
        if episodes.is_file() and len(episodes.read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    assert broken.poll() is None, f"the run ended before it could be killed:\n{broken.communicate()[0]}"
    broken.send_signal(signal.SIGKILL)
    broken.wait()
    done_before = len(RunDir(tmp_path / "broken").read_records())
    assert 2 <= done_before < 6

    output, _ = whole.communicate(timeout=180)
    assert whole.returncode == 0, output
    assert "accuracy" in output and "report: sqlscout report" in output

    resumed = CliRunner().invoke(app, eval_args(tiny_model_dir, tmp_path / "broken", "--resume"))
    assert resumed.exit_code == 0, resumed.output
    assert outcome_of(tmp_path / "broken") == outcome_of(tmp_path / "whole")
    assert len(RunDir(tmp_path / "broken").read_records()) == 6  # nothing lost, nothing repeated
    config = json.loads((tmp_path / "broken" / "config.json").read_text())
    assert len(config["sessions"]) == 2
    assert config["settings"]["parameters"] > 1_000_000
    assert config["settings"]["episode"]["max_rounds"] == 1 and config["settings"]["select"] == "random"


def test_bad_invocations_get_one_line_errors(tiny_model_dir: Path, tmp_path: Path) -> None:
    cli = CliRunner()
    cases = [
        (["--benchmark", "nope"], "unknown benchmark 'nope'"),
        (["--mode", "single-shot", "--schema", "withheld"], "always shows the full schema"),
        (["--condition", "distractors:x"], "distractors:K"),
        (["--difficulty", "impossible"], "has no difficulty"),
        (["--select-by", "vote"], "give --samples 2 or more"),
        (["--select-by", "best"], "select_by must be 'none' or 'vote'"),
        (["--assist", "nope"], "unknown assist profile 'nope'"),
        (["--assist", "none", "--assist-set", "submit_tested=on"], "rule submit_tested needs constrain"),
        (["--set", "max_rounds=0"], "max_rounds must be >= 1, got 0"),
        (["--max-rounds", "1"], "No such option: --max-rounds"),  # the per-setting flags are gone
    ]
    for extra, message in cases:
        base = ["eval", "--benchmark", "spider", "--data", str(SPIDER), "--missing-db", "skip", "--model", str(tiny_model_dir),
                "--backend", "hf", "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "x")]
        result = cli.invoke(app, base + extra)
        assert result.exit_code == 2 and message in result.output, (extra, result.output)
    first = cli.invoke(app, eval_args(tiny_model_dir, tmp_path / "run", "--samples", "1", "--limit", "1"))
    assert first.exit_code == 0, first.output
    again = cli.invoke(app, eval_args(tiny_model_dir, tmp_path / "run", "--samples", "1", "--limit", "1"))
    assert again.exit_code == 2 and "pass --resume" in again.output
    other = cli.invoke(app, eval_args(tiny_model_dir, tmp_path / "run", "--samples", "1", "--limit", "1", "--seed", "4", "--resume"))
    assert other.exit_code == 2 and "seed: stored 3, now 4" in other.output
    helped = cli.invoke(app, eval_args(tiny_model_dir, tmp_path / "run", "--samples", "1", "--limit", "1", "--assist", "constrained", "--resume"))
    assert helped.exit_code == 2 and "assist.name: stored 'none', now 'constrained'" in helped.output, helped.output


def test_select_by_vote_writes_each_questions_voted_answer(tiny_model_dir: Path, tmp_path: Path) -> None:
    from sqlscout.evaluation.metrics import majority_vote

    out = tmp_path / "voted"
    run = CliRunner().invoke(app, eval_args(tiny_model_dir, out, "--samples", "3", "--select-by", "vote"))
    assert run.exit_code == 0, run.output
    assert "answers (vote of 3)" in run.output
    answers = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    records = latest_records(RunDir(out).read_records())
    assert [a["question_id"] for a in answers] == sorted({r.task.question_id for r in records}, key=lambda q: [r.index for r in records if r.task.question_id == q][0])
    for answer in answers:
        samples = [r for r in records if r.task.question_id == answer["question_id"]]
        winner = majority_vote(samples)
        assert answer["samples"] == 3 and answer["sql"] == (winner.result.final_sql if winner else None)
    assert json.loads((out / "config.json").read_text())["settings"]["select_by"] == "vote"


def test_jsonl_questions_naming_a_db_id_need_and_use_db_root(tiny_model_dir: Path, tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"question": "How many singers?", "sql": "SELECT count(*) FROM singer", "db_id": "concert_singer"}) + "\n")
    base = ["eval", "--benchmark", "jsonl", "--data", str(questions), "--model", str(tiny_model_dir), "--backend", "hf",
            "--set", "max_rounds=1", "--set", "max_turn_tokens=8", "--cache-dir", str(tmp_path / "cache")]
    cli = CliRunner()
    missing = cli.invoke(app, base + ["--out", str(tmp_path / "a")])
    assert missing.exit_code == 2 and "--db-root" in missing.output, missing.output
    found = cli.invoke(app, base + ["--db-root", str(SPIDER / "database"), "--out", str(tmp_path / "b")])
    assert found.exit_code == 0, found.output
    (record,) = latest_records(RunDir(tmp_path / "b").read_records())
    assert record.result.task.db_path == (SPIDER / "database" / "concert_singer" / "concert_singer.sqlite").resolve()
