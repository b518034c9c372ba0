"""GRPO training on multi-turn text-to-SQL episodes (SPEC §8; docs/training.md).

>>> from sqlscout.train import TrainConfig
>>> TrainConfig().rollout.group_size, TrainConfig().loss.normalizer
(8, 1024.0)

Heavy dependencies (torch, transformers, accelerate, peft) are imported when training
starts, not here.
"""

from sqlscout.train.config import TrainConfig, config_from_dict, config_to_dict, load_config
from sqlscout.train.loop import TrainRun, train

__all__ = ["TrainConfig", "TrainRun", "config_from_dict", "config_to_dict", "load_config", "train"]
