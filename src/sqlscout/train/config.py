"""The trainer's configuration: one frozen pydantic model per concern, validated where it
is defined, loaded from YAML with unknown keys refused and errors that name the field
(and the file).

Every default is the paper's recipe (SPEC §8) except where a field says otherwise, so
``TrainConfig()`` *is* the recipe minus the model and data; ``sqlscout train
--print-config`` shows all of it. The episode's limits and the sampling settings are not
re-declared here: ``rollout.episode`` *is* an :class:`~sqlscout.env.config.EpisodeConfig`
and ``rollout.sampling`` a :class:`~sqlscout.backends.base.SamplingParams`, validated by
their own ``__post_init__``.

>>> cfg = config_from_dict({"steps": 3, "loss": {"clip_high": 0.3}, "rollout": {"episode": {"max_rounds": 2}}})
>>> cfg.steps, cfg.loss.clip_low, cfg.loss.clip_high, cfg.rollout.group_size, cfg.rollout.episode.max_rounds
(3, 0.2, 0.3, 8, 2)
>>> config_from_dict({"loss": {"clip_hi": 0.3}})
Traceback (most recent call last):
...
sqlscout.errors.ConfigError: loss.clip_hi: unknown field
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError, model_validator

from sqlscout.backends.base import SamplingParams
from sqlscout.env.config import EpisodeConfig
from sqlscout.errors import ConfigError
from sqlscout.runner import RunnerConfig

__all__ = [
    "CheckpointConfig",
    "CurriculumConfig",
    "DataConfig",
    "HeldOutEvalConfig",
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

# Integers, booleans and strings keep their YAML type (``yes`` is not a boolean, ``1.5``
# not an integer); a number may be written as an integer or a string (YAML reads ``1e-4``
# as one); lists stand for tuples.
Number = float


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def replace(self, **changes: Any) -> Any:
        """A copy with ``changes``, validated again (:class:`ConfigError` names the field)."""
        fields = {name: getattr(self, name) for name in type(self).model_fields}
        try:
            return type(self).model_validate({**fields, **changes})
        except ValidationError as exc:
            raise ConfigError("; ".join(_describe(error) for error in exc.errors())) from None


class LoraConfig(_Section):
    """Low-rank adapters (peft). Off = full fine-tune.

    Attributes:
        enabled: train adapters instead of every weight; the frozen reference policy is
            then the same model with adapters disabled (no second copy in memory).
        r: adapter rank (>= 1).
        alpha: scaling numerator (lora_alpha).
        dropout: adapter dropout in [0, 1).
        target_modules: module names to adapt; ``all-linear`` adapts every linear layer.
        init: start the adapters from trained ones instead of zero: a GGUF LoRA (a shipped
            preset's ``.gguf``) or a peft adapter folder (a checkpoint's ``model/``). Its
            rank and alpha must be ``r`` and ``alpha``. Only a fresh run reads it (a
            resumed run takes its checkpoint's weights).
    """

    enabled: StrictBool = False
    r: StrictInt = Field(16, ge=1)
    alpha: StrictInt = 32
    dropout: Number = Field(0.0, ge=0, lt=1)
    target_modules: tuple[StrictStr, ...] = Field(("all-linear",), min_length=1)
    init: StrictStr | None = None


class ModelConfig(_Section):
    """The policy to train.

    Attributes:
        name_or_path: pretrained weights: a local directory, a ``.gguf`` file (dequantised
            to full precision on load; its tokenizer and chat template come with it), or
            a hub id already cached.
        random_init: instead of weights, a transformers config as a mapping (with
            ``model_type``, e.g. ``qwen3_5_text``) built with random weights — for smoke
            tests and throughput measurements.
        tokenizer: None (the default) takes the model's own tokenizer and chat template,
            from beside ``name_or_path``; a directory or hub id takes that one (checked
            against the model); ``qwen3.5`` is the real Qwen3.5 tokenizer rebuilt offline,
            for randomly initialised Qwen3.5 models (``random_init`` needs a tokenizer).
        precision: ``auto`` (bf16 where the hardware has it, else fp32), ``bf16`` or ``fp32``.
        gradient_checkpointing: recompute activations in the backward pass to save memory.
        attn_implementation: passed to transformers (None: its default).
        lora: adapters or full fine-tune.
    """

    name_or_path: StrictStr | None = None
    random_init: dict[str, Any] | None = None
    tokenizer: StrictStr | None = None
    precision: Literal["auto", "bf16", "fp32"] = "auto"
    gradient_checkpointing: StrictBool = True
    attn_implementation: StrictStr | None = None
    lora: LoraConfig = LoraConfig()

    @model_validator(mode="after")
    def _one_source(self) -> ModelConfig:
        _require(
            (self.name_or_path is None) != (self.random_init is None),
            "set exactly one of name_or_path (pretrained weights) and random_init (a config to build randomly)",
        )
        if self.random_init is not None:
            _require("model_type" in self.random_init, "random_init needs a model_type, e.g. qwen3_5_text")
            _require(self.tokenizer is not None, "random_init has no tokenizer of its own: set tokenizer (e.g. qwen3.5)")
        return self


class DataConfig(_Section):
    """Where training (or evaluation) questions come from: any of the evaluator's loaders.

    Attributes:
        benchmark: ``sqale``, ``bird``, ``spider``, ``spider-dk`` or ``jsonl``.
        path: the benchmark's file or folder (SQaLe: a local parquet folder; null: the hub).
        split: e.g. ``train``, ``dev``, ``test`` (null: the loader's default); for Spider
            also ``dev-tune`` and ``dev-report`` (:mod:`sqlscout.data.splits`).
        difficulties: keep only these difficulties (empty: all).
        phrasings: SQaLe phrasing styles to keep (empty: all).
        db_ids: keep only questions on these databases (empty: all).
        limit: at most this many questions after filtering (None: all).
        select: which ``limit`` questions: the ``first`` ones, or a ``random`` sample
            drawn with ``select_seed`` (kept in file order), as ``sqlscout eval --select``.
        select_seed: the seed of a ``random`` selection.
        require_gold_rows: drop questions whose gold SQL fails or times out when loaded
            (a reward needs a gold result); costs one execution per question.
        evidence: show BIRD-style evidence notes when the benchmark has them.
        db_root: where the databases are when not in the benchmark's own layout.
        cache_dir: where SQaLe's databases are materialised (required for SQaLe).
        also: further sources (each a section like this one, with its own filters)
            whose questions are appended to this one's, in order: one pool from several
            benchmarks.
    """

    benchmark: Literal["sqale", "bird", "spider", "spider-dk", "jsonl"] = "sqale"
    path: StrictStr | None = None
    split: StrictStr | None = "train"
    difficulties: tuple[StrictStr, ...] = ()
    phrasings: tuple[StrictStr, ...] = ()
    db_ids: tuple[StrictStr, ...] = ()
    limit: StrictInt | None = Field(None, ge=1)
    select: Literal["first", "random"] = "first"
    select_seed: StrictInt = 0
    require_gold_rows: StrictBool = True
    evidence: StrictBool = True
    db_root: StrictStr | None = None
    cache_dir: StrictStr | None = None
    also: tuple[DataConfig, ...] = ()


class HeldOutEvalConfig(_Section):
    """Periodic evaluation on held-out questions, through the evaluator's scoring.

    Attributes:
        every: evaluate every this many steps (0: never; the last step always evaluates
            when > 0).
        at_start: evaluate the starting weights too (step 0); off where that point is known.
        held_out: questions taken out of the training pool (by the seed) when ``data`` is None.
        data: a separate held-out split instead of ``held_out``.
        questions: at most this many questions per evaluation.
        temperature: 0 for greedy.
    """

    every: StrictInt = Field(0, ge=0)
    at_start: StrictBool = True
    held_out: StrictInt = Field(0, ge=0)
    data: DataConfig | None = None
    questions: StrictInt = Field(100, ge=1)
    temperature: Number = Field(0.0, ge=0)


class WarmupConfig(_Section):
    """Imitation before GRPO: the run's first ``steps`` steps train on demonstrations
    (:mod:`sqlscout.train.demos`) instead of sampled groups, every one with advantage 1
    through the same update, mask, KL term and checkpoints; then GRPO goes on.

    Attributes:
        demos: a demonstrations file (``python -m sqlscout.train.demos`` writes one); None: no warm-up.
        steps: how many steps imitate; the demonstrations are split across them, a
            question's demonstrations in the same step (they share its prompt).
    """

    demos: StrictStr | None = None
    steps: StrictInt = Field(0, ge=0)

    @model_validator(mode="after")
    def _both(self) -> WarmupConfig:
        _require(bool(self.steps) == bool(self.demos), "warmup needs both demos (a file) and steps (> 0), or neither")
        return self


class CurriculumConfig(_Section):
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

    key: Literal["sql_tokens", "ast_size"] = "sql_tokens"
    strength: Number = 0.0
    beta_start: Number = 0.0
    ramp_steps: StrictInt = Field(0, ge=0)


class RolloutConfig(_Section):
    """How episodes are sampled: the runner's settings, plus what makes groups.

    Attributes:
        backend: ``auto`` (vLLM colocated when installed and a GPU is present, else hf),
            ``hf``, ``vllm``, or ``llama-cpp`` (a LoRA policy loaded from a ``.gguf`` file:
            llama.cpp samples from that file with the policy's adapters, far faster than
            the dequantised model on a CPU; :mod:`sqlscout.train.sampler`).
        group_size: episodes per question (the GRPO group, >= 2).
        questions_per_step: questions drawn per step (over all processes).
        episode: the episode's limits and schema regime (SPEC §4): ``max_rounds``,
            ``max_failed_queries``, ``token_budget``, ``max_turn_tokens``,
            ``final_turn_reserve``, ``schema``.
        sampling: ``temperature`` / ``top_p`` / ``top_k`` (the seed card's 0.6 / 0.95 /
            20) and extra ``stop`` strings. Each turn's seed derives from the run's
            ``seed`` and its length from the episode's budget, so ``seed`` stays null and
            ``max_tokens`` is not used.
        max_batch: most model turns generated in one batch by the runner.
        tool_workers: threads running tool calls.
        threads: CPU threads llama.cpp samples with (``backend: llama-cpp``); null: this
            process's share of the machine's cores (its CPU affinity divided among the
            training processes on it). Never the cores that look idle when llama.cpp
            starts, as ``eval`` takes them: right after an update the trainer's own
            threads are still spinning, and a start measured then took one core of two.
        equal_groups: ``keep`` (they contribute nothing) or ``resample`` (drop them and
            draw fresh questions, up to ``max_resample_rounds`` times per step).
        max_resample_rounds: extra draws per step when resampling.
        vllm_gpu_memory: share of GPU memory vLLM may take when colocated.
        greedy_per_group: episodes of each group decoded greedily (temperature 0, as the
            held-out evaluation and the shipped preset decode), the rest sampled. Sampled
            at temperature 1, run 4 never reran a failing query (0 of 64 episodes, steps
            17-18) while its greedy held-out episodes did in 8-10 of 50: what evaluation
            plays was never in a group to be paid for.
        states: a file of failure states (:mod:`sqlscout.train.states`): the policy's own
            greedy replies up to a ``run_query`` that failed, on pool questions.
        state_groups: of ``questions_per_step``, the groups a step starts from a drawn
            state (every episode replays its replies, untrained, and samples on from the
            error); the rest are drawn by the curriculum as before.
    """

    backend: Literal["auto", "hf", "vllm", "llama-cpp"] = "auto"
    group_size: StrictInt = Field(8, ge=2, description="advantages compare within a group")
    questions_per_step: StrictInt = Field(18, ge=1)
    episode: EpisodeConfig = EpisodeConfig()
    sampling: SamplingParams = SamplingParams()
    max_batch: StrictInt = Field(256, ge=1)
    tool_workers: StrictInt = Field(8, ge=1)
    threads: StrictInt | None = Field(None, ge=1)
    equal_groups: Literal["keep", "resample"] = "keep"
    max_resample_rounds: StrictInt = Field(2, ge=0)
    vllm_gpu_memory: Number = Field(0.3, gt=0, lt=1)
    greedy_per_group: StrictInt = Field(0, ge=0)
    states: str | None = None
    state_groups: StrictInt = Field(0, ge=0)

    @model_validator(mode="after")
    def _samples_a_group(self) -> RolloutConfig:
        _require(self.state_groups <= self.questions_per_step,
                 f"state_groups ({self.state_groups}) must not exceed questions_per_step ({self.questions_per_step})")  # fmt: skip
        _require(not self.state_groups or self.states, "state_groups needs rollout.states: a file of python -m sqlscout.train.states")
        _require(self.greedy_per_group < self.group_size,
                 f"greedy_per_group ({self.greedy_per_group}) must be below group_size ({self.group_size}): "
                 "greedy episodes of one question are all alike, so a group needs sampled ones")  # fmt: skip
        _require(self.sampling.temperature > 0, f"sampling.temperature must be > 0 to sample a group, got {self.sampling.temperature}")
        _require(self.sampling.logprobs, "sampling.logprobs must be true: the update needs the sampler's log-probabilities")
        _require(self.sampling.seed is None, "sampling.seed must be null: turn seeds derive from the run's seed")
        return self

    def runner_config(self, seed: int) -> RunnerConfig:
        """The runner's settings for a batch sampled with ``seed``."""
        return RunnerConfig(
            episode=self.episode, sampling=self.sampling, max_batch=self.max_batch, tool_workers=self.tool_workers, seed=seed,
            greedy_samples=self.greedy_per_group,
        )


class RewardSection(_Section):
    """The reward: a preset of :mod:`sqlscout.scoring` plus overrides of its fields.

    Attributes:
        preset: ``sqale-dense`` (default) or ``tiered``.
        overrides: e.g. ``{equivalent: 2.0}``; checked by ``RewardConfig`` itself.
    """

    preset: StrictStr = "sqale-dense"
    overrides: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _builds(self) -> RewardSection:
        self.build()
        return self

    def build(self) -> Any:
        from sqlscout.scoring import REWARD_PRESETS, RewardConfig

        _require(self.preset in REWARD_PRESETS, f"preset must be one of {', '.join(REWARD_PRESETS)}; got {self.preset!r}")
        names = {f.name for f in dataclasses.fields(RewardConfig)}
        for key in self.overrides:
            _require(key in names, f"overrides.{key}: unknown reward field; expected one of: {', '.join(sorted(names))}")
        return dataclasses.replace(REWARD_PRESETS[self.preset], **self.overrides)


class LossConfig(_Section):
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

    clip_low: Number = Field(0.2, gt=0, lt=1)
    clip_high: Number = Field(0.28, gt=0)
    is_cap: Number | None = Field(2.0, ge=1)
    aggregation: Literal["constant", "token-mean", "sequence-mean"] = "constant"
    normalizer: Number = Field(1024.0, gt=0)
    advantage_std: StrictBool = False
    temperature: Number | None = Field(None, gt=0)


class KLConfig(_Section):
    """KL to the frozen starting policy (k3 estimator).

    Attributes:
        mode: ``adaptive`` (coefficient adapted to hold ``target``), ``fixed`` or ``off``.
        coef: the (initial) coefficient.
        target: the KL per token the adaptive controller holds (0.005).
        rate: proportional gain: coef *= 1 + rate * clip(kl / target - 1, -1, 1) each step.
        min_coef / max_coef: bounds of the adaptive coefficient.
    """

    mode: Literal["adaptive", "fixed", "off"] = "adaptive"
    coef: Number = Field(0.01, ge=0)
    target: Number = Field(0.005, gt=0)
    rate: Number = Field(0.1, gt=0, lt=1)
    min_coef: Number = Field(1e-5, gt=0)
    max_coef: Number = 10.0

    @model_validator(mode="after")
    def _bounds(self) -> KLConfig:
        _require(self.min_coef <= self.max_coef, "need 0 < min_coef <= max_coef")
        return self


class OptimConfig(_Section):
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
        share_prefix: a group's episodes share their prompt (system, schema, question):
            compute it once per micro-batch and continue every episode from its
            key/value cache, gradients flowing through it (the same loss and gradient,
            to float rounding). Used where the model allows it (attention layers only,
            gradient checkpointing off); elsewhere every episode is computed whole.
        heap_mmap_threshold_mb: allocations of at least this many MiB get their own mapping,
            given back when freed (glibc's ``M_MMAP_THRESHOLD``; null: glibc's moving
            default). Keeps the update's peak from growing step after step within one
            process (heap fragmentation), at the cost of mapping each block anew.
    """

    lr: Number = Field(1e-5, gt=0)
    weight_decay: Number = 0.0
    betas: tuple[Number, Number] = (0.9, 0.999)
    eps: Number = 1e-8
    warmup_ratio: Number = Field(0.05, ge=0, lt=1)
    schedule: Literal["cosine", "constant"] = "cosine"
    min_lr_ratio: Number = Field(0.0, ge=0, le=1)
    max_grad_norm: Number | None = Field(1.0, gt=0)
    micro_batch_tokens: StrictInt = Field(32_768, ge=1)
    mini_batches: StrictInt = Field(1, ge=1)
    share_prefix: bool = True
    heap_mmap_threshold_mb: Number | None = Field(None, gt=0, le=32)

    @model_validator(mode="after")
    def _betas(self) -> OptimConfig:
        _require(all(0 <= b < 1 for b in self.betas), "betas must be two numbers in [0, 1)")
        return self


class CheckpointConfig(_Section):
    """Checkpoints for exact resume.

    Attributes:
        every: save every this many steps (0: only at the end).
        keep: how many recent checkpoints to keep (older ones are deleted).
        keep_evaluated: of an older checkpoint whose step was evaluated on the held-out
            questions, keep the weights (``model/``, the adapters under LoRA), so the best
            evaluated step can be shipped; the optimizer state goes.
    """

    every: StrictInt = Field(50, ge=0)
    keep: StrictInt = Field(3, ge=1)
    keep_evaluated: StrictBool = True


class TelemetryConfig(_Section):
    """Where per-step metrics go (JSONL and CSV always).

    Attributes:
        tensorboard: also write TensorBoard event files (needs the ``tensorboard`` package).
        wandb: ``auto`` (when installed and logged in), ``on`` or ``off``.
        wandb_project: the W&B project name.
        progress: show a progress bar with the key numbers.
        save_episodes: also write every episode's trace to ``episodes.jsonl``.
    """

    tensorboard: StrictBool = True
    wandb: Literal["auto", "on", "off"] = "off"
    wandb_project: StrictStr = "sqlscout"
    progress: StrictBool = True
    save_episodes: StrictBool = True


class TrainConfig(_Section):
    """Everything a training run needs; written to ``OUT/config.yaml`` on start.

    Attributes:
        seed: seeds Python, NumPy, torch, the curriculum and the sampler.
        steps: optimizer steps (the paper trained about 1,450–1,800).
        out: the run directory (telemetry, checkpoints, config).
    """

    seed: StrictInt = 0
    steps: StrictInt = Field(1600, ge=1)
    out: StrictStr = "runs/train"
    model: ModelConfig = ModelConfig(name_or_path="Qwen/Qwen3.5-2B")
    data: DataConfig = DataConfig()
    eval: HeldOutEvalConfig = HeldOutEvalConfig()
    curriculum: CurriculumConfig = CurriculumConfig()
    warmup: WarmupConfig = WarmupConfig()
    rollout: RolloutConfig = RolloutConfig()
    reward: RewardSection = RewardSection()
    loss: LossConfig = LossConfig()
    kl: KLConfig = KLConfig()
    optim: OptimConfig = OptimConfig()
    checkpoint: CheckpointConfig = CheckpointConfig()
    telemetry: TelemetryConfig = TelemetryConfig()


# -- loading -------------------------------------------------------------------


def load_config(path: str | Path, **overrides: Any) -> TrainConfig:
    """Read a YAML file into a validated :class:`TrainConfig` (top-level overrides applied);
    a bad value raises :class:`ConfigError` naming the file and the field."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); save the config as UTF-8 YAML") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to be a training config") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections")
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return config_from_dict(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def config_from_dict(data: Mapping[str, Any]) -> TrainConfig:
    """A validated :class:`TrainConfig` from plain data; :class:`ConfigError` names the field."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"config: expected a mapping of sections, got {type(data).__name__}")
    try:
        return TrainConfig.model_validate(dict(data))
    except ValidationError as exc:
        raise ConfigError("; ".join(_describe(error) for error in exc.errors())) from None


def config_to_dict(cfg: BaseModel) -> dict[str, Any]:
    """Plain data (tuples as lists, enums as values), fit for YAML/JSON; round-trips
    through :func:`config_from_dict`."""
    return cfg.model_dump(mode="json")


def _describe(error: Any) -> str:
    """One pydantic error as ``field.path: what is wrong``."""
    where = ".".join(str(part) for part in error["loc"]) or "config"
    kind, message = error["type"], error["msg"]
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        return f"{where}: unknown field"
    if kind in ("model_type", "dataclass_type", "dataclass_args_type"):
        return f"{where}: expected a mapping, got {error['input']!r}"
    if kind == "value_error":
        message = message.removeprefix("Value error, ")
    elif "input" in error:
        message = f"{message[0].lower()}{message[1:]}, got {error['input']!r}"
    return f"{where}: {message}"
