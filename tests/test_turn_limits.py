"""One model turn is bounded in time, and a write never passes as an answer
(issue 13, items 4 and 5), on a copy of Chinook."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import pytest

from conftest import CHINOOK
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode import Episode
from sqlscout.env.sandbox import Database, SandboxConfig
from sqlscout.env.task import Task
from sqlscout.env.trace import StopReason
from sqlscout.scoring import score_sql
from sqlscout.scoring.reward import RewardConfig, reward

DEADLINE_S = 0.5
SLACK_S = 0.5


def runaway(k: int) -> str:
    return json.dumps(
        {"tool": "run_query", "args": {"sql": f"WITH RECURSIVE n(i) AS (SELECT {k} UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"}}
    )


@pytest.fixture
def chinook_copy(tmp_path: Path) -> Path:
    return Path(shutil.copy(CHINOOK, tmp_path / "chinook.sqlite"))


def _episode(path: Path, config: EpisodeConfig | None = None, timeout_s: float = DEADLINE_S) -> Episode:
    db = Database(path, SandboxConfig(timeout_s=timeout_s))
    return Episode(Task("q1", "How many albums are there?", str(path)), db, config)


def _timed_step(episode: Episode, reply: str) -> tuple[str | None, float]:
    start = time.perf_counter()
    observation = episode.step(reply)
    return observation, time.perf_counter() - start


def test_calls_after_the_failure_limit_are_not_run(chinook_copy: Path) -> None:
    ep = _episode(chinook_copy)  # max_failed_queries = 4
    observation, took = _timed_step(ep, "\n".join(runaway(k) for k in range(10)))
    assert took < 4 * DEADLINE_S + SLACK_S
    calls = ep.rounds[0].calls
    assert len(calls) == 10
    assert [c.output.startswith("Error: Query timed out") for c in calls[:4]] == [True] * 4
    assert all(c.output == "Not run: 4 queries failed in a row; answer with what you know." for c in calls[4:])
    assert all(not c.ok and c.elapsed_s == 0.0 for c in calls[4:])
    assert observation is not None and "Result 10 of run_query" in observation
    assert ep.in_final_turn and ep.failed_streak == 4


def test_a_turn_has_a_time_limit(chinook_copy: Path) -> None:
    config = EpisodeConfig(max_failed_queries=10, turn_time_limit_s=1.2)
    ep = _episode(chinook_copy, config)
    observation, took = _timed_step(ep, "\n".join(runaway(k) for k in range(10)))
    assert took < 1.2 + SLACK_S
    outputs = [c.output for c in ep.rounds[0].calls]
    assert len(outputs) == 10
    assert outputs[0].startswith("Error: Query timed out after 0.5 s")
    assert outputs[2].startswith("Error: Query stopped after 0.2 s: the time for this turn's tool calls ran out")
    assert outputs[-1] == "Not run: this turn's 1.2 s for tool calls are used up."
    assert observation is not None and not ep.done


def test_submit_sql_is_checked_even_when_the_turn_time_is_used_up(chinook_copy: Path) -> None:
    config = EpisodeConfig(max_failed_queries=10, turn_time_limit_s=0.3)
    ep = _episode(chinook_copy, config)
    write = json.dumps({"tool": "submit_sql", "args": {"sql": "WITH x AS (SELECT 1) DELETE FROM Album"}})
    ep.step(runaway(1) + "\n" + write)
    assert ep.rounds[0].calls[1].output.startswith("Error: Refused")
    assert not ep.done
    ep.step(json.dumps({"tool": "submit_sql", "args": {"sql": "SELECT count(*) FROM Album"}}))
    assert ep.result().stop_reason is StopReason.SUBMITTED


def test_the_turn_limit_is_validated() -> None:
    from sqlscout.errors import ConfigError

    with pytest.raises(ConfigError, match="turn_time_limit_s"):
        EpisodeConfig(turn_time_limit_s=0)
    assert EpisodeConfig(turn_time_limit_s=None).to_dict()["turn_time_limit_s"] is None


# -- a write never earns more than a refusal (item 5) ----------------------------------------

WRITES = [
    "DELETE FROM Album",
    ";DELETE FROM Album",
    " ; ;\n-- x\nDELETE FROM Album",
    "EXPLAIN ;DELETE FROM Album",
    ";DROP VIEW IF EXISTS nope",
    ";EXPLAIN VACUUM",
    ";PRAGMA query_only = OFF",
    "SELECT 1\x00; DELETE FROM Genre",
]


@pytest.mark.parametrize("sql", WRITES)
def test_a_submitted_write_is_refused_and_scores_no_better_than_plain_delete(chinook_copy: Path, sql: str) -> None:
    before = hashlib.sha256(chinook_copy.read_bytes()).hexdigest()
    results = []
    for answer in ("DELETE FROM Album", sql):
        ep = _episode(chinook_copy, timeout_s=5.0)
        observation = ep.step(json.dumps({"tool": "submit_sql", "args": {"sql": answer}}))
        assert observation is not None and "Error: Refused" in observation, observation
        assert not ep.done
        while not ep.done:
            ep.step("I do not know.")
        result = ep.result()
        scored = score_sql(ep.db, result.final_sql, "SELECT count(*) FROM Album")
        results.append((result.stop_reason, result.final_sql, reward(scored, RewardConfig())))
    assert results[1] == results[0]
    # Scored directly, the write is refused like the plain one.
    db = Database(chinook_copy)
    direct = [score_sql(db, s, "SELECT count(*) FROM Album").verdict for s in ("DELETE FROM Album", sql)]
    assert direct[1].pred_error is not None and direct[1].pred_error.startswith("Refused")
    assert reward(score_sql(db, sql, "SELECT count(*) FROM Album"), RewardConfig()) <= reward(
        score_sql(db, "DELETE FROM Album", "SELECT count(*) FROM Album"), RewardConfig()
    )
    assert hashlib.sha256(chinook_copy.read_bytes()).hexdigest() == before
