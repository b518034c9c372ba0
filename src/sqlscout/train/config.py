"""The trainer's configuration: one frozen dataclass per concern, validated where it is
defined, loaded from YAML with unknown keys refused and errors that name the field.

Every default is the paper's recipe (SPEC §8) except where a field says otherwise, so
``TrainConfig()`` *is* the recipe minus the model and data; ``sqlscout train
--print-config`` shows all of it.

>>> cfg = config_from_dict({"steps": 3, "loss": {"clip_high": 0.3}})
>>> cfg.steps, cfg.loss.clip_low, cfg.loss.clip_high, cfg.rollout.group_size
(3, 0.2, 0.3, 8)
>>> config_from_dict({"loss": {"clip_hi": 0.3}})
Traceback (most recent call last):
...
sqlscout.errors.ConfigError: loss.clip_hi: unknown key; expected one of: advantage_std, aggregation, clip_high, clip_low, is_cap, normalizer, temperature
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Union

from sqlscout.backends.base import SamplingParams
from sqlscout.env.config import EpisodeConfig
from sqlscout.errors import ConfigError

__all__ = [
    "CheckpointConfig",
    "CurriculumConfig",
    "DataConfig",
    "EvalConfig",
    "KLConfig",
    "LoraConfig",
    "LossConfig",
    "ModelConfig",
    "OptimConfig",
    "RewardSection",
    "RolloutConfig",
    "TelemetryConfig",
    "TrainConfig",
    "config_from_dict",
    "config_to_dict",
    "load_config",
]


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


def _one_of(name: str, value: str, allowed: tuple[str, ...]) -> None:
    _check(value in allowed, f"{name} must be one of {', '.join(allowed)}; got {value!r}")


@dataclass(frozen=True)
class LoraConfig:
    """Low-rank adapters (peft). Off = full fine-tune.

    Attributes:
        enabled: train adapters instead of every weight; the frozen reference policy is
            then the same model with adapters disabled (no second copy in memory).
        r: adapter rank (>= 1).
        alpha: scaling numerator (lora_alpha).
        dropout: adapter dropout in [0, 1).
        target_modules: module names to adapt; ``all-linear`` adapts every linear layer.
    """

    enabled: bool = False
    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: tuple[str, ...] = ("all-linear",)

    def __post_init__(self) -> None:
        _check(self.r >= 1, f"r must be >= 1, got {self.r}")
        _check(0 <= self.dropout < 1, f"dropout must be in [0, 1), got {self.dropout}")
        _check(bool(self.target_modules), "target_modules must name at least one module")


@dataclass(frozen=True)
class ModelConfig:
    """The policy to train.

    Attributes:
        name_or_path: pretrained weights: a local directory (or a hub id already cached).
        random_init: instead of weights, a transformers config as a mapping (with
            ``model_type``, e.g. ``qwen3_5_text``) built with random weights — for smoke
            tests and throughput measurements.
        tokenizer: ``qwen3.5`` (the real Qwen3.5 tokenizer, offline) or a directory;
            None takes the tokenizer beside ``name_or_path``.
        precision: ``auto`` (bf16 where the hardware has it, else fp32), ``bf16`` or ``fp32``.
        gradient_checkpointing: recompute activations in the backward pass to save memory.
        attn_implementation: passed to transformers (None: its default).
        lora: adapters or full fine-tune.
    """

    name_or_path: str | None = None
    random_init: dict[str, Any] | None = None
    tokenizer: str | None = "qwen3.5"
    precision: str = "auto"
    gradient_checkpointing: bool = True
    attn_implementation: str | None = None
    lora: LoraConfig = field(default_factory=LoraConfig)

    def __post_init__(self) -> None:
        _check(
            (self.name_or_path is None) != (self.random_init is None),
            "set exactly one of name_or_path (pretrained weights) and random_init (a config to build randomly)",
        )
        if self.random_init is not None:
            _check("model_type" in self.random_init, "random_init needs a model_type, e.g. qwen3_5_text")
        _one_of("precision", self.precision, ("auto", "bf16", "fp32"))


@dataclass(frozen=True)
class DataConfig:
    """Where training (or evaluation) questions come from: any of the evaluator's loaders.

    Attributes:
        benchmark: ``sqale``, ``bird``, ``spider``, ``spider-dk`` or ``jsonl``.
        path: the benchmark's file or folder (SQaLe: a local parquet folder; null: the hub).
        split: e.g. ``train``, ``dev``, ``test`` (null: the loader's default).
        difficulties: keep only these difficulties (empty: all).
        phrasings: SQaLe phrasing styles to keep (empty: all).
        db_ids: keep only questions on these databases (empty: all).
        limit: at most this many questions after filtering (None: all).
        require_gold_rows: drop questions whose gold SQL fails or times out when loaded
            (a reward needs a gold result); costs one execution per question.
        evidence: show BIRD-style evidence notes when the benchmark has them.
        db_root: where the databases are when not in the benchmark's own layout.
        cache_dir: where SQaLe's databases are materialised (required for SQaLe).
    """

    benchmark: str = "sqale"
    path: str | None = None
    split: str | None = "train"
    difficulties: tuple[str, ...] = ()
    phrasings: tuple[str, ...] = ()
    db_ids: tuple[str, ...] = ()
    limit: int | None = None
    require_gold_rows: bool = True
    evidence: bool = True
    db_root: str | None = None
    cache_dir: str | None = None

    def __post_init__(self) -> None:
        _one_of("benchmark", self.benchmark, ("sqale", "bird", "spider", "spider-dk", "jsonl"))
        _check(self.limit is None or self.limit >= 1, f"limit must be >= 1 or null, got {self.limit}")


@dataclass(frozen=True)
class EvalConfig:
    """Periodic evaluation on held-out questions, through the evaluator's scoring.

    Attributes:
        every: evaluate every this many steps (0: never; the last step always evaluates
            when > 0).
        held_out: questions taken out of the training pool (by the seed) when ``data`` is None.
        data: a separate held-out split instead of ``held_out``.
        questions: at most this many questions per evaluation.
        temperature: 0 for greedy.
    """

    every: int = 0
    held_out: int = 0
    data: DataConfig | None = None
    questions: int = 100
    temperature: float = 0.0

    def __post_init__(self) -> None:
        _check(self.every >= 0, f"every must be >= 0, got {self.every}")
        _check(self.held_out >= 0, f"held_out must be >= 0, got {self.held_out}")
        _check(self.questions >= 1, f"questions must be >= 1, got {self.questions}")
        _check(self.temperature >= 0, f"temperature must be >= 0, got {self.temperature}")


@dataclass(frozen=True)
class CurriculumConfig:
    """The length curriculum (SPEC §8): draw weight ``exp(beta(t) * z)``.

    ``z`` is the question's standardised length key; ``beta`` moves linearly from
    ``beta_start`` to ``strength`` over ``ramp_steps`` and stays there. ``strength: 0``
    turns the curriculum off (uniform draws, whatever ``beta_start`` says).

    Attributes:
        key: ``sql_tokens`` (gold SQL length in the policy's tokens) or ``ast_size``
            (sqlglot AST node count).
        strength: the final beta; > 0 favours long questions, < 0 short ones.
        beta_start: beta at step 0 (negative: short questions first).
        ramp_steps: steps to go from ``beta_start`` to ``strength`` (0: at once).
    """

    key: str = "sql_tokens"
    strength: float = 0.0
    beta_start: float = 0.0
    ramp_steps: int = 0

    def __post_init__(self) -> None:
        _one_of("key", self.key, ("sql_tokens", "ast_size"))
        _check(self.ramp_steps >= 0, f"ramp_steps must be >= 0, got {self.ramp_steps}")


@dataclass(frozen=True)
class RolloutConfig:
    """How episodes are sampled.

    Attributes:
        backend: ``auto`` (vLLM colocated when installed and a GPU is present, else hf),
            ``hf`` or ``vllm``.
        group_size: episodes per question (the GRPO group, >= 2).
        questions_per_step: questions drawn per step.
        temperature / top_p / top_k: sampling (the seed card's 0.6 / 0.95 / 20).
        max_rounds / max_failed_queries / token_budget / max_turn_tokens / schema:
            the episode's limits (SPEC §4).
        max_batch: most model turns generated in one batch by the runner.
        tool_workers: threads running tool calls.
        equal_groups: ``keep`` (they contribute nothing) or ``resample`` (drop them and
            draw fresh questions, up to ``max_resample_rounds`` times per step).
        max_resample_rounds: extra draws per step when resampling.
        vllm_gpu_memory: share of GPU memory vLLM may take when colocated.
    """

    backend: str = "auto"
    group_size: int = 8
    questions_per_step: int = 18
    # The sampling and episode defaults are the backends' and the episode's own (SPEC §4).
    temperature: float = SamplingParams.temperature
    top_p: float = SamplingParams.top_p
    top_k: int = SamplingParams.top_k
    max_rounds: int = EpisodeConfig.max_rounds
    max_failed_queries: int = EpisodeConfig.max_failed_queries
    token_budget: int = EpisodeConfig.token_budget
    max_turn_tokens: int | None = EpisodeConfig.max_turn_tokens
    schema: str = EpisodeConfig.schema.value
    max_batch: int = 256
    tool_workers: int = 8
    equal_groups: str = "keep"
    max_resample_rounds: int = 2
    vllm_gpu_memory: float = 0.3

    def __post_init__(self) -> None:
        _one_of("backend", self.backend, ("auto", "hf", "vllm"))
        _check(self.group_size >= 2, f"group_size must be >= 2 (advantages compare within a group), got {self.group_size}")
        _check(self.questions_per_step >= 1, f"questions_per_step must be >= 1, got {self.questions_per_step}")
        _check(self.temperature > 0, f"temperature must be > 0 to sample a group, got {self.temperature}")
        _check(0 < self.top_p <= 1, f"top_p must be in (0, 1], got {self.top_p}")
        _one_of("schema", self.schema, ("withheld", "full"))
        _one_of("equal_groups", self.equal_groups, ("keep", "resample"))
        _check(self.max_resample_rounds >= 0, f"max_resample_rounds must be >= 0, got {self.max_resample_rounds}")
        _check(self.max_batch >= 1, f"max_batch must be >= 1, got {self.max_batch}")
        _check(self.tool_workers >= 1, f"tool_workers must be >= 1, got {self.tool_workers}")
        _check(0 < self.vllm_gpu_memory < 1, f"vllm_gpu_memory must be in (0, 1), got {self.vllm_gpu_memory}")

    def episode_config(self) -> EpisodeConfig:
        return EpisodeConfig(
            max_rounds=self.max_rounds,
            max_failed_queries=self.max_failed_queries,
            token_budget=self.token_budget,
            max_turn_tokens=self.max_turn_tokens,
            schema=self.schema,
        )


@dataclass(frozen=True)
class RewardSection:
    """The reward: a preset of :mod:`sqlscout.scoring` plus overrides of its fields.

    Attributes:
        preset: ``sqale-dense`` (default) or ``tiered``.
        overrides: e.g. ``{equivalent: 2.0}``; checked by ``RewardConfig`` itself.
    """

    preset: str = "sqale-dense"
    overrides: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.build()

    def build(self) -> Any:
        from sqlscout.scoring import REWARD_PRESETS, RewardConfig

        _one_of("preset", self.preset, tuple(REWARD_PRESETS))
        names = {f.name for f in dataclasses.fields(RewardConfig)}
        for key in self.overrides:
            _check(key in names, f"overrides.{key}: unknown reward field; expected one of: {', '.join(sorted(names))}")
        return dataclasses.replace(REWARD_PRESETS[self.preset], **self.overrides)


@dataclass(frozen=True)
class LossConfig:
    """The clipped surrogate (see docs/training.md for the formulas).

    Attributes:
        clip_low / clip_high: the ratio is clipped to [1 - clip_low, 1 + clip_high]
            (DAPO's asymmetric 0.2 / 0.28).
        is_cap: cap of the truncated importance weight min(pi_old / pi_sampler, cap)
            that corrects for sampler/trainer mismatch; null turns the correction off.
        aggregation: ``constant`` (sum over tokens / normalizer / episodes), ``token-mean``
            (mean over all trained tokens of the batch) or ``sequence-mean`` (mean over
            each episode's tokens, then over episodes).
        normalizer: the constant of ``constant`` aggregation (1024).
        advantage_std: divide advantages by the group's standard deviation.
        temperature: the temperature the trainer's log-probabilities are taken at (null:
            the sampling temperature, so that ratios compare like with like).
    """

    clip_low: float = 0.2
    clip_high: float = 0.28
    is_cap: float | None = 2.0
    aggregation: str = "constant"
    normalizer: float = 1024.0
    advantage_std: bool = False
    temperature: float | None = None

    def __post_init__(self) -> None:
        _check(0 < self.clip_low < 1, f"clip_low must be in (0, 1), got {self.clip_low}")
        _check(self.clip_high > 0, f"clip_high must be > 0, got {self.clip_high}")
        _check(self.is_cap is None or self.is_cap >= 1, f"is_cap must be >= 1 or null, got {self.is_cap}")
        _one_of("aggregation", self.aggregation, ("constant", "token-mean", "sequence-mean"))
        _check(self.normalizer > 0, f"normalizer must be > 0, got {self.normalizer}")
        _check(self.temperature is None or self.temperature > 0, f"temperature must be > 0, got {self.temperature}")


@dataclass(frozen=True)
class KLConfig:
    """KL to the frozen starting policy (k3 estimator).

    Attributes:
        mode: ``adaptive`` (coefficient adapted to hold ``target``), ``fixed`` or ``off``.
        coef: the (initial) coefficient.
        target: the KL per token the adaptive controller holds (0.005).
        rate: proportional gain: coef *= 1 + rate * clip(kl / target - 1, -1, 1) each step.
        min_coef / max_coef: bounds of the adaptive coefficient.
    """

    mode: str = "adaptive"
    coef: float = 0.01
    target: float = 0.005
    rate: float = 0.1
    min_coef: float = 1e-5
    max_coef: float = 10.0

    def __post_init__(self) -> None:
        _one_of("mode", self.mode, ("adaptive", "fixed", "off"))
        _check(self.coef >= 0, f"coef must be >= 0, got {self.coef}")
        _check(self.target > 0, f"target must be > 0, got {self.target}")
        _check(0 < self.rate < 1, f"rate must be in (0, 1), got {self.rate}")
        _check(0 < self.min_coef <= self.max_coef, "need 0 < min_coef <= max_coef")


@dataclass(frozen=True)
class OptimConfig:
    """AdamW with a cosine schedule and linear warmup, one pass over each batch.

    Attributes:
        lr: peak learning rate.
        weight_decay / betas / eps: AdamW's.
        warmup_ratio: share of ``steps`` spent warming up linearly from 0 (5 %).
        schedule: ``cosine`` (down to ``min_lr_ratio`` × lr) or ``constant`` (after warmup).
        min_lr_ratio: floor of the cosine, as a share of ``lr``.
        max_grad_norm: gradient clipping (null: none).
        micro_batch_tokens: padded tokens per forward/backward; episodes are sorted by
            length and packed into micro-batches of at most this many (padded) tokens,
            gradients accumulated over them — the knob that makes a step fit in memory.
        mini_batches: optimizer updates per rollout batch (1: the recipe; > 1 makes the
            later updates off-policy, which is what the clip range guards against).
    """

    lr: float = 1e-5
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    warmup_ratio: float = 0.05
    schedule: str = "cosine"
    min_lr_ratio: float = 0.0
    max_grad_norm: float | None = 1.0
    micro_batch_tokens: int = 32_768
    mini_batches: int = 1

    def __post_init__(self) -> None:
        _check(self.lr > 0, f"lr must be > 0, got {self.lr}")
        _check(0 <= self.warmup_ratio < 1, f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        _one_of("schedule", self.schedule, ("cosine", "constant"))
        _check(0 <= self.min_lr_ratio <= 1, f"min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")
        _check(len(self.betas) == 2 and all(0 <= b < 1 for b in self.betas), "betas must be two numbers in [0, 1)")
        _check(self.max_grad_norm is None or self.max_grad_norm > 0, "max_grad_norm must be > 0 or null")
        _check(self.micro_batch_tokens >= 1, f"micro_batch_tokens must be >= 1, got {self.micro_batch_tokens}")
        _check(self.mini_batches >= 1, f"mini_batches must be >= 1, got {self.mini_batches}")


@dataclass(frozen=True)
class CheckpointConfig:
    """Checkpoints for exact resume.

    Attributes:
        every: save every this many steps (0: only at the end).
        keep: how many recent checkpoints to keep (older ones are deleted).
    """

    every: int = 50
    keep: int = 3

    def __post_init__(self) -> None:
        _check(self.every >= 0, f"every must be >= 0, got {self.every}")
        _check(self.keep >= 1, f"keep must be >= 1, got {self.keep}")


@dataclass(frozen=True)
class TelemetryConfig:
    """Where per-step metrics go (JSONL and CSV always).

    Attributes:
        tensorboard: also write TensorBoard event files (needs the ``tensorboard`` package).
        wandb: ``auto`` (when installed and logged in), ``on`` or ``off``.
        wandb_project: the W&B project name.
        progress: show a progress bar with the key numbers.
        save_episodes: also write every episode's trace to ``episodes.jsonl``.
    """

    tensorboard: bool = True
    wandb: str = "off"
    wandb_project: str = "sqlscout"
    progress: bool = True
    save_episodes: bool = True

    def __post_init__(self) -> None:
        _one_of("wandb", self.wandb, ("auto", "on", "off"))


@dataclass(frozen=True)
class TrainConfig:
    """Everything a training run needs; written to ``OUT/config.yaml`` on start.

    Attributes:
        seed: seeds Python, NumPy, torch, the curriculum and the sampler.
        steps: optimizer steps (the paper trained about 1,450–1,800).
        out: the run directory (telemetry, checkpoints, config).
    """

    seed: int = 0
    steps: int = 1600
    out: str = "runs/train"
    model: ModelConfig = field(default_factory=lambda: ModelConfig(name_or_path="Qwen/Qwen3.5-2B"))
    data: DataConfig = field(default_factory=DataConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    reward: RewardSection = field(default_factory=RewardSection)
    loss: LossConfig = field(default_factory=LossConfig)
    kl: KLConfig = field(default_factory=KLConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    telemetry: TelemetryConfig = field(default_factory=TelemetryConfig)

    def __post_init__(self) -> None:
        _check(self.steps >= 1, f"steps must be >= 1, got {self.steps}")

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)


# -- loading -------------------------------------------------------------------


def load_config(path: str | Path, **overrides: Any) -> TrainConfig:
    """Read a YAML file into a validated :class:`TrainConfig` (top-level overrides applied)."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections")
    data.update({k: v for k, v in overrides.items() if v is not None})
    return config_from_dict(data)


def config_from_dict(data: Mapping[str, Any]) -> TrainConfig:
    return _build(TrainConfig, data, "")


def config_to_dict(cfg: Any) -> dict[str, Any]:
    """Plain data (tuples as lists), fit for YAML/JSON; round-trips through config_from_dict."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        out[f.name] = _plain(getattr(cfg, f.name))
    return out


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return config_to_dict(value)
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _build(cls: type, data: Any, path: str) -> Any:
    where = path.rstrip(".") or "config"
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in names:
            raise ConfigError(f"{path}{key}: unknown key; expected one of: {', '.join(sorted(names))}")
        kwargs[key] = _coerce(hints[key], value, f"{path}{key}")
    try:
        return cls(**kwargs)
    except ConfigError as exc:
        message = str(exc)
        raise ConfigError(message if not path or message.startswith(path) else f"{path}{message}") from None


def _coerce(hint: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _coerce(options[0], value, path)
        errors = []
        for option in options:
            try:
                return _coerce(option, value, path)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0])
    if value is None:
        raise ConfigError(f"{path}: may not be null")
    if dataclasses.is_dataclass(hint):
        return _build(hint, value, path + ".")
    if origin is tuple:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{path}: expected a list, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(args[0], v, f"{path}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise ConfigError(f"{path}: expected {len(args)} values, got {len(value)}")
        return tuple(_coerce(a, v, f"{path}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{path}: expected a mapping, got {value!r}")
        return dict(value)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: expected true or false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}: expected an integer, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{path}: expected a number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{path}: expected a string, got {value!r}")
        return value
    return value
