"""The policy, its tokenizer and the frozen reference policy.

With LoRA the reference is the same model with its adapters switched off (no second
copy in memory); with a full fine-tune it is a frozen copy of the starting weights,
kept only when the KL term is on.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from sqlscout.backends.hf import drop_quantization_config
from sqlscout.errors import ConfigError
from sqlscout.train.config import ModelConfig
from sqlscout.train.memory import enable_checkpointing

__all__ = ["PolicyModel", "build_policy", "check_tokenizer", "enable_checkpointing", "load_tokenizer", "resolve_precision"]


def resolve_precision(precision: str, cpu_flags: str | None = None) -> str:
    """``bf16`` or ``fp32``: ``auto`` is bf16 on a GPU that has it, or on a CPU with bf16
    arithmetic in hardware (``avx512_bf16`` or AMX; ``cpu_flags``: /proc/cpuinfo's text,
    read when None), fp32 elsewhere (bf16 emulated on other CPUs is slower than fp32).

    >>> resolve_precision("auto", cpu_flags="flags : fpu avx2 avx512f"), resolve_precision("auto", cpu_flags="flags : avx512_bf16")
    ('fp32', 'bf16')
    """
    if precision != "auto":
        return precision
    if torch.cuda.is_available():
        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    if cpu_flags is None:
        try:
            cpu_flags = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            cpu_flags = ""
    flags = set(cpu_flags.split())
    return "bf16" if flags & {"avx512_bf16", "amx_bf16"} else "fp32"


def load_tokenizer(config: ModelConfig) -> Any:
    """The policy's tokenizer: the model's own (``tokenizer: null``), a directory or hub
    id, or ``qwen3.5`` (the real one rebuilt offline, for randomly initialised models)."""
    if config.tokenizer == "qwen3.5":
        from sqlscout.backends.offline_tokenizers import qwen3_5_tokenizer

        return qwen3_5_tokenizer()
    from transformers import AutoTokenizer

    source = config.tokenizer or config.name_or_path
    where, kwargs = _pretrained_source(source) if config.tokenizer is None else (source, {})
    try:
        return AutoTokenizer.from_pretrained(where, **kwargs)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"model.tokenizer: cannot load a tokenizer from {source!r} ({exc})") from None


def _pretrained_source(name_or_path: str | None) -> tuple[str | None, dict[str, Any]]:
    """(what to pass to ``from_pretrained``, extra keyword arguments): a ``.gguf`` file is
    read from its folder with ``gguf_file`` (transformers dequantises it on load)."""
    if name_or_path is not None and name_or_path.lower().endswith(".gguf"):
        path = Path(name_or_path).expanduser()
        if not path.is_file():
            raise ConfigError(f"model.name_or_path: GGUF file not found: {path}")
        return str(path.parent), {"gguf_file": path.name}
    return name_or_path, {}


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
    where, kwargs = _pretrained_source(config.name_or_path)
    kwargs["dtype"] = torch.float32
    if config.attn_implementation:
        kwargs["attn_implementation"] = config.attn_implementation
    try:
        model = AutoModelForCausalLM.from_pretrained(where, **kwargs)
    except OSError as exc:
        raise ConfigError(f"model.name_or_path: cannot load {config.name_or_path!r} ({exc})") from None
    drop_quantization_config(model)  # a GGUF is dequantised on load; its config must not block training
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
        """A function (ids, attention, trained, prefix=0) -> the reference's log-probabilities.

        ``wrapped`` is the model as the accelerator prepared it (forward passes go
        through it, so that distributed wrappers see them).
        """
        from sqlscout.train.logprobs import SharedPrefix, token_logprobs

        # The prompt of a group recurs in each of its micro-batches: its reference cache is
        # computed once and kept until another prompt comes (the reference never changes).
        last: dict[str, Any] = {}

        def logp(model: torch.nn.Module, ids: torch.Tensor, attention: torch.Tensor, trained: torch.Tensor, prefix: int) -> torch.Tensor:
            shared = None
            if prefix:
                key = tuple(ids[0, :prefix].tolist())
                if last.get("key") != key:
                    last.clear()
                    with torch.no_grad():
                        last.update(key=key, shared=SharedPrefix(model, ids, attention, prefix))
                shared = last["shared"]
            return token_logprobs(model, ids, attention, trained, temperature=temperature, shared=shared).logp

        def run(ids: torch.Tensor, attention: torch.Tensor, trained: torch.Tensor, prefix: int = 0) -> torch.Tensor:
            if self.reference_model is not None:
                with torch.autocast(ids.device.type, enabled=False):  # its weights are already in their dtype
                    return logp(self.reference_model, ids, attention, trained, prefix)
            with self.adapters_disabled():
                return logp(wrapped or self.model, ids, attention, trained, prefix)

        return run

    @contextlib.contextmanager
    def adapters_disabled(self) -> Any:
        model = self.model
        if not self.lora:
            raise RuntimeError("only a LoRA policy can disable its adapters")
        with model.disable_adapter():
            yield


def check_tokenizer(model: torch.nn.Module, tokenizer: Any) -> None:
    """Refuse a tokenizer that is not the model's: its vocabulary must fit the model's,
    the episode's turn glue (opening prompt, end of turn, tool-result turn) must
    round-trip through its ids, and the end-of-turn token must be one the model ends
    sequences with.

    Raises:
        ConfigError: one line saying what does not match and what to do.
    """
    from sqlscout.backends.hf import HFConfig
    from sqlscout.backends.hf import _chat_format as chat_format  # the glue the hf sampler will use

    fix = "leave model.tokenizer null to use the model's own tokenizer and chat template"
    vocab = getattr(model.config, "vocab_size", None)
    if vocab is not None and vocab < len(tokenizer):
        raise ConfigError(f"the model's vocabulary ({vocab}) is smaller than the tokenizer's ({len(tokenizer)}); {fix}")
    chat = chat_format(tokenizer, HFConfig().thinking)
    opening = chat.render([{"role": "system", "content": "You write SQL."}, {"role": "user", "content": "How many rows?"}])
    for text in (opening, "SELECT COUNT(*) FROM t" + chat.end_of_turn + chat.next_turn("Result: 1 row")):
        ids = tokenizer.encode(text, add_special_tokens=False)
        if tokenizer.decode(ids, skip_special_tokens=False) != text:
            raise ConfigError(f"the tokenizer does not round-trip the episode's turn glue ({text[-40:]!r}); {fix}")
    end = tokenizer.encode(chat.end_of_turn, add_special_tokens=False)
    if len(end) != 1:
        raise ConfigError(f"the end of turn {chat.end_of_turn!r} is not one token in this tokenizer; {fix}")
    eos = _eos_ids(model)
    if eos and end[0] not in eos:
        raise ConfigError(
            f"the tokenizer ends a turn with {chat.end_of_turn!r} (id {end[0]}) but the model ends sequences with ids "
            f"{sorted(eos)}: the tokenizer is not this model's; {fix}"
        )


def _eos_ids(model: torch.nn.Module) -> set[int]:
    """The end-of-sequence ids the model declares (generation config, else model config)."""
    generation = getattr(model, "generation_config", None)
    eos = getattr(generation, "eos_token_id", None) if generation is not None else None
    if eos is None:
        eos = getattr(model.config, "eos_token_id", None)
    if eos is None:
        return set()
    return {int(eos)} if isinstance(eos, int) else {int(e) for e in eos}


def build_policy(config: ModelConfig, *, kl_enabled: bool, seed: int, init_adapters: bool = True) -> PolicyModel:
    """Load or build the policy, add adapters if asked (from ``lora.init`` when
    ``init_adapters``), and set up its reference."""
    tokenizer = load_tokenizer(config)
    model = _build_model(config, seed)
    check_tokenizer(model, tokenizer)
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
        if config.lora.init is not None and init_adapters:
            from sqlscout.train.gguf_lora import load_lora_init

            load_lora_init(model, config.lora.init)
    elif kl_enabled:
        reference = copy.deepcopy(model).eval()
        for p in reference.parameters():
            p.requires_grad_(False)
    if config.gradient_checkpointing:
        enable_checkpointing(model)
    return PolicyModel(model=model, tokenizer=tokenizer, reference_model=reference, lora=config.lora.enabled)
