"""The length curriculum: weights follow the schedule, strength 0 is uniform, draws resume exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sqlscout.train.config import CurriculumConfig
from sqlscout.train.curriculum import LengthCurriculum, ast_size, length_key

KEYS = [4.0, 8.0, 12.0, 30.0, 50.0, 6.0]


def test_beta_ramps_linearly_then_holds():
    cur = LengthCurriculum(KEYS, CurriculumConfig(strength=2.0, beta_start=-1.0, ramp_steps=30), seed=0)
    assert [cur.beta(t) for t in (0, 10, 15, 30, 31, 1000)] == pytest.approx([-1.0, 0.0, 0.5, 2.0, 2.0, 2.0])


def test_weights_are_exp_beta_z_normalised():
    cfg = CurriculumConfig(strength=1.5, beta_start=1.5, ramp_steps=0)
    cur = LengthCurriculum(KEYS, cfg, seed=0)
    keys = np.array(KEYS)
    z = (keys - keys.mean()) / keys.std()
    expected = np.exp(1.5 * z) / np.exp(1.5 * z).sum()
    assert cur.weights(0) == pytest.approx(expected)
    assert cur.weights(0).sum() == pytest.approx(1.0)
    # positive strength favours the long questions, monotonically in the key
    order = np.argsort(KEYS)
    assert np.all(np.diff(cur.weights(0)[order]) > 0)


def test_weights_follow_the_schedule_from_short_first_to_long_first():
    cur = LengthCurriculum(KEYS, CurriculumConfig(strength=1.0, beta_start=-1.0, ramp_steps=10), seed=0)
    longest, shortest = int(np.argmax(KEYS)), int(np.argmin(KEYS))
    early, middle, late = cur.weights(0), cur.weights(5), cur.weights(10)
    assert early[shortest] > early[longest]
    assert middle == pytest.approx(np.full(len(KEYS), 1 / len(KEYS)))  # beta = 0 halfway
    assert late[longest] > late[shortest]
    assert cur.weights(0)[longest] < cur.weights(3)[longest] < cur.weights(7)[longest] < cur.weights(10)[longest]


@pytest.mark.parametrize("beta_start", [0.0, -3.0, 2.0])
def test_strength_zero_is_uniform_whatever_beta_start(beta_start):
    cur = LengthCurriculum(KEYS, CurriculumConfig(strength=0.0, beta_start=beta_start, ramp_steps=10), seed=0)
    for step in (0, 5, 50):
        assert cur.beta(step) == 0.0
        assert cur.weights(step) == pytest.approx(np.full(len(KEYS), 1 / len(KEYS)))


def test_strong_curriculum_draws_long_questions_first():
    keys = list(range(1, 101))
    cur = LengthCurriculum(keys, CurriculumConfig(strength=3.0, beta_start=3.0), seed=1)
    first = [keys[i] for i in cur.draw(0, 10)]
    assert np.mean(first) > 75
    uniform = LengthCurriculum(keys, CurriculumConfig(), seed=1)
    means = [np.mean([keys[i] for i in uniform.draw(0, 10)]) for _ in range(5)]
    assert 30 < np.mean(means) < 70


def test_draws_are_distinct_and_cover_every_question_each_epoch():
    cur = LengthCurriculum(KEYS, CurriculumConfig(strength=2.0), seed=3)
    seen = []
    for step in range(6):  # 6 steps x 2 = 12 draws = two epochs of 6
        picked = cur.draw(step, 2)
        assert len(set(picked)) == 2
        seen += picked
    assert sorted(seen[:6]) == list(range(6)) and sorted(seen[6:]) == list(range(6))
    assert cur.epoch == 1


def test_epoch_boundary_inside_one_draw_keeps_the_step_distinct():
    cur = LengthCurriculum([1, 2, 3, 4, 5], CurriculumConfig(), seed=0)
    cur.draw(0, 4)
    picked = cur.draw(1, 3)  # one left in the epoch, two from the next
    assert len(set(picked)) == 3 and cur.epoch == 1


def test_state_dict_resumes_the_exact_sequence():
    cfg = CurriculumConfig(strength=1.0, beta_start=-1.0, ramp_steps=5)
    full = LengthCurriculum(KEYS, cfg, seed=7)
    expected = [full.draw(t, 4) for t in range(8)]
    first = LengthCurriculum(KEYS, cfg, seed=7)
    got = [first.draw(t, 4) for t in range(3)]
    state = first.state_dict()
    resumed = LengthCurriculum(KEYS, cfg, seed=999)  # the seed is overridden by the state
    resumed.load_state_dict(state)
    got += [resumed.draw(t, 4) for t in range(3, 8)]
    assert got == expected


def test_length_keys():
    assert ast_size("SELECT a FROM t") < ast_size("SELECT a FROM t WHERE b IN (SELECT c FROM u)")
    assert ast_size(")(") == 0  # unparsable: key 0, no exception
    assert length_key("SELECT a FROM t", "sql_tokens", lambda s: len(s.split())) == 4.0
    assert length_key(None, "ast_size") == 0.0
    assert length_key("SELECT 1", "ast_size") == float(ast_size("SELECT 1"))
    with pytest.raises(ValueError):
        length_key("SELECT 1", "sql_tokens")


def test_constant_keys_give_uniform_weights():
    cur = LengthCurriculum([5, 5, 5], CurriculumConfig(strength=4.0), seed=0)
    assert cur.weights(0) == pytest.approx([1 / 3] * 3)
    assert math.isclose(cur.mean_key([0, 1]), 5.0)
