"""run_eval on real Spider databases with a scripted model: streaming, scoring, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assist_helpers import profile
from conftest import SPIDER, spider_db
from sqlscout.backends.scripted import ScriptTurn
from sqlscout.errors import ConfigError, DataError
from sqlscout.evaluation import EvalConfig, EpisodeSource, Job, RunDir, compute_metrics, run_eval, scripted_source
from sqlscout.scoring import tables_used
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.prompts import PROMPT_VERSION
from sqlscout.env.task import Task


def spider_tasks(n: int, db_ids: tuple[str, ...] = ("concert_singer", "pets_1", "poker_player")) -> list[Task]:
    """The first ``n`` Spider dev questions on ``db_ids``, read straight from dev.json."""
    questions = json.loads((SPIDER / "dev.json").read_text())
    tasks = []
    for i, q in enumerate(questions):
        if q["db_id"] in db_ids:
            tasks.append(Task(str(i), q["question"], spider_db(q["db_id"]), gold_sql=q["query"], db_id=q["db_id"], benchmark="spider"))
    return tasks[:n]


def explorer(job: Job, turn: ScriptTurn) -> str:
    """A deterministic pretend model whose behaviour depends on the question and sample:
    it looks at the gold tables, then submits the gold query, a wrong query, or answers
    in the forced final turn after running out of rounds."""
    gold = job.task.gold_sql or ""
    style = (int(job.task.question_id) + job.sample) % 3
    looks = [json.dumps({"tool": "describe_table", "args": {"table_name": t}}) for t in sorted(tables_used(gold))]
    if turn.final:
        return f"```sql\n{gold}\n```"
    if turn.turn < len(looks):
        return looks[turn.turn]
    if style == 0:
        return json.dumps({"tool": "submit_sql", "args": {"sql": gold}})
    if style == 1:
        return json.dumps({"tool": "submit_sql", "args": {"sql": "SELECT 1"}})
    return json.dumps({"tool": "run_query", "args": {"sql": "SELECT count(*) FROM sqlite_master"}})


def config(**changes: object) -> EvalConfig:
    return EvalConfig(**{"benchmark": "spider", "model": "scripted-explorer", "samples": 2, **changes})  # type: ignore[arg-type]


def test_every_episode_is_streamed_scored_and_counted(tmp_path: Path) -> None:
    tasks = spider_tasks(6)
    outcome = run_eval(tasks, config(), scripted_source(explorer), tmp_path / "run")
    assert outcome.written == 12 and outcome.resumed == 0
    lines = (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 12
    stored = RunDir(tmp_path / "run").read_records()
    # Stored in the order episodes finish (the runner batches them), each job once.
    assert sorted((r.index, r.key, r.sample) for r in stored) == [(i, t.question_id, s) for i, t in enumerate(tasks) for s in (0, 1)]
    by_style = {(int(r.key) + r.sample) % 3: r for r in stored}
    assert by_style[0].verdict.outcome.value == "equivalent" and by_style[0].gold.n_rows >= 0
    assert by_style[1].result.stop_reason.value == "submitted" and not by_style[1].verdict.official
    assert by_style[2].result.stop_reason.value == "round_limit" and by_style[2].verdict.official
    # The trace is all there: what the model wrote and what each tool answered.
    first = by_style[0].result.rounds[0]
    assert first.calls[0].tool == "describe_table" and "CREATE TABLE" in first.calls[0].output
    metrics = compute_metrics(stored)
    assert metrics.n_questions == 6 and metrics.samples == 2
    assert metrics.gold_table_coverage == 1.0
    settings = json.loads((tmp_path / "run" / "config.json").read_text())
    assert settings["settings"]["model"] == "scripted-explorer"
    assert settings["settings"]["sampling"]["temperature"] == 0.6
    assert settings["settings"]["episode"]["max_rounds"] == 6
    assert settings["settings"]["prompt_version"] == PROMPT_VERSION  # the plain protocol: no help
    assert settings["settings"]["assist"] == {"name": "none", "rules": {}}
    assert settings["tasks"]["count"] == 6
    assert settings["sessions"][0]["sqlscout_version"]


class Crash(Exception):
    pass


def crashing_after(n: int) -> EpisodeSource:
    """A source that plays ``explorer`` but dies after its ``n``-th finished episode."""
    inner = scripted_source(explorer)

    def run(jobs):  # type: ignore[no-untyped-def]
        for done, item in enumerate(inner(jobs)):
            if done == n:
                raise Crash(f"killed at episode {n}")
            yield item

    return run


def comparable(run: Path) -> list[tuple]:
    return [
        (r.key, r.sample, r.result.final_sql, r.result.stop_reason.value, len(r.result.rounds), r.verdict.to_dict(), r.pred and r.pred.fingerprint)
        for r in sorted(RunDir(run).read_records(), key=lambda r: (r.index, r.sample))
    ]


def test_resume_after_a_crash_loses_and_repeats_nothing(tmp_path: Path) -> None:
    tasks = spider_tasks(5)
    with pytest.raises(Crash):
        run_eval(tasks, config(), crashing_after(4), tmp_path / "broken")
    assert len(RunDir(tmp_path / "broken").read_records()) == 4
    # A crash in the middle of writing leaves half a line: it is cut and that episode re-run.
    with open(tmp_path / "broken" / "episodes.jsonl", "a") as handle:
        handle.write('{"key": "half a rec')
    resumed = run_eval(tasks, config(), scripted_source(explorer), tmp_path / "broken", resume=True)
    assert (resumed.resumed, resumed.written) == (4, 6)
    run_eval(tasks, config(), scripted_source(explorer), tmp_path / "whole")
    assert comparable(tmp_path / "broken") == comparable(tmp_path / "whole")
    assert len((tmp_path / "broken" / "episodes.jsonl").read_text().splitlines()) == 10
    sessions = json.loads((tmp_path / "broken" / "config.json").read_text())["sessions"]
    assert len(sessions) == 2
    # Resuming a finished run runs nothing.
    again = run_eval(tasks, config(), scripted_source(explorer), tmp_path / "broken", resume=True)
    assert (again.resumed, again.written) == (10, 0)


def test_resume_with_other_settings_is_refused(tmp_path: Path) -> None:
    tasks = spider_tasks(2)
    run_eval(tasks, config(), scripted_source(explorer), tmp_path / "run")
    with pytest.raises(ConfigError, match=r"samples: stored 2, now 3.*--out"):
        run_eval(tasks, config(samples=3), scripted_source(explorer), tmp_path / "run", resume=True)
    with pytest.raises(ConfigError, match="tasks.count"):
        run_eval(spider_tasks(3), config(), scripted_source(explorer), tmp_path / "run", resume=True)


def test_a_run_stored_before_an_episode_option_existed_resumes(tmp_path: Path) -> None:
    # Options take their defaults, as the runs before them had: a run stored without the
    # key resumes; one stored with the option set otherwise does not resume with the default.
    # The help is a profile beside the episode: one stored with a rule on does not resume
    # without it.
    tasks = spider_tasks(2)
    run_eval(tasks, config(), scripted_source(explorer), tmp_path / "run")
    path = tmp_path / "run" / "config.json"
    stored = json.loads(path.read_text())
    del stored["settings"]["episode"]["turn_time_limit_s"]
    path.write_text(json.dumps(stored))
    assert run_eval(tasks, config(), scripted_source(explorer), tmp_path / "run", resume=True).resumed == 4
    stored["settings"]["episode"]["turn_time_limit_s"] = 5.0
    path.write_text(json.dumps(stored))
    with pytest.raises(ConfigError, match=r"episode.turn_time_limit_s: stored 5.0, now 20.0"):
        run_eval(tasks, config(), scripted_source(explorer), tmp_path / "run", resume=True)
    del stored["settings"]["episode"]["turn_time_limit_s"]
    stored["settings"]["assist"]["rules"]["query_after_survey"] = {}
    path.write_text(json.dumps(stored))
    with pytest.raises(ConfigError, match=r"assist.rules.query_after_survey: stored \{\}, now None"):
        run_eval(tasks, config(), scripted_source(explorer), tmp_path / "run", resume=True)
    with pytest.raises(ConfigError, match="already holds a run; pass --resume"):
        run_eval(tasks, config(), scripted_source(explorer), tmp_path / "run")


def test_a_run_resumed_under_another_hint_version_is_refused(tmp_path: Path) -> None:
    # Hints version 10 changed what the model is told without changing any option, and a
    # run stored only the base prompt version ("sqlscout-prompt-2"): resuming a version-9
    # run with version-10 code would have mixed the two in one run, silently. A run now
    # stores the full version its episodes record: the protocol's, then the profile's,
    # whose digest covers the rules' parameters and the source of the help they run.
    from sqlscout.assist.profile import _sources
    from sqlscout.assist.rule import RULES

    tasks = spider_tasks(2)
    hints = profile(repair_hints=True, submit_hint=True)
    hinted = config(assist=hints)
    outcome = run_eval(tasks, hinted, scripted_source(explorer, hinted.runner_config()), tmp_path / "run")
    path = tmp_path / "run" / "config.json"
    stored = json.loads(path.read_text())
    recorded = {r.result.prompt_version for r in RunDir(tmp_path / "run").read_records()}
    assert recorded == {stored["settings"]["prompt_version"]} and outcome.written == 4
    assert stored["settings"]["prompt_version"] == f"{PROMPT_VERSION}+assist:{hints.version()}"
    assert any("def chained_repair(" in source for source in _sources(RULES["repair_hints"]))  # the hints' code
    digest = hints.version().rsplit("@", 1)[1]
    stored["settings"]["prompt_version"] = stored["settings"]["prompt_version"].replace(digest, "0" * len(digest))
    path.write_text(json.dumps(stored))
    with pytest.raises(ConfigError, match=rf"prompt_version: stored .*@{'0' * len(digest)}', now .*@{digest}'"):
        run_eval(tasks, hinted, scripted_source(explorer, hinted.runner_config()), tmp_path / "run", resume=True)
    helped = profile(example_values={"count": 2}, repair_hints=True)
    shot = config(mode="single-shot", episode=EpisodeConfig(schema="full"), assist=helped)
    values_only = profile(example_values={"count": 2}).version(single_shot=True)
    assert shot.prompt_version == f"{PROMPT_VERSION}+assist:{values_only}"  # what single-shot records
    assert values_only.startswith("example_values@") and "repair_hints" not in shot.prompt_version


def test_duplicate_question_ids_are_refused(tmp_path: Path) -> None:
    task = spider_tasks(1)[0]
    with pytest.raises(DataError, match="appears twice"):
        run_eval([task, task], config(), scripted_source(explorer), tmp_path / "run")


def test_a_broken_line_in_the_middle_is_an_error_naming_it(tmp_path: Path) -> None:
    run_eval(spider_tasks(2), config(samples=1), scripted_source(explorer), tmp_path / "run")
    path = tmp_path / "run" / "episodes.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("garbage\n" + "".join(lines))
    with pytest.raises(DataError, match=r"episodes.jsonl:1: not an episode record"):
        RunDir(tmp_path / "run").read_records()


def test_gold_results_come_from_the_shared_cache(tmp_path: Path) -> None:
    from sqlscout.scoring.result_cache import ResultCache
    from sqlscout.scoring import ExecResult

    tasks = spider_tasks(3)
    cache = ResultCache(tmp_path / "cache")
    run_eval(tasks, config(samples=1), scripted_source(explorer), tmp_path / "first", result_cache=ResultCache(tmp_path / "cache"))
    stored = [cache.get(cache.database_hash(t.db_path), t.gold_sql) for t in tasks]
    assert all(s is not None and s.ok for s in stored)
    # A planted gold result proves a later run reads the cache instead of running the gold query.
    cache.put_many([(cache.database_hash(tasks[0].db_path), tasks[0].gold_sql, ExecResult(("x",), [("planted",)]))])
    second = run_eval(tasks, config(samples=1), scripted_source(explorer), tmp_path / "second", result_cache=ResultCache(tmp_path / "cache"))
    assert second.records[0].gold.rows == [["planted"]] and not second.records[0].verdict.official
    assert [r.verdict.to_dict() for r in second.records[1:]] == [
        r.verdict.to_dict() for r in RunDir(tmp_path / "first").read_records()[1:]
    ]


def test_two_writers_on_one_run_directory_are_refused(tmp_path: Path) -> None:
    from sqlscout.evaluation.store import RunDirBusy

    holder = RunDir(tmp_path / "run").open_for_append()
    try:
        with pytest.raises(RunDirBusy, match="another process is writing"):
            run_eval(spider_tasks(1), config(), scripted_source(explorer), tmp_path / "run")
    finally:
        holder.close()
    assert run_eval(spider_tasks(1), config(), scripted_source(explorer), tmp_path / "run").written == 2
