"""Demonstrations (sqlscout.train.demos): written from a run's own answers, played
through the real environment and checked there, imitated in a run's first steps."""

from __future__ import annotations

import json
import math
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
from sqlscout.train.demos import Demo, checked, demonstration_groups, from_episodes, load_demos, replies, warmup_batches
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
    assert trained == "".join(r + "<|im_end|>" for r in replies(demo))  # the three replies, nothing the environment wrote
    assert "no such column" in tokenizer.decode(rollout.token_ids)


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


def test_the_demonstrations_command_writes_checked_ones(tmp_path):
    data = tiny_config(tmp_path)
    data["rollout"]["episode"].update(max_rounds=3, max_turn_tokens=256)
    config_file = tmp_path / "tiny.yaml"
    config_file.write_text(yaml.safe_dump(data))
    _, tasks = _pool(tmp_path)
    qid = _singers(tasks)
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text("".join(json.dumps(r) + "\n" for r in [
        {"step": 1, "question_id": qid, "outcome": "parsable", "final_sql": NO_COLUMN},
        {"step": 1, "question_id": qid, "outcome": "equivalent", "final_sql": SINGERS},
    ]))  # fmt: skip
    out = tmp_path / "demos.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "sqlscout.train.demos", "--config", str(config_file), "--episodes", str(episodes), "--out", str(out)],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "2 of 2 demonstrations kept (1 fix, 1 tested)" in done.stdout
    assert load_demos(out) == [Demo(qid, (SINGERS,)), Demo(qid, (NO_COLUMN, SINGERS))]
    assert json.loads(out.read_text().splitlines()[1])["kind"] == "fix"


def test_run_4s_demonstrations_are_of_its_training_questions_only():
    from sqlscout.data.splits import SPIDER_DEV_REPORT
    from sqlscout.train.config import load_config

    config = load_config(REPO / "configs" / "grpo-cpu-qwen2.5-coder-0.5b-run4.yaml")
    pool = {t.question_id: t for t in load_questions(config.data)}
    demos = load_demos(REPO / config.warmup.demos)
    assert len(demos) == 187 and all(d.question_id in pool for d in demos)
    assert not {pool[d.question_id].db_id for d in demos} & set(SPIDER_DEV_REPORT)
