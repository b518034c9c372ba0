"""run_eval through the real runner and the scripted backend: seeds survive a resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sqlscout.backends.scripted import ScriptedBackend, ScriptTurn
from sqlscout.env.config import EpisodeConfig
from sqlscout.errors import BackendError
from sqlscout.evaluation import EvalConfig, RunDir, run_eval
from sqlscout.evaluation.metrics import latest_records
from sqlscout.evaluation.run import runner_source
from sqlscout.runner import RunMode, Runner, RunnerConfig
from test_eval_run import spider_tasks

TASKS = spider_tasks(5)
GOLD = {t.question: t.gold_sql for t in TASKS}


def sampler(turn: ScriptTurn) -> str:
    """A pretend model that 'samples': its turn seed decides between the gold query, a
    wrong one, and one more look at the data first."""
    question = next(q for q in GOLD if q in turn.prompt)
    roll = (turn.params.seed or 0) % 3
    if turn.turn == 0 and roll == 2:
        return json.dumps({"tool": "list_tables", "args": {}})
    sql = GOLD[question] if roll != 1 else "SELECT 1"
    return json.dumps({"tool": "submit_sql", "args": {"sql": sql}})


def evaluate(out: Path, backend: ScriptedBackend, *, resume: bool = False, seed: int = 7):
    config = EvalConfig("spider", "scripted-sampler", samples=3, seed=seed)
    with Runner(backend, RunnerConfig(max_batch=4, seed=seed)) as runner:
        return run_eval(TASKS, config, runner_source(runner, TASKS, 3), out, resume=resume)


def fingerprint(out: Path) -> list[tuple]:
    return [
        (r.key, r.sample, r.result.final_sql, len(r.result.rounds), r.verdict.outcome.value)
        for r in latest_records(RunDir(out).read_records())
    ]


def test_resume_after_backend_failures_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    evaluate(tmp_path / "whole", ScriptedBackend(sampler))
    whole = fingerprint(tmp_path / "whole")
    assert len(whole) == 15
    assert {o for *_, o in whole} >= {"equivalent", "executable"}  # the seeds do vary the answers

    victim = TASKS[2].question
    failing = ScriptedBackend(sampler, raise_on=lambda turn: victim in turn.prompt)
    broken = evaluate(tmp_path / "broken", failing)
    failed = [r for r in broken.records if r.result.stop_reason.value == "backend_error"]
    assert failed and all("scripted backend failure" in (r.result.error or "") for r in failed)

    resumed = evaluate(tmp_path / "broken", ScriptedBackend(sampler), resume=True)
    assert resumed.written == len(failed)
    assert fingerprint(tmp_path / "broken") == whole
    # Another seed is another run: refused as a resume, different answers as a new run.
    with pytest.raises(Exception, match="seed: stored 7, now 8"):
        evaluate(tmp_path / "whole", ScriptedBackend(sampler), resume=True, seed=8)
    evaluate(tmp_path / "other", ScriptedBackend(sampler), seed=8)
    assert fingerprint(tmp_path / "other") != whole


def test_a_backend_that_keeps_failing_stops_the_run(tmp_path: Path) -> None:
    dead = ScriptedBackend(sampler, raise_on=lambda turn: True)
    config = EvalConfig("spider", "dead", samples=3)
    with Runner(dead, RunnerConfig(max_batch=2)) as runner:
        with pytest.raises(BackendError, match="failed 4 episodes in a row.*--resume"):
            run_eval(TASKS, config, runner_source(runner, TASKS, 3), tmp_path / "run", max_backend_errors=4)
    assert len(RunDir(tmp_path / "run").read_records()) == 4


def test_single_shot_mode_through_the_runner(tmp_path: Path) -> None:
    def answer(turn: ScriptTurn) -> str:
        assert "CREATE TABLE" in turn.prompt and '"tool"' not in turn.prompt
        return f"```sql\n{GOLD[next(q for q in GOLD if q in turn.prompt)]}\n```"

    config = EvalConfig("spider", "scripted", mode="single-shot", episode=EpisodeConfig(schema="full"))
    with Runner(ScriptedBackend(answer), RunnerConfig(mode=RunMode.SINGLE_SHOT)) as runner:
        outcome = run_eval(TASKS, config, runner_source(runner, TASKS, 1), tmp_path / "run")
    assert [r.verdict.outcome.value for r in outcome.records] == ["equivalent"] * 5
    assert all(len(r.result.rounds) == 1 and r.mode == "single-shot" for r in outcome.records)
