"""Rewards (SPEC §5): the presets, partial credit, the bonuses, and the guarantee that
a wrong answer never outranks a right one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlscout.errors import ConfigError
from sqlscout.env.sandbox import Database
from sqlscout.scoring import (
    REWARD_PRESETS,
    Outcome,
    RewardConfig,
    Semantics,
    execute_for_scoring,
    group_rewards,
    reward,
    row_f1,
    score_sql,
    tables_used,
)

FIXTURE = (Path(__file__).parent / "data" / "scoring_fixture.sql").read_text()
GOLD_TWO_TABLES = "SELECT p.name FROM person p JOIN pet ON pet.owner_id = p.id WHERE pet.kind = 'cat'"  # Ada, Bob


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Database:
    path = tmp_path_factory.mktemp("reward") / "reward.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(FIXTURE)
    conn.close()
    with Database(path) as database:
        yield database


def dense(db: Database, pred: str, gold: str = GOLD_TWO_TABLES, **kwargs: bool) -> float:
    return reward(score_sql(db, pred, gold), REWARD_PRESETS["sqale-dense"], pred_sql=pred, gold_sql=gold, **kwargs)


def test_sqale_dense_preset_values(db: Database) -> None:
    cfg = REWARD_PRESETS["sqale-dense"]
    assert (cfg.equivalent, cfg.executable, cfg.f1_weight, cfg.same_tables, cfg.plurality, cfg.parsable, cfg.invalid) == (
        3.0, 0.1, 0.9, 0.1, 0.1, 0.05, 0.0
    )
    assert cfg.semantics is Semantics.OFFICIAL
    assert dense(db, "SELECT name FROM person WHERE id IN (1, 2)") == 3.0
    # Runs, wrong: 0.1 + 0.9 * F1. {Ada} vs {Ada, Bob}: P = 1, R = 0.5, F1 = 2/3.
    assert dense(db, "SELECT name FROM person WHERE id = 1") == pytest.approx(0.1 + 0.9 * 2 / 3)
    assert dense(db, "SELECT name FROM person WHERE id = 5") == pytest.approx(0.1)
    # Same two tables as the gold query: +0.1.
    same = "SELECT p.name FROM person p JOIN pet ON pet.owner_id = p.id WHERE pet.kind = 'dog'"  # Ada
    assert dense(db, same) == pytest.approx(0.1 + 0.9 * 2 / 3 + 0.1)
    assert dense(db, same, agrees_with_plurality=True) == pytest.approx(0.1 + 0.9 * 2 / 3 + 0.2)
    assert dense(db, "SELECT nme FROM person") == 0.05  # parses, does not run
    assert dense(db, "SELEC nme FRM person") == 0.0  # invalid
    assert dense(db, None) == 0.0


def test_same_tables_bonus_needs_more_than_one_gold_table(db: Database) -> None:
    gold = "SELECT name FROM person WHERE id < 3"
    # Same single table, wrong rows: no table bonus.
    assert dense(db, "SELECT name FROM person WHERE id = 5", gold=gold) == pytest.approx(0.1)
    assert tables_used("SELECT * FROM Person p JOIN pet ON 1") == frozenset({"person", "pet"})
    assert tables_used("SELECT * FROM a WHERE x IN (SELECT y FROM b)") == frozenset({"a", "b"})
    assert tables_used("not sql at all ((") == frozenset() and tables_used(None) == frozenset()


def test_tiered_preset(db: Database) -> None:
    cfg = REWARD_PRESETS["tiered"]
    gold = GOLD_TWO_TABLES
    for pred, expected in [
        ("SELECT name FROM person WHERE id IN (1, 2)", 1.0),
        ("SELECT p.name FROM person p JOIN pet ON pet.owner_id = p.id WHERE pet.kind = 'dog'", 0.1),
        ("SELECT nme FROM person", 0.0),
        ("garbage", 0.0),
    ]:
        assert reward(score_sql(db, pred, gold), cfg, pred_sql=pred, gold_sql=gold, agrees_with_plurality=True) == expected


def test_reward_semantics_decides_equivalence(db: Database) -> None:
    gold = "SELECT name FROM person ORDER BY name"
    pred = "SELECT name FROM person ORDER BY name DESC"
    scored = score_sql(db, pred, gold)
    assert reward(scored, RewardConfig(), pred_sql=pred, gold_sql=gold) == 3.0
    strict = reward(scored, RewardConfig(semantics="strict"), pred_sql=pred, gold_sql=gold)
    assert strict == pytest.approx(0.1 + 0.9 * 1.0)  # same rows, wrong order: full F1, still wrong


def test_plurality_bonus_in_a_group(db: Database) -> None:
    gold = GOLD_TWO_TABLES
    preds = [
        "SELECT name FROM person WHERE id = 1",  # {Ada}
        "SELECT 'Ada'",  # {Ada}: same result, so these two form the plurality
        "SELECT name FROM person WHERE id IN (1, 2)",  # right
        "SELECT name FROM person WHERE id = 5",  # {Ed}
        "SELEC",  # invalid (a bare word): never part of a plurality
    ]
    gold_result = execute_for_scoring(db, gold)
    group = [(score_sql(db, p, gold, gold=gold_result), p) for p in preds]
    cfg = REWARD_PRESETS["sqale-dense"]
    rewards = group_rewards(group, gold, cfg)
    f1 = 2 / 3
    assert rewards == pytest.approx([0.1 + 0.9 * f1 + 0.1, 0.1 + 0.9 * f1 + 0.1, 3.0, 0.1, 0.0])
    # A tie for the most common result: no plurality at all.
    tied = group_rewards(group[:4] + [(score_sql(db, "SELECT 'Ed'", gold, gold=gold_result), "SELECT 'Ed'")], gold, cfg)
    assert tied == pytest.approx([0.1 + 0.9 * f1, 0.1 + 0.9 * f1, 3.0, 0.1, 0.1])
    # One answer alone is no plurality.
    assert group_rewards(group[:1], gold, cfg) == pytest.approx([0.1 + 0.9 * f1])


def test_row_f1() -> None:
    assert row_f1([], []) == 1.0
    assert row_f1([(1,)], []) == 0.0 and row_f1([], [(1,)]) == 0.0
    assert row_f1([(1,), (1,)], [(1,)]) == pytest.approx(2 / 3)  # multisets: a duplicate costs precision
    assert row_f1([(1,)], [(1.0,)]) == 1.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"equivalent": 1.0},  # 0.1 + 0.9 + 0.1 + 0.1 = 1.2 would beat it
        {"equivalent": 1.2},  # a tie is not enough
        {"f1_weight": -0.1},
        {"parsable": 0.5},  # above executable
        {"invalid": 0.1},  # above parsable
        {"unsubmitted": 0.0},  # a scale in (0, 1]
        {"unsubmitted": 1.5},
        {"unsubmitted": 0.4},  # 3.0 x 0.4 = 1.2: a right answer the environment asked for ties a wrong one
        {"tested": -0.1},  # a bonus, never a cost
    ],
)
def test_config_refuses_settings_that_break_the_ranking(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        RewardConfig(**kwargs)


def test_an_answer_the_environment_asked_for_is_paid_less(db: Database) -> None:
    """``unsubmitted`` scales the reward of an answer not given through submit_sql, and
    only that one: the plain protocol is paid for as well as the answer."""
    cfg = RewardConfig(unsubmitted=0.5)
    gold_sql = "SELECT name FROM person WHERE id IN (1, 2)"
    gold = execute_for_scoring(db, gold_sql)
    right = score_sql(db, gold_sql, gold_sql, gold=gold)
    close = score_sql(db, "SELECT name FROM person WHERE id = 1", gold_sql, gold=gold)
    assert reward(right, cfg, submitted=False) == 1.5 and reward(right, cfg) == 3.0
    assert reward(close, cfg, submitted=False) == pytest.approx(reward(close, cfg) / 2)
    values = group_rewards([(right, gold_sql), (right, gold_sql)], gold_sql, cfg, submitted=[True, False])
    assert values == [3.0, 1.5]
    with pytest.raises(ValueError, match="2 flags for a group of 1"):
        group_rewards([(right, gold_sql)], gold_sql, cfg, submitted=[True, False])
    assert REWARD_PRESETS["sqale-dense"].unsubmitted == REWARD_PRESETS["tiered"].unsubmitted == 1.0  # the presets as before


def test_the_tested_bonus_goes_to_right_answers_only(db: Database) -> None:
    """``tested`` is added to a right answer the model had run before giving it (then
    scaled like any reward when not submitted); a wrong answer never gets it."""
    cfg = RewardConfig(tested=0.5, unsubmitted=0.5)
    gold_sql = "SELECT name FROM person WHERE id IN (1, 2)"
    gold = execute_for_scoring(db, gold_sql)
    right = score_sql(db, gold_sql, gold_sql, gold=gold)
    close = score_sql(db, "SELECT name FROM person WHERE id = 1", gold_sql, gold=gold)
    assert reward(right, cfg, tested=True) == 3.5 and reward(right, cfg, tested=True, submitted=False) == 1.75
    assert reward(close, cfg, tested=True) == reward(close, cfg)
    assert group_rewards([(right, gold_sql), (right, gold_sql)], gold_sql, cfg, tested=[False, True]) == [3.0, 3.5]
    with pytest.raises(ValueError, match="tested has 1 flags for a group of 2"):
        group_rewards([(right, gold_sql), (right, gold_sql)], gold_sql, cfg, tested=[True])
    assert REWARD_PRESETS["sqale-dense"].tested == REWARD_PRESETS["tiered"].tested == 0.0  # the presets as before


def test_the_unread_error_penalty_falls_on_wrong_answers_only(db: Database) -> None:
    """``unread_error`` is taken from a wrong answer submitted beside a run of it that
    failed (below every other wrong answer, the invalid tier included); a right answer
    never pays it, so it cannot lower one below a wrong one."""
    cfg = RewardConfig(unread_error=1.0, unsubmitted=0.5)
    gold_sql = "SELECT name FROM person WHERE id IN (1, 2)"
    gold = execute_for_scoring(db, gold_sql)
    right = score_sql(db, gold_sql, gold_sql, gold=gold)
    broken = score_sql(db, "SELECT no_such_column FROM person", gold_sql, gold=gold)
    assert reward(broken, cfg) == 0.05 and reward(broken, cfg, unread_error=True) == pytest.approx(-0.95)
    assert reward(broken, cfg, unread_error=True) < cfg.invalid
    assert reward(right, cfg, unread_error=True) == reward(right, cfg) == 3.0
    values = group_rewards([(broken, None), (broken, None)], gold_sql, cfg, unread_error=[True, False])
    assert values == [pytest.approx(-0.95), 0.05]
    with pytest.raises(ValueError, match="unread_error has 1 flags for a group of 2"):
        group_rewards([(broken, None), (broken, None)], gold_sql, cfg, unread_error=[True])
    with pytest.raises(ConfigError, match="unread_error must be >= 0"):
        RewardConfig(unread_error=-1.0)
    assert REWARD_PRESETS["sqale-dense"].unread_error == REWARD_PRESETS["tiered"].unread_error == 0.0


def test_the_known_error_penalty_falls_on_wrong_answers_only_and_adds_to_the_unread_one(db: Database) -> None:
    """``known_error`` is taken from a wrong answer a run of which had failed in an earlier
    round; a right answer never pays it; a reply that reran the failing query beside its
    submission pays both."""
    cfg = RewardConfig(unread_error=1.0, known_error=0.5)
    gold_sql = "SELECT name FROM person WHERE id IN (1, 2)"
    gold = execute_for_scoring(db, gold_sql)
    right = score_sql(db, gold_sql, gold_sql, gold=gold)
    broken = score_sql(db, "SELECT no_such_column FROM person", gold_sql, gold=gold)
    assert reward(broken, cfg, known_error=True) == pytest.approx(-0.45)
    assert reward(broken, cfg, known_error=True, unread_error=True) == pytest.approx(-1.45)
    assert reward(right, cfg, known_error=True) == 3.0
    values = group_rewards([(broken, None), (broken, None)], gold_sql, cfg, known_error=[False, True])
    assert values == [0.05, pytest.approx(-0.45)]
    with pytest.raises(ValueError, match="known_error has 3 flags for a group of 2"):
        group_rewards([(broken, None), (broken, None)], gold_sql, cfg, known_error=[True, True, False])
    with pytest.raises(ConfigError, match="known_error must be >= 0"):
        RewardConfig(known_error=-0.1)
    assert REWARD_PRESETS["sqale-dense"].known_error == REWARD_PRESETS["tiered"].known_error == 0.0


def test_config_records_itself() -> None:
    assert RewardConfig(semantics="spider").to_dict()["semantics"] == "spider"
    assert RewardConfig().to_dict()["equivalent"] == 3.0


# -- the guarantee, as a property -------------------------------------------------

_VALUE = st.one_of(st.integers(-3, 3), st.sampled_from([None, "a", "b", 1.0]))
_ROWS = st.lists(st.tuples(_VALUE), max_size=6)
_WEIGHT = st.floats(0, 5, allow_nan=False)


def _values_sql(rows: list[tuple]) -> str:
    if not rows:
        return "SELECT 1 WHERE 0"

    def lit(v: object) -> str:
        return "NULL" if v is None else f"'{v}'" if isinstance(v, str) else repr(v)

    return "VALUES " + ", ".join(f"({lit(r[0])})" for r in rows)


@settings(max_examples=60, deadline=None)
@given(
    headroom=st.floats(0.01, 10, allow_nan=False),
    executable=_WEIGHT, f1_weight=_WEIGHT, same_tables=_WEIGHT, plurality=_WEIGHT,
    semantics=st.sampled_from(list(Semantics)),
    gold_rows=_ROWS,
    group_rows=st.lists(st.one_of(_ROWS, st.none()), min_size=1, max_size=5),
    unsubmitted=st.floats(0.01, 1.0, allow_nan=False),
    flags=st.lists(st.booleans(), min_size=7, max_size=7),
)
def test_a_wrong_answer_never_outranks_a_right_one(
    db: Database, headroom: float, executable: float, f1_weight: float, same_tables: float,
    plurality: float, semantics: Semantics, gold_rows: list, group_rows: list, unsubmitted: float, flags: list,
) -> None:
    # Every config drawn is one the constructor accepts (drawing and discarding the rest
    # starved Hypothesis on CI): the right answer's reward, scaled, clears the best wrong
    # one by the drawn headroom.
    max_wrong = executable + f1_weight + same_tables + plurality
    equivalent = (max_wrong + headroom) / unsubmitted
    cfg = RewardConfig(equivalent, executable, f1_weight, same_tables, plurality, min(executable, 0.05), 0.0, semantics,
                       unsubmitted)
    # The gold query touches two tables, and so does every predicted text we pass for
    # the table bonus: every wrong answer gets every bonus it can.
    gold_sql = _values_sql(gold_rows)
    gold = execute_for_scoring(db, gold_sql)
    group = []
    for rows in group_rows + [gold_rows, gold_rows]:  # the right answer, twice: a plurality candidate
        pred_sql = "SELEC broken" if rows is None else _values_sql(rows)
        group.append((score_sql(db, pred_sql, gold_sql, gold=gold, semantics=semantics), pred_sql))
    # Whether each answer came through submit_sql or was asked for by the environment.
    rewards = group_rewards(group, gold_sql, cfg, submitted=flags[: len(group)])
    right = [r for (s, _), r in zip(group, rewards) if s.verdict.correct(semantics)]
    wrong = [r for (s, _), r in zip(group, rewards) if not s.verdict.correct(semantics)]
    assert right, "the gold's own result must be judged right"
    if wrong:
        assert min(right) > max(wrong)
    # And by tier: every executable answer >= every parsable or invalid one.
    tiers = [(s.verdict.outcome, r) for (s, _), r in zip(group, rewards)]
    ran = [r for o, r in tiers if o in (Outcome.EQUIVALENT, Outcome.EXECUTABLE)]
    not_ran = [r for o, r in tiers if o in (Outcome.PARSABLE, Outcome.INVALID)]
    if ran and not_ran:
        assert min(ran) >= max(not_ran)


def test_the_rerun_failed_penalty_falls_on_wrong_answers_only_and_is_scaled_when_unsubmitted(db: Database) -> None:
    """``rerun_failed`` is taken from a wrong answer (the invalid tier included: it goes
    below 0) of an episode that sent a failed query again; a right answer never pays it;
    an answer the environment asked for pays it scaled like the rest of its reward."""
    cfg = RewardConfig(rerun_failed=1.0, unsubmitted=0.5)
    gold_sql = "SELECT name FROM person WHERE id IN (1, 2)"
    gold = execute_for_scoring(db, gold_sql)
    right = score_sql(db, gold_sql, gold_sql, gold=gold)
    invalid = score_sql(db, None, gold_sql, gold=gold)
    assert invalid.verdict.outcome.value == "invalid"
    assert reward(invalid, cfg, rerun_failed=True) == -1.0
    assert reward(invalid, cfg, rerun_failed=True, submitted=False) == -0.5
    assert reward(right, cfg, rerun_failed=True) == 3.0
    assert group_rewards([(invalid, None), (invalid, None)], gold_sql, cfg, rerun_failed=[True, False]) == [-1.0, 0.0]
    with pytest.raises(ValueError, match="rerun_failed has 1 flags for a group of 2"):
        group_rewards([(invalid, None), (invalid, None)], gold_sql, cfg, rerun_failed=[True])
    with pytest.raises(ConfigError, match="rerun_failed must be >= 0"):
        RewardConfig(rerun_failed=-1.0)
    assert REWARD_PRESETS["sqale-dense"].rerun_failed == REWARD_PRESETS["tiered"].rerun_failed == 0.0


def test_a_price_on_no_answer_puts_it_below_every_answer_that_runs(db: Database) -> None:
    """Run 9's reward: ``invalid`` below 0 (the tiers only have to fall, not stay >= 0).
    An episode that ends with nothing to answer, as it does at a limit (never submitted:
    scaled by ``unsubmitted``), then pays, and every answer that runs outranks it; with the
    default 0 it was worth what a wrong answer carrying a penalty is worth, or more."""
    cfg = RewardConfig(invalid=-1.0, unsubmitted=0.41, known_error=1.0, rerun_failed=1.0)
    gold_sql = "SELECT name FROM person WHERE id IN (1, 2)"
    gold = execute_for_scoring(db, gold_sql)
    none = score_sql(db, None, gold_sql, gold=gold)
    wrong_sql = "SELECT name FROM person WHERE id = 3"
    wrong = score_sql(db, wrong_sql, gold_sql, gold=gold)
    broken = score_sql(db, "SELECT nme FROM person", gold_sql, gold=gold)
    assert (none.verdict.outcome.value, wrong.verdict.outcome.value) == ("invalid", "executable")
    assert reward(none, cfg, submitted=False) == pytest.approx(-0.41)
    wrong_at_limit = reward(wrong, cfg, pred_sql=wrong_sql, gold_sql=gold_sql, submitted=False)
    assert wrong_at_limit > reward(none, cfg, submitted=False) and wrong_at_limit > 0
    # The order of the tiers still holds: an answer that runs >= one that parses >= none.
    assert reward(wrong, cfg, pred_sql=wrong_sql, gold_sql=gold_sql) >= reward(broken, cfg) >= reward(none, cfg)
    # Default: no answer is worth 0, above a resubmitted error (0.05 - 1.0).
    default = RewardConfig(known_error=1.0)
    assert reward(none, default) == 0.0 > reward(broken, default, known_error=True)
    with pytest.raises(ConfigError, match="executable >= parsable >= invalid"):
        RewardConfig(invalid=0.06)


def test_run_10s_reward_lets_a_test_cost_nothing(db: Database) -> None:
    """Run 10's reward (its config, as trained): a failing answer pays the same whether its
    failure was seen (run in an earlier round, or in the reply that submitted it) or not, so
    running a fix before submitting it can only gain (a right answer tested earns more).
    Under run 9's, a fix that was tested and failed paid 1.0 less than the same fix
    submitted blind, and its sampler stopped testing fixes."""
    from sqlscout.train.config import load_config

    root = Path(__file__).resolve().parents[1]
    new = load_config(root / "configs/grpo-cpu-qwen2.5-coder-0.5b-run10.yaml").reward.build()
    old = load_config(root / "configs/grpo-cpu-qwen2.5-coder-0.5b-run9.yaml").reward.build()
    gold_sql = "SELECT name FROM person WHERE id IN (1, 2)"
    gold = execute_for_scoring(db, gold_sql)
    broken = score_sql(db, "SELECT nme FROM person", gold_sql, gold=gold)
    right = score_sql(db, gold_sql, gold_sql, gold=gold)
    none = score_sql(db, None, gold_sql, gold=gold)

    def seen_vs_blind(cfg: RewardConfig) -> tuple[float, float, float]:
        return (reward(broken, cfg, known_error=True), reward(broken, cfg, unread_error=True, known_error=True),
                reward(broken, cfg))

    seen, unread, blind = seen_vs_blind(new)
    assert seen == unread == blind == pytest.approx(-0.2)
    assert reward(right, new, tested=True) > reward(right, new) > 0 > blind
    # Submitting a failing answer still beats giving up at a limit.
    assert blind > reward(none, new, submitted=False)
    seen, unread, blind = seen_vs_blind(old)
    assert blind - seen == pytest.approx(1.0) and blind - unread == pytest.approx(2.0)
