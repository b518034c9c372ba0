"""Demonstrations (sqlscout.train.demos): written from a run's own answers, played
through the real environment and checked there, imitated in a run's first steps."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sqlscout.backends.offline_tokenizers import qwen3_5_tokenizer
from sqlscout.errors import ConfigError
from sqlscout.runner import RunnerConfig
from sqlscout.scoring import RewardConfig
from sqlscout.scoring.gold import GoldResults
from sqlscout.train.config import config_from_dict
from sqlscout.train.demos import Demo, after_rerun, checked, corrupted_fixes, corruptions, demonstration_groups, failing_queries, from_episodes, from_greedy, load_demos, play, repaired_fixes, replies, warmup_batches, write_demos
from sqlscout.train.pool import evaluate_pool
from sqlscout.train.loop import train
from sqlscout.train.mask import train_sample
from sqlscout.train.questions import load_questions

from conftest import SPIDER
from test_train_loop import REPO, rows, scripted_backend, tiny_config, _questions

pytestmark = [pytest.mark.skipif(not SPIDER.exists(), reason="needs Spider under ../shared/data"),
              pytest.mark.usefixtures("one_torch_thread")]  # fmt: skip

SINGERS = "SELECT count(*) FROM singer"
NO_COLUMN = "SELECT count(singer_name) FROM singer"  # singer has Name, not singer_name


def _pool(tmp_path: Path):
    data = tiny_config(tmp_path)
    data["rollout"]["episode"].update(max_rounds=3, max_turn_tokens=256)  # a fix takes three replies
    config = config_from_dict(data)
    return config, {t.question_id: t for t in load_questions(config.data)}


def _singers(tasks) -> str:
    return next(q for q, t in tasks.items() if t.gold_sql.strip().rstrip(";") == SINGERS)


def test_demonstrations_come_from_a_groups_right_and_failing_answers():
    records = [
        {"question_id": "a", "outcome": "parsable", "final_sql": "SELECT x FROM t"},
        {"question_id": "a", "outcome": "equivalent", "final_sql": "SELECT y FROM t"},
        {"question_id": "a", "outcome": "equivalent", "final_sql": "SELECT y FROM t "},
        {"question_id": "a", "outcome": "equivalent", "final_sql": "SELECT t.y FROM t"},
        {"question_id": "a", "outcome": "executable", "final_sql": "SELECT z FROM t"},  # runs, wrong: nothing to fix from
        {"question_id": "a", "outcome": "parsable", "final_sql": "SELECT w FROM t"},
        {"question_id": "a", "outcome": "parsable", "final_sql": "SELECT v FROM t"},
        {"question_id": "b", "outcome": "parsable", "final_sql": "SELECT q FROM u"},  # never right: no demonstration
        {"question_id": "c", "outcome": "executable", "final_sql": "SELECT 1"},
        {"question_id": "c", "outcome": "equivalent", "final_sql": "SELECT 2"},
    ]
    demos = from_episodes(records, fixes_per_question=2)
    assert demos == [
        Demo("a", ("SELECT y FROM t",)),  # the most frequent right query
        Demo("a", ("SELECT x FROM t", "SELECT y FROM t")),
        Demo("a", ("SELECT w FROM t", "SELECT y FROM t")),
        Demo("c", ("SELECT 2",)),
    ]
    assert [d.kind for d in demos] == ["tested", "fix", "fix", "tested"]
    assert [json.loads(r) for r in replies(demos[1])] == [
        {"tool": "run_query", "args": {"sql": "SELECT x FROM t"}},
        {"tool": "run_query", "args": {"sql": "SELECT y FROM t"}},
        {"tool": "submit_sql", "args": {"sql": "SELECT y FROM t"}},
    ]


def test_a_demonstration_is_kept_only_when_the_real_environment_bears_it_out(tmp_path):
    config, tasks = _pool(tmp_path)
    qid = _singers(tasks)
    demos = [
        Demo(qid, (NO_COLUMN, SINGERS)),  # a fix: the first fails, the second is right
        Demo(qid, (SINGERS,)),  # tested
        Demo(qid, ("SELECT count(*) FROM concert", SINGERS)),  # the "failing" query runs
        Demo(qid, (NO_COLUMN, "SELECT count(*) FROM stadium")),  # the fix is wrong
    ]
    kept, dropped = checked(demos, tasks, RunnerConfig(episode=config.rollout.episode))
    assert [d for d, _ in kept] == demos[:2]
    assert dropped == {"fix: the failing query ran, or the right one did not": 1, "fix: scored executable": 1}
    fix = kept[0][1].result
    error = fix.rounds[0].calls[0]
    assert not error.ok and "no such column" in error.output  # the error the model reads
    assert fix.rounds[-1].calls[0].tool == "submit_sql" and fix.answer_tested
    with pytest.raises(ConfigError, match="questions the training pool lacks"):
        checked([Demo("nowhere", (SINGERS,))], tasks, RunnerConfig())


def test_only_the_demonstrations_replies_are_trained_in_the_policys_tokens(tmp_path):
    config, tasks = _pool(tmp_path)
    qid = _singers(tasks)
    tokenizer = qwen3_5_tokenizer()
    demo = Demo(qid, (NO_COLUMN, SINGERS))
    groups, dropped = demonstration_groups(
        [demo], tasks, {qid: 7}, RunnerConfig(episode=config.rollout.episode),
        RewardConfig(), GoldResults(), tokenizer=tokenizer, chat=None,
    )  # fmt: skip
    assert not dropped and len(groups) == 1
    group = groups[0]
    assert group.demonstration and not group.uniform and group.advantages == [1.0] and group.pool_index == 7
    assert group.scored[0].verdict.outcome.value == "equivalent"
    rollout = group.rollouts[0]
    sample = train_sample(rollout.token_ids, rollout.segments, rollout.logprobs, 1.0)
    assert all(math.isnan(lp) for lp in sample.sampler_logprobs)  # no sampler drew them: no correction to it
    trained = tokenizer.decode([rollout.token_ids[p] for p in sample.positions])
    # the replies after the error, nothing the environment wrote and not the failing query:
    # a fix teaches what to do after an error, not how to make it
    assert trained == "".join(r + "<|im_end|>" for r in replies(demo)[1:])
    assert NO_COLUMN in tokenizer.decode(rollout.token_ids) and "no such column" in tokenizer.decode(rollout.token_ids)


def test_warm_up_batches_keep_a_questions_demonstrations_together():
    demos = [Demo(q, (f"SELECT {i}",) * k) for i, (q, k) in enumerate([("a", 1), ("a", 2), ("b", 1), ("c", 1), ("c", 2), ("d", 1)])]
    batches = warmup_batches(demos, 3, seed=0)
    assert len(batches) == 3 and sorted(sum(batches, []), key=demos.index) == demos
    for batch in batches:
        assert all(all(d in batch for d in demos if d.question_id == b.question_id) for b in batch)
    assert warmup_batches(demos, 3, seed=0) == batches


def test_a_run_imitates_its_demonstrations_then_goes_on_with_grpo(tmp_path):
    data = tiny_config(tmp_path, steps=2, checkpoint={"every": 1, "keep": 1}, telemetry={"tensorboard": False})
    data["rollout"]["episode"].update(max_rounds=3, max_turn_tokens=256)
    data["model"]["lora"] = {"enabled": True, "r": 4, "alpha": 8}
    data["optim"]["warmup_ratio"] = 0.0
    _, tasks = _pool(tmp_path)
    qid = _singers(tasks)
    demos = tmp_path / "demos.jsonl"
    demos.write_text(json.dumps({"question_id": qid, "queries": [NO_COLUMN, SINGERS]}) + "\n"
                     + json.dumps({"question_id": qid, "queries": [SINGERS]}) + "\n")  # fmt: skip
    data["warmup"] = {"demos": str(demos), "steps": 1}
    config = config_from_dict(data)
    train(config, backend=scripted_backend(_questions(config)))
    first, second = rows(Path(config.out))
    assert first["warmup/demonstrations"] == 2 and first["tokens/trained"] > 0
    assert first["is_weight"] == 1.0  # every demonstrated token counts in full
    assert first["outcome/equivalent"] == 1.0 and first["episode/tested_rate"] == 1.0
    assert "warmup/demonstrations" not in second and second["episodes"] == 8  # GRPO: 2 questions x 4
    episodes = [json.loads(line) for line in (Path(config.out) / "episodes.jsonl").read_text().splitlines()]
    assert [e["final_sql"] for e in episodes if e["step"] == 1] == [SINGERS, SINGERS]
    from sqlscout.report.runs import load_train_run

    assert load_train_run(Path(config.out), "run").describe() == "2 training steps; steps 1–1 imitated demonstrations (warm-up)"


def test_warm_up_settings_are_checked(tmp_path):
    with pytest.raises(ConfigError, match="warmup needs both"):
        config_from_dict(tiny_config(tmp_path, warmup={"steps": 2}))
    with pytest.raises(ConfigError, match="no demonstrations file"):
        load_demos(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question_id": "1"}\n')
    with pytest.raises(ConfigError, match="bad.jsonl:1: not a demonstration"):
        load_demos(bad)


def _command_setup(tmp_path: Path) -> tuple[Path, dict, str, Path, Path]:
    """A pool config file for the command, its questions, concert_singer's singer count
    question, and where its episodes and demonstrations go."""
    data = tiny_config(tmp_path)
    data["rollout"]["episode"].update(max_rounds=3, max_turn_tokens=256)
    config_file = tmp_path / "tiny.yaml"
    config_file.write_text(yaml.safe_dump(data))
    _, tasks = _pool(tmp_path)
    return config_file, tasks, _singers(tasks), tmp_path / "episodes.jsonl", tmp_path / "demos.jsonl"


def _demos_command(config_file: Path, episodes: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    """``python -m sqlscout.train.demos`` on ``episodes`` as a user runs it."""
    return _demos(config_file, out, "--episodes", str(episodes), *extra)


def _demos(config_file: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m sqlscout.train.demos`` as a user runs it, with ``args`` after its config and output."""
    return subprocess.run(
        [sys.executable, "-m", "sqlscout.train.demos", "--config", str(config_file), "--out", str(out), *args],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip


def test_the_demonstrations_command_writes_checked_ones(tmp_path):
    config_file, tasks, qid, episodes, out = _command_setup(tmp_path)
    episodes.write_text("".join(json.dumps(r) + "\n" for r in [
        {"step": 1, "question_id": qid, "outcome": "parsable", "final_sql": NO_COLUMN},
        {"step": 1, "question_id": qid, "outcome": "equivalent", "final_sql": SINGERS},
    ]))  # fmt: skip
    done = _demos_command(config_file, episodes, out)
    assert done.returncode == 0, done.stderr
    assert "2 of 2 demonstrations kept (1 fix, 1 tested)" in done.stdout
    assert load_demos(out) == [Demo(qid, (SINGERS,)), Demo(qid, (NO_COLUMN, SINGERS))]
    assert json.loads(out.read_text().splitlines()[1])["kind"] == "fix"


def _greedy_record(tasks, qid: str, queries: tuple[str, ...], outcome: str) -> dict:
    """An evaluator record of an episode that ran ``queries`` in the real environment and submitted the last."""
    [rollout], runner = play([Demo(qid, queries)], [tasks[qid]], RunnerConfig(episode=_pool_episode()))
    runner.close()
    return {"key": qid, "verdict": {"outcome": outcome}, "episode": rollout.result.to_dict()}


def _pool_episode():
    from sqlscout.env.config import EpisodeConfig

    return EpisodeConfig(max_rounds=4, max_failed_queries=3, max_turn_tokens=256)


def test_greedy_fixes_start_from_the_queries_the_greedy_episodes_failed_on(tmp_path):
    _, tasks = _pool(tmp_path)
    qid = _singers(tasks)
    typo = "SELECT count(*) FROM singers"
    wrong = _greedy_record(tasks, qid, (NO_COLUMN, typo, NO_COLUMN), "parsable")  # reran NO_COLUMN
    assert wrong["episode"]["rounds"][0]["calls"][0]["ok"] is False
    right = _greedy_record(tasks, qid, (SINGERS,), "equivalent")
    other = dict(wrong, key="no-right-query")
    demos = from_greedy([wrong, right, other], {qid: SINGERS})
    # one tested demonstration and a fix from each distinct failing query, in the order run;
    # the right episode and the question without a right query give none
    assert demos == [Demo(qid, (SINGERS,)), Demo(qid, (NO_COLUMN, SINGERS)), Demo(qid, (typo, SINGERS))]
    kept, dropped = checked(demos, tasks, RunnerConfig(episode=_pool_episode()))
    assert len(kept) == 3 and not dropped


def test_the_pool_evaluation_decodes_greedily_on_every_pool_question_and_resumes(tmp_path):
    config = config_from_dict(tiny_config(tmp_path))
    pool = load_questions(config.data)
    backend = scripted_backend(_questions(config))
    assert config.rollout.sampling.temperature > 0  # the rollouts sample; the pool evaluation must not
    out = tmp_path / "pool-eval"
    metrics = evaluate_pool(config, backend, out, model="scripted")
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert metrics["eval/questions"] == len(pool) == len(records)
    assert sorted(r["key"] for r in records) == sorted(t.question_id for t in pool)
    assert json.loads((out / "config.json").read_text())["settings"]["sampling"]["temperature"] == 0.0
    before = (out / "episodes.jsonl").read_text()
    evaluate_pool(config, backend, out, model="scripted")  # finished: resumed, nothing run again
    assert (out / "episodes.jsonl").read_text() == before


def test_the_demonstrations_command_takes_fixes_from_a_greedy_evaluation(tmp_path):
    config_file, tasks, qid, episodes, out = _command_setup(tmp_path)
    episodes.write_text("".join(json.dumps(r) + "\n" for r in [
        {"step": 1, "question_id": qid, "outcome": "parsable", "final_sql": "SELECT count(*) FROM singers"},  # sampled: not used
        {"step": 1, "question_id": qid, "outcome": "equivalent", "final_sql": SINGERS},
    ]))  # fmt: skip
    greedy = tmp_path / "greedy.jsonl"
    greedy.write_text(json.dumps(_greedy_record(tasks, qid, (NO_COLUMN, NO_COLUMN), "parsable")) + "\n")
    done = _demos_command(config_file, episodes, out, "--fixes-from", str(greedy))
    assert done.returncode == 0, done.stderr
    assert "2 of 2 demonstrations kept (1 fix, 1 tested)" in done.stdout
    assert load_demos(out) == [Demo(qid, (SINGERS,)), Demo(qid, (NO_COLUMN, SINGERS))]
    # a question no sampled episode answered right is fixed towards its gold query only when asked
    episodes.write_text(json.dumps({"step": 1, "question_id": qid, "outcome": "parsable", "final_sql": NO_COLUMN}) + "\n")
    for extra, kept in (([], "0 of 0"), (["--gold-fallback"], "2 of 2")):
        done = _demos_command(config_file, episodes, out, "--fixes-from", str(greedy), *extra)
        assert done.returncode == 0 and f"{kept} demonstrations kept" in done.stdout, done.stdout + done.stderr
    gold = " ".join(tasks[qid].gold_sql.split()).rstrip(";").rstrip()
    assert load_demos(out) == [Demo(qid, (gold,)), Demo(qid, (NO_COLUMN, gold))]
    done = _demos_command(config_file, episodes, out, "--evaluate", "qwen2.5-coder-0.5b")
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1] == "error: --evaluate needs --eval-out, the directory its episodes go to"


def test_corruptions_get_a_name_wrong_the_way_small_models_do(tmp_path):
    columns = {"singer": {"singer_id", "name", "country", "age"}, "singer_in_concert": {"concert_id", "singer_id"},
               "concert": {"concert_id", "concert_name", "year"}}  # fmt: skip
    joined = "SELECT T2.concert_name FROM singer_in_concert AS T1 JOIN concert AS T2 ON T1.concert_id = T2.concert_id WHERE T1.singer_id = 3"
    # T2.concert_name moved to T1 (singer_in_concert has no concert_name); the text kept as written
    assert corruptions(joined, columns) == [joined.replace("T2.concert_name", "T1.concert_name", 1)]
    single = "SELECT Name FROM singer WHERE Age > 30"
    assert corruptions(single, columns) == ["SELECT Names FROM singer WHERE Age > 30"]
    assert corruptions("SELECT avg(ages) FROM singer", {"singer": {"ages"}}) == ["SELECT avg(age) FROM singer"]
    assert corruptions("SELECT count(*) FROM singer", columns) == []  # nothing to get wrong
    assert corruptions("SELECT FROM WHERE (", columns) == []
    assert corruptions("SELECT name FROM singer WHERE country = 'name'", columns) == ["SELECT names FROM singer WHERE country = 'name'"]


def test_corrupted_fixes_fail_in_the_real_environment_and_point_to_their_fix(tmp_path):
    _, tasks = _pool(tmp_path)
    qid = _singers(tasks)
    right = {qid: "SELECT Name FROM singer ORDER BY Age LIMIT 1"}  # runs, though not this question's answer
    demos = corrupted_fixes(right, tasks)
    assert demos == [Demo(qid, ("SELECT Names FROM singer ORDER BY Age LIMIT 1", right[qid]))]
    [rollout], runner = play(demos, [tasks[qid]], RunnerConfig(episode=_pool_episode()))
    runner.close()
    error = rollout.result.rounds[0].calls[0]
    assert not error.ok and "no such column" in error.output and "singer.Name" in error.output  # the hint names the fix


def test_the_demonstrations_command_writes_corrupted_fixes_joins_first(tmp_path):
    config_file, tasks, qid, episodes, out = _command_setup(tmp_path)
    episodes.write_text(json.dumps({"step": 1, "question_id": qid, "outcome": "equivalent", "final_sql": "SELECT count(Name) FROM singer"}) + "\n")

    def build(*extra: str) -> list[Demo]:
        done = _demos_command(config_file, episodes, out, "--corrupt", *extra)
        assert done.returncode == 0, done.stderr
        return load_demos(out)

    assert build() == [Demo(qid, ("SELECT count(Name) FROM singer",)), Demo(qid, ("SELECT count(Names) FROM singer", "SELECT count(Name) FROM singer"))]
    # with the gold queries of the questions never answered right, capped: a join's fix first
    demos = build("--gold-fallback", "--max-questions", "1")
    assert len({d.question_id for d in demos}) == 1 and demos[0].kind == "tested"
    bad, good = demos[1].queries
    unqualified = lambda sql: re.sub(r"\b\w+\.", "", sql)  # noqa: E731
    assert " JOIN " in good.upper() and bad != good and unqualified(bad) == unqualified(good)  # one column's alias moved


@pytest.mark.parametrize("run, count", [("run4", 187), ("run11", 107), ("run12", 107), ("run13", 107)])
def test_a_runs_demonstrations_are_of_its_training_questions_only(run, count):
    from sqlscout.data.splits import SPIDER_DEV_REPORT
    from sqlscout.train.config import load_config

    config = load_config(REPO / "configs" / f"grpo-cpu-qwen2.5-coder-0.5b-{run}.yaml")
    pool = {t.question_id: t for t in load_questions(config.data)}
    demos = load_demos(REPO / config.warmup.demos)
    assert len(demos) == count and all(d.question_id in pool for d in demos)
    assert not {pool[d.question_id].db_id for d in demos} & set(SPIDER_DEV_REPORT)


def test_repaired_fixes_take_the_rules_repair_where_it_is_right_else_the_right_query(tmp_path):
    _, tasks = _pool(tmp_path)
    qid = _singers(tasks)
    wrong_name = "SELECT count(Names) FROM singer"  # the rules: did you mean singer.Name? (counts every singer)
    broken = "SELECT count(*) FROM singer WHERE"  # a syntax error: no repair
    greedy = _greedy_record(tasks, qid, (wrong_name, SINGERS), "equivalent")
    sampled = [{"step": 1, "question_id": qid, "outcome": "parsable", "final_sql": broken},
               {"step": 1, "question_id": qid, "outcome": "parsable", "final_sql": wrong_name},  # seen already
               {"step": 1, "question_id": qid, "outcome": "executable", "final_sql": "SELECT 1"}]  # fmt: skip
    failing = failing_queries([greedy], sampled)
    assert failing == {qid: [wrong_name, broken]}
    demos, repairs = repaired_fixes(failing, {qid: SINGERS}, tasks)
    assert repairs == 1
    assert demos == [Demo(qid, (wrong_name, "SELECT count(singer.Name) FROM singer")), Demo(qid, (broken, SINGERS))]
    assert repaired_fixes(failing, {}, tasks) == (demos[:1], 1)  # no right query: the repair only
    # capped: the repair first, wherever its failing query came in the order
    assert repaired_fixes({qid: [broken, wrong_name]}, {qid: SINGERS}, tasks, per_question=1) == (demos[:1], 1)
    kept, dropped = checked(demos, tasks, RunnerConfig(episode=_pool_episode()))
    assert len(kept) == 2 and not dropped


def test_the_demonstrations_command_writes_repaired_fixes(tmp_path):
    config_file, tasks, qid, episodes, out = _command_setup(tmp_path)
    episodes.write_text(json.dumps({"step": 1, "question_id": qid, "outcome": "parsable", "final_sql": "SELECT count(Names) FROM singer"}) + "\n")
    done = _demos_command(config_file, episodes, out, "--repair")
    assert done.returncode == 0, done.stderr
    assert "1 of 1 fixes are the rules' repairs" in done.stdout and "1 of 1 demonstrations kept (1 fix, 0 tested)" in done.stdout
    assert load_demos(out) == [Demo(qid, ("SELECT count(Names) FROM singer", "SELECT count(singer.Name) FROM singer"))]


def test_a_fix_after_a_rerun_fails_twice_then_trains_only_the_fix(tmp_path):
    _, tasks = _pool(tmp_path)
    qid = _singers(tasks)
    demos = after_rerun([Demo(qid, (NO_COLUMN, SINGERS)), Demo(qid, (SINGERS,))])
    assert demos == [Demo(qid, (NO_COLUMN, NO_COLUMN, SINGERS)), Demo(qid, (SINGERS,))]
    tokenizer = qwen3_5_tokenizer()
    groups, dropped = demonstration_groups(demos[:1], tasks, {qid: 0}, RunnerConfig(episode=_pool_episode()),  # four replies
                                           RewardConfig(), GoldResults(), tokenizer=tokenizer, chat=None)  # fmt: skip
    assert not dropped, dropped  # the rerun ran again in its own turn and failed again
    rollout = groups[0].rollouts[0]
    assert [c.ok for r in rollout.result.rounds for c in r.calls if c.tool == "run_query"] == [False, False, True]
    sample = train_sample(rollout.token_ids, rollout.segments, rollout.logprobs, 1.0)
    trained = tokenizer.decode([rollout.token_ids[p] for p in sample.positions])
    assert trained == "".join(r + "<|im_end|>" for r in replies(demos[0])[2:])  # both failing replies are context


def test_the_demonstrations_command_rewrites_a_demonstrations_file_after_a_rerun(tmp_path):
    config_file, tasks, qid, _, out = _command_setup(tmp_path)
    data = yaml.safe_load(config_file.read_text())
    data["rollout"]["episode"]["max_rounds"] = 4  # fail, fail again, run the fix, submit it
    config_file.write_text(yaml.safe_dump(data))
    given = tmp_path / "given.jsonl"
    write_demos(given, [Demo(qid, (NO_COLUMN, SINGERS)), Demo(qid, (SINGERS,))], tasks)
    before = given.read_bytes()
    done = _demos(config_file, out, "--demos", str(given), "--after-rerun")
    assert done.returncode == 0, done.stderr
    assert "2 of 2 demonstrations kept (1 fix, 1 tested)" in done.stdout
    assert load_demos(out) == [Demo(qid, (NO_COLUMN, NO_COLUMN, SINGERS)), Demo(qid, (SINGERS,))]
    assert given.read_bytes() == before  # the file given is only read
    both = _demos(config_file, out, "--demos", str(given), "--episodes", str(given))
    assert both.returncode != 0 and "not allowed with argument" in both.stderr
