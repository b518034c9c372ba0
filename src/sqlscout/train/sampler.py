"""Where rollouts come from while training: the policy itself (hf backend), a vLLM
engine colocated on the same GPU whose weights are synced after every update, or, for a
LoRA policy loaded from a GGUF file, llama.cpp running that file with the policy's
adapters (``rollout.backend: llama-cpp``; the CPU path).

The hf backend samples with the very model being trained (no sync needed) — except
when FSDP shards the parameters over processes: then each process samples with a full
replica of the policy, refreshed from the sharded model after every update (a sampling
forward on the sharded model would need every process to run the same number of them).
vLLM is
imported only when chosen (``rollout.backend: vllm``, or ``auto`` on a GPU where it is
installed); it starts from the policy's initial weights saved under
``OUT/sampler-init`` and receives the current weights by ``load_weights`` after each
step — with LoRA, the adapters are merged for the copy and unmerged again.

llama.cpp samples from the quantised model the policy was dequantised from, plus the
policy's LoRA adapters written as a GGUF LoRA (:mod:`sqlscout.train.gguf_lora`) and
loaded with it; after every update the adapters are written again and llama.cpp is
restarted on them (a second or two for the 0.5B model). Its log-probabilities are taken
after the same top-k / top-p cut the trainer applies; the quantisation (and llama.cpp's
8-bit activations) is a small, real mismatch between sampler and policy, which is what
the truncated importance weight corrects.
"""

from __future__ import annotations

import contextlib
import importlib.util
from pathlib import Path
from typing import Any, Iterator

import torch
from accelerate import Accelerator
from accelerate.utils import DistributedType

from sqlscout.backends.base import Backend
from sqlscout.errors import ConfigError
from sqlscout.train.config import RolloutConfig

__all__ = ["Sampler", "choose_backend"]


def choose_backend(config: RolloutConfig) -> str:
    """``hf``, ``vllm`` or ``llama-cpp``: ``auto`` takes vLLM where it is installed and a GPU is present, else hf."""
    if config.backend != "auto":
        return config.backend
    has_vllm = importlib.util.find_spec("vllm") is not None
    return "vllm" if has_vllm and torch.cuda.is_available() else "hf"


class Sampler:
    """Owns the rollout backend and keeps its weights equal to the policy's.

    ``backend``, when given, is used as is (its weights are not the policy's: tests).
    """

    def __init__(self, config: RolloutConfig, model: torch.nn.Module, tokenizer: Any, accelerator: Accelerator, out: Path,
                 seed: int, backend: Backend | None = None, model_path: str | None = None) -> None:  # fmt: skip
        self.kind = "given" if backend is not None else choose_backend(config)
        self.accelerator = accelerator
        self.model = model  # as prepared by the accelerator
        self.backend: Backend
        self.replica: torch.nn.Module | None = None
        self._llama: _LlamaSampler | None = None
        _refuse_zero3(accelerator)
        if backend is not None:  # a fixed sampler (a scripted backend in tests): nothing to sync
            self.backend = backend
        elif self.kind == "hf" and _parameters_sharded(accelerator):
            self.replica = _replica_of(accelerator.unwrap_model(model), accelerator)
            self.sync()
            self.backend = _hf_backend(self.replica, tokenizer, accelerator, config, seed)
        elif self.kind == "hf":
            self.backend = _hf_backend(accelerator.unwrap_model(model), tokenizer, accelerator, config, seed)
        elif self.kind == "llama-cpp":
            self._llama = _LlamaSampler(accelerator.unwrap_model(model), model_path, config, out, seed, accelerator.process_index)
            self.backend = self._llama.backend
        else:
            self.backend = _vllm_backend(accelerator.unwrap_model(model), tokenizer, config, out, seed)

    def sync(self) -> None:
        """Push the policy's current weights to the sampler (a no-op when it samples with the policy itself)."""
        if self.replica is not None:
            _sync_replica(self.replica, self.model)
        elif self._llama is not None:
            self.backend = self._llama.restart()
        elif self.kind == "vllm":
            _sync_vllm(self.backend, self.accelerator.unwrap_model(self.model))

    def release(self) -> None:
        """Free what the sampler holds while the policy updates (llama.cpp's model and
        KV cache, about 1.5 GB for the 0.5B's 16 slots); :meth:`sync` starts it again."""
        if self._llama is not None:
            self._llama.backend.close()

    def close(self) -> None:
        self.backend.close()


def _hf_backend(model: torch.nn.Module, tokenizer: Any, accelerator: Accelerator, config: RolloutConfig, seed: int) -> Backend:
    from sqlscout.backends.hf import HFBackend, HFConfig

    class PolicyBackend(HFBackend):
        """Samples with the policy in the accelerator's precision (bf16 autocast on GPU)."""

        name = "hf"

        def generate(self, requests: Any) -> Any:
            with accelerator.autocast():
                return super().generate(requests)

    return PolicyBackend(model, tokenizer, HFConfig(max_batch=config.max_batch, seed=seed))


class _LlamaSampler:
    """llama.cpp on the policy's GGUF file with the policy's current LoRA adapters."""

    def __init__(self, model: Any, model_path: str | None, config: RolloutConfig, out: Path, seed: int, rank: int) -> None:
        if not (model_path and str(model_path).endswith(".gguf") and Path(model_path).expanduser().is_file()):
            raise ConfigError("rollout.backend llama-cpp samples from the policy's GGUF file: set model.name_or_path to a .gguf file")
        if not hasattr(model, "peft_config"):
            raise ConfigError("rollout.backend llama-cpp follows the policy through its LoRA adapters: set model.lora.enabled")
        from sqlscout.backends.llama_server import LlamaServerConfig
        from sqlscout.backends.threads import process_cores

        self.model, self.gguf = model, Path(model_path).expanduser()
        self.adapters = Path(out) / "sampler" / f"lora-rank{rank}.gguf"
        slots = max(1, min(config.max_batch, 16))
        self.server = LlamaServerConfig(
            n_ctx=slots * config.episode.token_budget, slots=slots, seed=seed, lora=self.adapters,
            n_threads=config.threads or process_cores(),
        )  # fmt: skip
        self.backend: Backend = self._start()

    def _start(self) -> Backend:
        from sqlscout.backends.llama_server import LlamaServerBackend
        from sqlscout.train.gguf_lora import export_lora_gguf

        export_lora_gguf(self.model, self.adapters)
        return LlamaServerBackend(self.gguf, self.server)

    def restart(self) -> Backend:
        """The adapters written again and llama.cpp started on them."""
        self.backend.close()
        self.backend = self._start()
        return self.backend


def _parameters_sharded(accelerator: Accelerator) -> bool:
    return accelerator.distributed_type is DistributedType.FSDP


def _refuse_zero3(accelerator: Accelerator) -> None:
    plugin = getattr(accelerator.state, "deepspeed_plugin", None)
    if plugin is not None and getattr(plugin, "zero_stage", 0) == 3:
        raise ConfigError(
            "DeepSpeed ZeRO-3 shards the parameters, which sampling needs whole: use ZeRO-2 "
            "(configs/accelerate/deepspeed-zero2.yaml) or FSDP (configs/accelerate/fsdp.yaml)"
        )


def _replica_of(model: torch.nn.Module, accelerator: Accelerator) -> torch.nn.Module:
    """An unsharded copy of the policy's architecture on this process's device, for sampling."""
    from transformers import AutoModelForCausalLM

    if hasattr(model, "peft_config"):
        raise ConfigError("LoRA with FSDP is not supported by the hf sampler; train LoRA with DDP or DeepSpeed ZeRO-2")
    dtype = torch.bfloat16 if accelerator.mixed_precision == "bf16" else torch.float32
    replica = AutoModelForCausalLM.from_config(model.config, dtype=dtype)
    return replica.to(accelerator.device).eval().requires_grad_(False)


def _sync_replica(replica: torch.nn.Module, model: torch.nn.Module) -> None:
    """Gather the sharded policy's full weights (a collective: every process calls it) into the replica."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    replica.load_state_dict(state)


def _vllm_backend(model: Any, tokenizer: Any, config: RolloutConfig, out: Path, seed: int) -> Backend:
    if importlib.util.find_spec("vllm") is None:
        raise ConfigError("rollout.backend is vllm but vLLM is not installed; pip install vllm or use backend: hf")
    try:
        from sqlscout.backends.vllm import VLLMBackend, VLLMConfig
    except ImportError:
        raise ConfigError("this sqlscout has no vLLM backend module; use rollout.backend: hf") from None
    init = Path(out) / "sampler-init"
    if not (init / "config.json").exists():
        with _merged(model) as plain:
            plain.save_pretrained(str(init))
        tokenizer.save_pretrained(str(init))
    vllm_config = VLLMConfig(
        gpu_memory_utilization=config.vllm_gpu_memory,
        max_model_len=config.episode.token_budget,
        seed=seed,
        enable_prefix_caching=True,
    )
    return VLLMBackend(str(init), vllm_config)


@contextlib.contextmanager
def _merged(model: Any) -> Iterator[Any]:
    """The plain transformers model with any LoRA adapters merged in (unmerged after)."""
    if hasattr(model, "merge_adapter"):
        model.merge_adapter()
        try:
            yield model.get_base_model()
        finally:
            model.unmerge_adapter()
    else:
        yield model


def _named_weights(model: Any) -> Iterator[tuple[str, Any]]:
    """(name, tensor) in the plain model's naming: peft's wrappers and adapter tensors removed."""
    for name, param in model.named_parameters():
        if "lora_" in name or "modules_to_save" in name:
            continue
        name = name.replace(".base_layer", "").replace("_checkpoint_wrapped_module.", "")
        yield name, param.data


def _sync_vllm(backend: Any, model: Any) -> None:
    """Load the policy's weights into the colocated engine and drop its now-stale prefix cache."""
    llm = backend.llm
    with _merged(model) as plain:
        weights = list(_named_weights(plain))
        engine_model = _engine_model(llm)
        if engine_model is not None:
            engine_model.load_weights(weights)
        else:  # engines whose workers live in other processes
            llm.collective_rpc(_load_weights_rpc, args=(weights,))
    llm.reset_prefix_cache()


def _engine_model(llm: Any) -> Any:
    """The in-process model of a colocated engine, where the engine exposes it."""
    try:
        return llm.llm_engine.model_executor.driver_worker.model_runner.model
    except AttributeError:
        return None


def _load_weights_rpc(worker: Any, weights: list[tuple[str, Any]]) -> None:
    worker.model_runner.model.load_weights(weights)
