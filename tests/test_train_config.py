"""Training configs: validated on load, errors name the field, round trip; the trainer's
docstring examples run; importing sqlscout.train loads no heavy library."""

from __future__ import annotations

import doctest
import importlib
import json
import os
import subprocess
import sys

import pytest

from sqlscout.backends.base import SamplingParams
from sqlscout.env.config import EpisodeConfig
from sqlscout.errors import ConfigError
from sqlscout.train.config import TrainConfig, config_from_dict, config_to_dict, load_config

from conftest import REPO

TRAIN_MODULES = [
    "sqlscout.train",
    "sqlscout.train.advantages",
    "sqlscout.train.config",
    "sqlscout.train.curriculum",
    "sqlscout.train.kl",
    "sqlscout.train.loss",
    "sqlscout.train.mask",
    "sqlscout.train.optim",
    "sqlscout.train.update",
]


@pytest.mark.parametrize("module_name", TRAIN_MODULES)
def test_docstring_examples_run(module_name):
    results = doctest.testmod(importlib.import_module(module_name), optionflags=doctest.ELLIPSIS)
    assert results.failed == 0


BAD = [
    ({"loss": {"clip_low": 1.5}}, "loss.clip_low: input should be less than 1, got 1.5"),
    ({"loss": {"aggregation": "mean"}}, "loss.aggregation: input should be 'constant', 'token-mean' or 'sequence-mean', got 'mean'"),
    ({"loss": {"is_cap": 0.5}}, "loss.is_cap: input should be greater than or equal to 1, got 0.5"),
    ({"rollout": {"group_size": 1}}, "rollout.group_size: input should be greater than or equal to 2, got 1"),
    ({"rollout": {"sampling": {"temperature": 0}}}, "rollout: sampling.temperature must be > 0"),
    ({"rollout": {"sampling": {"top_p": 1.5}}}, "rollout.sampling: top_p must be in (0, 1], got 1.5"),
    ({"rollout": {"sampling": {"seed": 3}}}, "rollout: sampling.seed must be null"),
    ({"rollout": {"group_size": 4, "greedy_per_group": 4}}, "rollout: greedy_per_group (4) must be below group_size (4)"),
    ({"rollout": {"greedy_per_group": -1}}, "rollout.greedy_per_group: input should be greater than or equal to 0"),
    # The trainer uses the plain protocol: the help (fresh_start...) is no episode field.
    ({"rollout": {"episode": {"fresh_start": True}}}, "rollout.episode.fresh_start: unknown field"),
    ({"rollout": {"episode": {"max_rounds": 0}}}, "rollout.episode: max_rounds must be >= 1, got 0"),
    ({"rollout": {"episode": {"schema": "some"}}}, "rollout.episode.schema: input should be 'withheld' or 'full'"),
    ({"rollout": {"episode": {"rounds": 3}}}, "rollout.episode.rounds: unknown field"),
    ({"rollout": {"max_rounds": 3}}, "rollout.max_rounds: unknown field"),  # the old flat shape
    ({"rollout": {"backend": "tgi"}}, "rollout.backend: input should be 'auto', 'hf', 'vllm' or 'llama-cpp', got 'tgi'"),
    ({"kl": {"mode": "sometimes"}}, "kl.mode: input should be 'adaptive', 'fixed' or 'off'"),
    ({"kl": {"target": 0}}, "kl.target: input should be greater than 0"),
    ({"optim": {"betas": [0.9, 1.5]}}, "optim: betas must be two numbers in [0, 1)"),
    ({"optim": {"lr": "fast"}}, "optim.lr: input should be a valid number, unable to parse string as a number, got 'fast'"),
    ({"optim": {"micro_batch_tokens": 1.5}}, "optim.micro_batch_tokens: input should be a valid integer, got 1.5"),
    ({"model": {"gradient_checkpointing": "yes"}}, "model.gradient_checkpointing: input should be a valid boolean, got 'yes'"),
    ({"model": {"name_or_path": "x", "random_init": {"model_type": "qwen3"}}}, "model: set exactly one of"),
    ({"model": {"name_or_path": None, "random_init": {"model_type": "qwen3"}}}, "model: random_init has no tokenizer"),
    ({"model": {"lora": {"r": 0}}}, "model.lora.r: input should be greater than or equal to 1, got 0"),
    ({"curriculum": {"key": "chars"}}, "curriculum.key: input should be 'sql_tokens' or 'ast_size', got 'chars'"),
    ({"eval": {"data": {"benchmark": "wikisql"}}}, "eval.data.benchmark: input should be"),
    ({"reward": {"overrides": {"equivalent": 0.5}}}, "must exceed the best wrong answer's reward"),
    ({"steps": 0}, "steps: input should be greater than or equal to 1, got 0"),
    ({"step": 3}, "step: unknown field"),
    ({"loss": 3}, "loss: expected a mapping, got 3"),
    ({"rollout": {"episode": 3}}, "rollout.episode: expected a mapping, got 3"),
]


@pytest.mark.parametrize("data,message", BAD)
def test_bad_values_are_refused_naming_the_field(data, message):
    with pytest.raises(ConfigError) as exc:
        config_from_dict(data)
    assert message in str(exc.value)


def test_defaults_are_the_recipe_and_round_trip():
    cfg = TrainConfig()
    assert (cfg.rollout.group_size, cfg.rollout.questions_per_step) == (8, 18)
    assert (cfg.loss.clip_low, cfg.loss.clip_high, cfg.loss.normalizer, cfg.loss.aggregation) == (0.2, 0.28, 1024.0, "constant")
    assert (cfg.kl.mode, cfg.kl.target) == ("adaptive", 0.005)
    assert (cfg.optim.lr, cfg.optim.warmup_ratio, cfg.optim.schedule, cfg.optim.mini_batches) == (1e-5, 0.05, "cosine", 1)
    assert cfg.rollout.episode.token_budget == 24_576 and cfg.model.gradient_checkpointing
    assert cfg.rollout.episode == EpisodeConfig() and cfg.rollout.sampling == SamplingParams()  # defined once, not copied
    assert cfg.model.tokenizer is None  # the model's own
    assert config_from_dict(json.loads(json.dumps(config_to_dict(cfg)))) == cfg


def test_yaml_file_overrides_and_errors(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("steps: 5\nloss:\n  aggregation: token-mean\n")
    cfg = load_config(path, steps=2, out=str(tmp_path / "o"))
    assert cfg.steps == 2 and cfg.out == str(tmp_path / "o") and cfg.loss.aggregation == "token-mean"
    path.write_text("steps: [1\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path)
    path.write_text("rollout:\n  episode:\n    max_rounds: zero\n")
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    assert str(exc.value) == f"{path}: rollout.episode.max_rounds: input should be a valid integer, unable to parse string as an integer, got 'zero'"
    assert "\n" not in str(exc.value)
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "missing.yaml")


def test_every_shipped_config_loads():
    for path in (REPO / "configs").glob("*.yaml"):
        load_config(path)


def test_importing_the_trainer_loads_no_heavy_library():
    code = (
        "import json, sys\nimport sqlscout.train, sqlscout.train.config, sqlscout.cli.train\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    loaded = set(json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                           check=True, timeout=60).stdout))  # fmt: skip
    assert not loaded & {"torch", "transformers", "accelerate", "peft", "vllm"}


def test_a_config_that_is_not_utf8_is_a_one_line_error(tmp_path):
    from sqlscout.errors import ConfigError
    from sqlscout.train.config import load_config

    path = tmp_path / "latin1.yaml"
    path.write_bytes("model: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        load_config(path)
