"""LoRA adapters of a policy loaded from a GGUF file, written as a GGUF LoRA adapter.

llama.cpp applies such an adapter on top of the quantised model it was trained from
(``LlamaServerConfig.lora``), so a policy trained with LoRA on the dequantised weights
can sample its rollouts and answer its evaluations through llama.cpp at the quantised
model's speed. The adapter file holds, per adapted linear layer, the two factors as peft
keeps them: ``lora_a`` of shape (r, in) and ``lora_b`` of shape (out, r), under
llama.cpp's tensor names (``blk.3.attn_q.weight.lora_a``), with ``adapter.lora.alpha``
so that llama.cpp scales their product by alpha / r as peft does.

Only the decoder architectures whose llama.cpp tensor names map one to one onto
transformers' (no permuted or fused projections) are written: Qwen2 (the
Qwen2.5-Coder presets) and Qwen3; anything else is a one-line error.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Sequence

from sqlscout.errors import ConfigError

__all__ = ["checkpoint_lora_gguf", "export_lora_gguf", "gguf_architecture", "lora_tensor_name", "write_lora_gguf"]

# transformers' module name inside a decoder layer -> llama.cpp's tensor name
_LAYER_TENSORS = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
_ARCHITECTURES = {"qwen2": "qwen2", "qwen3": "qwen3"}  # transformers model_type -> llama.cpp architecture
_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.(.+)$")


def lora_tensor_name(module: str) -> str:
    """llama.cpp's base tensor name for a transformers linear module.

    >>> lora_tensor_name("base_model.model.model.layers.3.self_attn.q_proj")
    'blk.3.attn_q.weight'
    >>> lora_tensor_name("model.layers.0.mlp.down_proj")
    'blk.0.ffn_down.weight'
    """
    match = _LAYER.search(module)
    if match is None or match.group(2) not in _LAYER_TENSORS:
        raise ConfigError(f"LoRA on {module!r} cannot be written for llama.cpp: adapt the decoder layers' linear projections only")
    return f"blk.{match.group(1)}.{_LAYER_TENSORS[match.group(2)]}.weight"


def export_lora_gguf(model: Any, path: Path, adapter: str = "default") -> Path:
    """Write ``model``'s (a peft model) LoRA adapter ``adapter`` to ``path`` as a GGUF LoRA."""
    config = model.peft_config[adapter]
    model_type = getattr(model.get_base_model().config, "model_type", None)
    pairs = [
        (name, module.lora_A[adapter].weight, module.lora_B[adapter].weight)
        for name, module in model.named_modules()
        if adapter in (getattr(module, "lora_A", None) or {}) and getattr(module, "lora_B", None) is not None
    ]
    return write_lora_gguf(path, model_type, _alpha(config.lora_alpha, config.r, config.use_rslora), pairs)


def checkpoint_lora_gguf(adapters: Path, path: Path, model_type: str, *, dtype: str = "f32") -> Path:
    """Write the LoRA adapter a checkpoint saved (peft's ``adapter_model.safetensors`` and
    ``adapter_config.json`` in ``adapters``) to ``path`` as a GGUF LoRA (``dtype`` ``f32``
    or ``f16``, half the size, for shipping), without loading the model it adapts."""
    import json

    from safetensors.torch import load_file

    config = json.loads((Path(adapters) / "adapter_config.json").read_text(encoding="utf-8"))
    state = load_file(str(Path(adapters) / "adapter_model.safetensors"))
    pairs = [
        (key[: -len(".lora_A.weight")], weight, state[key.replace(".lora_A.", ".lora_B.")])
        for key, weight in sorted(state.items())
        if key.endswith(".lora_A.weight")
    ]
    return write_lora_gguf(path, model_type, _alpha(config["lora_alpha"], config["r"], config.get("use_rslora", False)), pairs, dtype=dtype)


def gguf_architecture(path: Path) -> str:
    """The ``general.architecture`` a GGUF file declares (``qwen2`` for the Qwen2.5 presets)."""
    import gguf

    field = gguf.GGUFReader(str(path)).fields["general.architecture"]
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def _alpha(alpha: float, r: int, rslora: bool) -> float:
    """The alpha llama.cpp needs: it scales by alpha / r; rsLoRA's alpha / sqrt(r) is alpha * sqrt(r) / r."""
    return float(alpha) * (r**0.5 if rslora else 1.0)


def write_lora_gguf(path: Path, model_type: str | None, alpha: float, pairs: Sequence[tuple[str, Any, Any]], *,
                    dtype: str = "f32") -> Path:  # fmt: skip
    """Write (module name, A of shape (r, in), B of shape (out, r)) factors to ``path``
    as ``dtype`` (``f32`` or ``f16``).

    The file is written beside ``path`` first and moved into place, so a reader never
    sees half of it. Returns ``path``.
    """
    import gguf
    import numpy as np

    if model_type not in _ARCHITECTURES:
        raise ConfigError(f"GGUF LoRA export supports {sorted(_ARCHITECTURES)} models, not {model_type!r}")
    if not pairs:
        raise ConfigError("the policy has no LoRA adapters to write; enable model.lora")
    if dtype not in ("f32", "f16"):
        raise ConfigError(f"a GGUF LoRA is written as f32 or f16, not {dtype!r}")
    numpy_dtype = np.float16 if dtype == "f16" else np.float32
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    writer = gguf.GGUFWriter(str(partial), _ARCHITECTURES[model_type])
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", alpha)
    for name, a, b in pairs:
        base = lora_tensor_name(name)
        for suffix, weight in (("lora_a", a), ("lora_b", b)):
            array = weight.detach().float().cpu().numpy() if hasattr(weight, "detach") else np.asarray(weight)
            writer.add_tensor(f"{base}.{suffix}", np.ascontiguousarray(array, dtype=numpy_dtype))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    partial.replace(path)
    return path
