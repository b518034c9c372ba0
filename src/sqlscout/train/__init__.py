"""GRPO training on multi-turn text-to-SQL episodes (SPEC §8; docs/training.md).

>>> from sqlscout.train import TrainConfig
>>> TrainConfig().rollout.group_size, TrainConfig().loss.normalizer
(8, 1024.0)

Heavy dependencies (torch, transformers, accelerate, peft) are imported when the loop
is first asked for (``sqlscout.train.train``), not here.
"""

from __future__ import annotations

from typing import Any

from sqlscout.train.config import TrainConfig, config_from_dict, config_to_dict, load_config

__all__ = ["TrainConfig", "TrainRun", "config_from_dict", "config_to_dict", "load_config", "train"]


def __getattr__(name: str) -> Any:
    if name in ("TrainRun", "train"):
        from sqlscout.train import loop

        return getattr(loop, name)
    raise AttributeError(f"module 'sqlscout.train' has no attribute {name!r}")
