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
from typing import Any, Callable, Sequence

from sqlscout.errors import ConfigError

__all__ = ["average_lora", "averaged_checkpoints_gguf", "checkpoint_lora_gguf", "export_lora_gguf", "gguf_architecture", "load_lora_init", "lora_tensor_name", "read_lora_gguf",
           "write_lora_gguf"]

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
    alpha, pairs = _read_peft_adapters(Path(adapters))
    return write_lora_gguf(path, model_type, alpha, pairs, dtype=dtype)


def averaged_checkpoints_gguf(folders: Sequence[Path], path: Path, model_type: str, *, dtype: str = "f32") -> tuple[Path, float]:
    """Write the average of several checkpoints' LoRA adapters (:func:`average_lora`) to
    ``path`` as :func:`checkpoint_lora_gguf` writes one; returns the path and the share of
    the mean update's squared norm the rank cut kept."""
    read = [_read_peft_adapters(Path(f)) for f in folders]
    alphas = {alpha for alpha, _ in read}
    if len(alphas) > 1:
        raise ConfigError(f"the checkpoints to average scale their adapters differently (alpha {sorted(alphas)}): average one run's checkpoints")
    pairs, kept = average_lora([p for _, p in read])
    return write_lora_gguf(path, model_type, alphas.pop(), pairs, dtype=dtype), kept


def average_lora(adapters: Sequence[Sequence[tuple[str, Any, Any]]]) -> tuple[list[tuple[str, Any, Any]], float]:
    """The mean of several LoRA adapters' updates, as one adapter of their rank.

    Each adapter is [(module, A of shape (r, in), B of shape (out, r))] over the same
    modules, ranks and scale (checkpoints of one run). Averaging A and B apart is not
    averaging the updates B A; the mean update (1/k) sum B_i A_i has rank up to k r, so it is
    taken exactly from the stacked factors (two thin QR decompositions and the SVD of a
    k r x k r core) and cut to its best rank r (Eckart-Young), the singular values split
    evenly between the new factors. Returns the factors and the share of the mean update's
    squared Frobenius norm the cut keeps, over all modules."""
    import torch

    if not adapters:
        raise ConfigError("no adapters to average")
    names = [[name for name, _, _ in a] for a in adapters]
    if any(n != names[0] for n in names[1:]):
        raise ConfigError("the checkpoints to average adapt different modules: average one run's checkpoints")
    k = len(adapters)
    out: list[tuple[str, Any, Any]] = []
    kept = total = 0.0
    for i, name in enumerate(names[0]):
        factors = [(a[i][1].double(), a[i][2].double()) for a in adapters]
        ranks = {A.shape[0] for A, _ in factors}
        if len(ranks) > 1:
            raise ConfigError(f"the checkpoints to average have different ranks at {name} ({sorted(ranks)})")
        r = ranks.pop()
        stacked_b = torch.cat([B for _, B in factors], dim=1)  # (out, k r)
        stacked_a = torch.cat([A for A, _ in factors], dim=0) / k  # (k r, in)
        qb, rb = torch.linalg.qr(stacked_b)
        qa, ra = torch.linalg.qr(stacked_a.T)
        u, s, vh = torch.linalg.svd(rb @ ra.T)
        root = s[:r].sqrt()
        out.append((name, ((root[:, None] * vh[:r]) @ qa.T).float(), ((qb @ u[:, :r]) * root).float()))
        kept += float((s[:r] ** 2).sum())
        total += float((s**2).sum())
    return out, kept / total if total else 1.0


def _read_peft_adapters(folder: Path) -> tuple[float, list[tuple[str, Any, Any]]]:
    """(llama.cpp's alpha, [(module name, A, B)] in name order) of the adapter peft saved
    in ``folder`` (``adapter_config.json`` and ``adapter_model.safetensors``)."""
    import json

    from safetensors.torch import load_file

    config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
    state = load_file(str(folder / "adapter_model.safetensors"))
    pairs = [
        (key[: -len(".lora_A.weight")], weight, state[key.replace(".lora_A.", ".lora_B.")])
        for key, weight in sorted(state.items())
        if key.endswith(".lora_A.weight")
    ]
    return _alpha(config["lora_alpha"], config["r"], config.get("use_rslora", False)), pairs


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


def read_lora_gguf(path: Path) -> tuple[float, dict[str, tuple[Any, Any]]]:
    """(alpha, {llama.cpp base tensor name: (A of shape (r, in), B of shape (out, r))}) of
    a GGUF LoRA adapter, as float32 NumPy arrays: what :func:`write_lora_gguf` wrote."""
    import gguf
    import numpy as np

    try:
        reader = gguf.GGUFReader(str(path))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path} as a GGUF LoRA adapter ({exc})") from None
    field = reader.fields.get("adapter.lora.alpha")
    kind = reader.fields.get("adapter.type")
    if field is None or kind is None or bytes(kind.parts[kind.data[0]]).decode("utf-8") != "lora":
        raise ConfigError(f"{path} is not a GGUF LoRA adapter (no adapter.type lora / adapter.lora.alpha)")
    alpha = float(field.parts[field.data[0]][0])
    factors: dict[str, dict[str, Any]] = {}
    for tensor in reader.tensors:
        base, _, suffix = tensor.name.rpartition(".")
        if suffix in ("lora_a", "lora_b"):
            # GGUF lists a tensor's dimensions innermost first; the data is laid out row-major
            shape = tuple(int(d) for d in reversed(tensor.shape.tolist()))
            factors.setdefault(base, {})[suffix] = np.array(tensor.data, dtype=np.float32).reshape(shape)
    pairs = {base: (f["lora_a"], f["lora_b"]) for base, f in factors.items() if len(f) == 2}
    if not pairs:
        raise ConfigError(f"{path} holds no lora_a / lora_b tensor pairs")
    return alpha, pairs


def _peft_module(name: str) -> str:
    """A LoRA module's name without peft's wrapper prefix (``base_model.model.``).

    >>> _peft_module("base_model.model.model.layers.0.mlp.up_proj")
    'model.layers.0.mlp.up_proj'
    """
    return name.removeprefix("base_model.model.")


def load_lora_init(model: Any, source: str | Path, adapter: str = "default") -> int:
    """Copy trained LoRA factors into ``model``'s (a peft model) adapter ``adapter``: from
    a GGUF LoRA file or a peft adapter folder (``adapter_model.safetensors``). Every
    adapted module must find its factors with the adapter's rank, and the file's alpha /
    r scale must be the adapter's. Returns how many modules were loaded.

    Raises:
        ConfigError: one line naming what does not match.
    """
    import torch

    source = Path(source).expanduser()
    config = model.peft_config[adapter]
    key: Callable[[str], str] = lora_tensor_name  # a GGUF names modules as llama.cpp does
    if source.is_dir():
        if not all((source / name).is_file() for name in ("adapter_config.json", "adapter_model.safetensors")):
            raise ConfigError(f"model.lora.init: {source} has no adapter_config.json and adapter_model.safetensors (a peft adapter folder)")
        key = _peft_module  # a peft folder by transformers' module names: any architecture
        alpha, saved = _read_peft_adapters(source)
        pairs = {key(name): (a, b) for name, a, b in saved}
    elif source.is_file():
        alpha, pairs = read_lora_gguf(source)
    else:
        raise ConfigError(f"model.lora.init: {source} not found (a GGUF LoRA file or a peft adapter folder)")
    own = _alpha(config.lora_alpha, config.r, config.use_rslora)
    if abs(alpha - own) > 1e-6 * max(1.0, abs(own)):
        raise ConfigError(f"model.lora.init: {source.name} scales by alpha {alpha:g} / r, the policy by {own:g} / r: set model.lora.alpha to match")
    loaded = 0
    with torch.no_grad():
        for name, module in model.named_modules():
            if adapter not in (getattr(module, "lora_A", None) or {}):
                continue
            base = key(name)
            if base not in pairs:
                raise ConfigError(f"model.lora.init: {source.name} has no factors for {base}: it adapts other modules than model.lora.target_modules")
            for target, value in zip((module.lora_A[adapter].weight, module.lora_B[adapter].weight), pairs[base]):
                value = torch.as_tensor(value, dtype=target.dtype)
                if tuple(value.shape) != tuple(target.shape):
                    raise ConfigError(f"model.lora.init: {base} is {tuple(value.shape)} in {source.name}, {tuple(target.shape)} here: set model.lora.r to the adapter's rank")
                target.copy_(value)
            loaded += 1
    if loaded != len(pairs):
        raise ConfigError(f"model.lora.init: {source.name} adapts {len(pairs)} modules, the policy {loaded}: set model.lora.target_modules to match")
    return loaded
