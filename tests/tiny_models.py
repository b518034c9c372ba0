"""Tiny random Qwen3 / Qwen3.5 models with the real tokenizers, for tests and CPU smoke runs.

They generate nonsense, but through the real architecture, vocabulary, chat template
and token ids, in well under a second on a CPU: the seam for testing everything that
needs a model (backends, runner, trainer) without weights or a hub.

>>> model, tokenizer = tiny_qwen3(seed=0)
>>> model.config.num_hidden_layers, len(tokenizer) <= model.config.vocab_size
(2, True)
"""

from __future__ import annotations

from typing import Any

from sqlscout.backends.offline_tokenizers import qwen3_5_tokenizer, qwen3_tokenizer

__all__ = ["tiny_qwen3", "tiny_qwen3_5"]


def _shape(tokenizer: Any, hidden_size: int, layers: int) -> dict[str, Any]:
    """The config fields both tiny models share: a small attention stack over the real
    vocabulary, ending turns on the tokenizer's end-of-turn and end-of-text tokens."""
    return {
        "hidden_size": hidden_size,
        "intermediate_size": 2 * hidden_size,
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": hidden_size // 4,
        "max_position_embeddings": 32_768,
        "tie_word_embeddings": True,
        "eos_token_id": tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"]),
        "pad_token_id": tokenizer.pad_token_id,
    }


def tiny_qwen3(seed: int = 0, hidden_size: int = 64, layers: int = 2) -> tuple[Any, Any]:
    """A random ``Qwen3ForCausalLM`` (about 10 M parameters, mostly the embedding) and Qwen3's tokenizer."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = qwen3_tokenizer()
    config = Qwen3Config(
        vocab_size=151_936,
        **_shape(tokenizer, hidden_size, layers),
    )
    torch.manual_seed(seed)
    return Qwen3ForCausalLM(config).eval(), tokenizer


def tiny_qwen3_5(seed: int = 0, hidden_size: int = 64, layers: int = 4, template: str = "qwen3_5_think") -> tuple[Any, Any]:
    """A random ``Qwen3_5ForCausalLM`` (linear- and full-attention layers, 3:1 like the
    real one) and Qwen3.5's tokenizer with the given trl chat template."""
    import torch
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

    tokenizer = qwen3_5_tokenizer(template)
    config = Qwen3_5TextConfig(
        vocab_size=248_320,
        linear_key_head_dim=16,
        linear_value_head_dim=16,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        **_shape(tokenizer, hidden_size, layers),
    )
    torch.manual_seed(seed)
    return Qwen3_5ForCausalLM(config).eval(), tokenizer
