"""How many processes a launcher started, and the one accelerator that joins them.

``torchrun`` and ``accelerate launch`` tell each process where it stands through the
environment (``WORLD_SIZE``, ``RANK``, ...): that is the one thing the trainer reads
from it. On a machine without a GPU, accelerate only goes distributed when told to
use the CPU, so the trainer tells it (gloo), and then checks that the accelerator
really joined every process the launcher started. Two processes that each train alone
on the same run directory — or one process where several were asked for — are
refused with one line, never run silently.

>>> launched_processes({"WORLD_SIZE": "2"}), launched_processes({})
(2, 1)
"""

from __future__ import annotations

import os
from typing import Mapping

import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState
from accelerate.utils import DistributedType

from sqlscout.errors import ConfigError

__all__ = ["check_joined", "launched_processes", "make_accelerator", "replicas_agree"]

_WORLD_KEYS = ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE")
CPU_LAUNCH = "torchrun --standalone --nproc_per_node N -m sqlscout.cli.main train --config ..."


def launched_processes(env: Mapping[str, str]) -> int:
    """How many processes the launcher started (1 without a launcher)."""
    for key in _WORLD_KEYS:
        if env.get(key):
            return int(env[key])
    return 1


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes")


def make_accelerator(precision: str, env: Mapping[str, str] | None = None) -> Accelerator:
    """The run's accelerator, distributed over every launched process (gloo on CPU).

    Raises:
        ConfigError: the launch would train copies that do not talk to each other.
    """
    env = os.environ if env is None else env
    world = launched_processes(env)
    if world == 1 and _truthy(env.get("ACCELERATE_USE_CPU")) and env.get("MASTER_ADDR"):
        # `accelerate launch --cpu --num_processes N` runs its single-process launcher.
        raise ConfigError(f"accelerate launch --cpu started one process although several were asked for; on CPUs run {CPU_LAUNCH}")
    cpu = world > 1 and not torch.cuda.is_available()
    mixed = "bf16" if precision == "bf16" else "no"
    state = AcceleratorState._shared_state
    if world == 1 and state and state.get("_mixed_precision", mixed) != mixed:
        # Another trainer in this process (TRL's, a notebook's) set accelerate up with another
        # precision; accelerate refuses a second one, so the run starts its own state afresh.
        AcceleratorState._reset_state()
    accelerator = Accelerator(mixed_precision=mixed, step_scheduler_with_optimizer=False, cpu=cpu)
    check_joined(world, accelerator.num_processes)
    return accelerator


def check_joined(launched: int, joined: int) -> None:
    """Refuse a run whose accelerator did not join every process the launcher started."""
    if joined != launched:
        raise ConfigError(
            f"the launcher started {launched} processes but only {joined} joined the run "
            f"(each would train alone on the same run directory); on CPUs run {CPU_LAUNCH}"
        )


@torch.no_grad()
def replicas_agree(model: torch.nn.Module, accelerator: Accelerator) -> bool:
    """Whether every process holds the same weights (data parallelism keeps them equal;
    a launch that does not would let them drift). True where the weights are sharded
    (FSDP, DeepSpeed), which keeps one copy, or with one process."""
    if accelerator.num_processes == 1 or accelerator.distributed_type not in (
        DistributedType.MULTI_CPU, DistributedType.MULTI_GPU
    ):  # fmt: skip
        return True
    params = [p.detach().double() for p in accelerator.unwrap_model(model).parameters()]
    fingerprint = torch.stack([torch.stack([p.sum(), (p * p).sum()]) for p in params]).flatten().to(accelerator.device)
    every = accelerator.gather(fingerprint[None]).view(accelerator.num_processes, -1)
    return bool((every == every[0]).all())
