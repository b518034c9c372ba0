"""The policy, its tokenizer and the frozen reference policy.

With LoRA the reference is the same model with its adapters switched off (no second
copy in memory); with a full fine-tune it is a frozen copy of the starting weights,
kept only when the KL term is on.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass
from typing import Any, Callable

import torch

from sqlscout.errors import ConfigError
from sqlscout.train.config import ModelConfig

__all__ = ["PolicyModel", "build_policy", "enable_checkpointing", "load_tokenizer", "resolve_precision"]


def resolve_precision(precision: str) -> str:
    """``bf16`` or ``fp32``: ``auto`` is bf16 on a GPU that has it, fp32 elsewhere."""
    if precision != "auto":
        return precision
    return "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "fp32"


def load_tokenizer(config: ModelConfig) -> Any:
    """The policy's tokenizer: ``qwen3.5`` (offline, real), a directory, or the model's own."""
    if config.tokenizer == "qwen3.5":
        from sqlscout.backends.offline_tokenizers import qwen3_5_tokenizer

        return qwen3_5_tokenizer()
    from transformers import AutoTokenizer

    source = config.tokenizer or config.name_or_path
    try:
        return AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"model.tokenizer: cannot load a tokenizer from {source!r} ({exc})") from None


def _build_model(config: ModelConfig, seed: int) -> torch.nn.Module:
    from transformers import AutoConfig, AutoModelForCausalLM

    if config.random_init is not None:
        spec = dict(config.random_init)
        model_type = spec.pop("model_type")
        try:
            hf_config = AutoConfig.for_model(model_type, **spec)
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"model.random_init: {exc}") from None
        if config.attn_implementation:
            hf_config._attn_implementation = config.attn_implementation
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return AutoModelForCausalLM.from_config(hf_config, dtype=torch.float32)
    kwargs: dict[str, Any] = {"dtype": torch.float32}
    if config.attn_implementation:
        kwargs["attn_implementation"] = config.attn_implementation
    try:
        model = AutoModelForCausalLM.from_pretrained(config.name_or_path, **kwargs)
    except OSError as exc:
        raise ConfigError(f"model.name_or_path: cannot load {config.name_or_path!r} ({exc})") from None
    # A model dequantised from GGUF keeps a quantization_config that blocks training and saving.
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
        model.hf_quantizer = None
        model.is_quantized = False
    return model


@dataclass
class PolicyModel:
    """The trainable model (maybe a peft model) and how to run the frozen reference."""

    model: torch.nn.Module
    tokenizer: Any
    reference_model: torch.nn.Module | None  # a frozen copy (full fine-tune with KL)
    lora: bool

    @property
    def pad_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return int(pad if pad is not None else self.tokenizer.eos_token_id)

    def reference_fn(self, temperature: float, wrapped: torch.nn.Module | None = None) -> Callable[..., torch.Tensor]:
        """A function (ids, attention, trained) -> the reference's log-probabilities.

        ``wrapped`` is the model as the accelerator prepared it (forward passes go
        through it, so that distributed wrappers see them).
        """
        from sqlscout.train.logprobs import token_logprobs

        def run(ids: torch.Tensor, attention: torch.Tensor, trained: torch.Tensor) -> torch.Tensor:
            if self.reference_model is not None:
                with torch.autocast(ids.device.type, enabled=False):  # its weights are already in their dtype
                    logp, _ = token_logprobs(self.reference_model, ids, attention, trained, temperature=temperature)
                return logp
            with self.adapters_disabled():
                logp, _ = token_logprobs(wrapped or self.model, ids, attention, trained, temperature=temperature)
            return logp

        return run

    @contextlib.contextmanager
    def adapters_disabled(self) -> Any:
        model = self.model
        if not self.lora:
            raise RuntimeError("only a LoRA policy can disable its adapters")
        with model.disable_adapter():
            yield


def enable_checkpointing(model: torch.nn.Module) -> None:
    """Recompute activations in the backward pass (non-reentrant: works with frozen inputs,
    LoRA and no_grad references). transformers renamed the method in 5.2x."""
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def build_policy(config: ModelConfig, *, kl_enabled: bool, seed: int) -> PolicyModel:
    """Load or build the policy, add adapters if asked, and set up its reference."""
    tokenizer = load_tokenizer(config)
    model = _build_model(config, seed)
    if getattr(model.config, "vocab_size", len(tokenizer)) < len(tokenizer):
        raise ConfigError(
            f"the model's vocabulary ({model.config.vocab_size}) is smaller than the tokenizer's ({len(tokenizer)})"
        )
    model.config.use_cache = False  # training; generation turns it back on per call
    reference = None
    if config.lora.enabled:
        from peft import LoraConfig as PeftLoraConfig
        from peft import get_peft_model

        targets = config.lora.target_modules
        peft_config = PeftLoraConfig(
            r=config.lora.r,
            lora_alpha=config.lora.alpha,
            lora_dropout=config.lora.dropout,
            target_modules="all-linear" if targets == ("all-linear",) else list(targets),
            task_type="CAUSAL_LM",
        )
        model = get_peft_model(model, peft_config)
    elif kl_enabled:
        reference = copy.deepcopy(model).eval()
        for p in reference.parameters():
            p.requires_grad_(False)
    if config.gradient_checkpointing:
        enable_checkpointing(model)
    return PolicyModel(model=model, tokenizer=tokenizer, reference_model=reference, lora=config.lora.enabled)
