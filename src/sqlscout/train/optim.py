"""AdamW over the trainable parameters and its learning-rate schedule (transformers' own
warmup + cosine / constant schedules, so nothing here is home-made).

>>> import torch
>>> from sqlscout.train.config import OptimConfig
>>> opt, sched = build_optimizer([torch.nn.Parameter(torch.zeros(1))], OptimConfig(lr=1.0, warmup_ratio=0.1), steps=100)
>>> lrs = []
>>> for _ in range(100):
...     lrs.append(sched.get_last_lr()[0]); opt.step(); sched.step()
>>> lrs[0], lrs[5], lrs[10], round(lrs[55], 3), round(lrs[99], 4)
(0.0, 0.5, 1.0, 0.5, 0.0003)
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import torch

from sqlscout.train.config import OptimConfig

__all__ = ["build_optimizer", "warmup_steps"]


def warmup_steps(config: OptimConfig, steps: int) -> int:
    return math.ceil(config.warmup_ratio * steps)


def build_optimizer(params: Iterable[torch.nn.Parameter], config: OptimConfig, steps: int) -> tuple[Any, Any]:
    """(AdamW, LambdaLR) for ``steps`` optimizer steps (one per training step × mini_batches)."""
    from transformers import get_constant_schedule_with_warmup, get_cosine_with_min_lr_schedule_with_warmup

    trainable = [p for p in params if p.requires_grad]
    optimizer = torch.optim.AdamW(
        trainable, lr=config.lr, betas=config.betas, eps=config.eps, weight_decay=config.weight_decay
    )
    total = steps * config.mini_batches
    warmup = warmup_steps(config, total)
    if config.schedule == "constant":
        return optimizer, get_constant_schedule_with_warmup(optimizer, warmup)
    return optimizer, get_cosine_with_min_lr_schedule_with_warmup(
        optimizer, warmup, total, min_lr_rate=config.min_lr_ratio
    )
