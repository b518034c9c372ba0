"""One policy update from a batch of scored episodes: the GRPO step.

The batch is split into ``mini_batches`` optimizer updates (1 in the recipe); each is
packed into micro-batches of similar-length episodes that fit ``micro_batch_tokens``
padded tokens, whose gradients accumulate before the optimizer steps. The per-token
weights of the loss aggregation are computed once per update over *all* its episodes
(across processes too), so micro-batching and data parallelism leave the gradient
unchanged.

Shapes in comments: B episodes in a micro-batch, L their padded length, N trained
tokens in the micro-batch.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from sqlscout.train.config import LossConfig
from sqlscout.train.logprobs import token_logprobs
from sqlscout.train.loss import aggregation_weights, token_loss
from sqlscout.train.mask import TrainSample

__all__ = ["UpdateStats", "grpo_update", "micro_batches", "pad_batch"]

# Entropy is telemetry: estimated on every 8th trained token, it costs ~5 % of the
# vocabulary-sized work instead of ~45 % (measured on a 248k vocabulary).
ENTROPY_STRIDE = 8

# A function returning a context manager in which the *same* model computes the frozen
# reference policy (LoRA with adapters disabled), or a separate frozen model.
ReferenceFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass
class UpdateStats:
    loss: float = 0.0
    kl: float = 0.0  # mean k3 per trained token
    clip_frac: float = 0.0  # share of trained tokens where the clip was active
    entropy: float = 0.0  # mean entropy per trained token (nats), on every ENTROPY_STRIDE-th token
    is_weight: float = 1.0  # mean truncated IS weight
    grad_norm: float = 0.0
    tokens: int = 0  # trained tokens (this process)
    micro_batches: int = 0


def micro_batches(lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Indices grouped into micro-batches of padded size (count × longest) <= ``max_tokens``.

    Sorted by length (longest first) so padding is small; a sequence longer than
    ``max_tokens`` gets a micro-batch of its own.

    >>> micro_batches([5, 9, 3, 8], 18)
    [[1, 3], [0, 2]]
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    for i in order:
        if batches and (len(batches[-1]) + 1) * lengths[batches[-1][0]] <= max_tokens:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def pad_batch(samples: Sequence[TrainSample], pad_id: int, device: torch.device) -> tuple[torch.Tensor, ...]:
    """(input_ids, attention_mask, trained) as (B, L) tensors, right-padded."""
    width = max(len(s.token_ids) for s in samples)
    ids = torch.full((len(samples), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(samples), width), dtype=torch.long)
    trained = torch.zeros((len(samples), width), dtype=torch.bool)
    for row, s in enumerate(samples):
        ids[row, : len(s.token_ids)] = torch.tensor(s.token_ids, dtype=torch.long)
        attention[row, : len(s.token_ids)] = 1
        trained[row, s.positions] = True
    return ids.to(device), attention.to(device), trained.to(device)


def _per_token(samples: Sequence[TrainSample], values: Sequence[float], device: torch.device) -> torch.Tensor:
    """Broadcast one value per episode to its trained tokens, in row-major order. (N,)"""
    return torch.tensor([v for s, v in zip(samples, values) for _ in s.positions], dtype=torch.float32, device=device)


def _flat(samples: Sequence[TrainSample], attr: str, device: torch.device) -> torch.Tensor:
    return torch.tensor([x for s in samples for x in getattr(s, attr)], dtype=torch.float32, device=device)


def _chunks(items: list[int], parts: int) -> list[list[int]]:
    size = math.ceil(len(items) / parts)
    return [items[i : i + size] for i in range(0, len(items), size)]


@torch.no_grad()
def _fill_old_logprobs(model: Any, samples: Sequence[TrainSample], pad_id: int, max_tokens: int, temperature: float, device: torch.device) -> None:
    """The trainer's own pre-update log-probabilities (needed when one batch feeds several updates)."""
    for group in micro_batches([len(s.token_ids) for s in samples], max_tokens):
        batch = [samples[i] for i in group]
        ids, attention, trained = pad_batch(batch, pad_id, device)
        logp, _ = token_logprobs(model, ids, attention, trained, temperature=temperature)
        offset = 0
        for s in batch:
            s.old_logprobs = logp[offset : offset + s.n_trained].tolist()
            offset += s.n_trained


def grpo_update(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    samples: Sequence[TrainSample],
    loss_config: LossConfig,
    *,
    temperature: float,
    kl_coef: float,
    reference: ReferenceFn | None,
    pad_id: int,
    micro_batch_tokens: int,
    mini_batches: int = 1,
    max_grad_norm: float | None = 1.0,
    accelerator: Any = None,
) -> UpdateStats:
    """Run ``mini_batches`` optimizer steps over ``samples``; return the step's statistics.

    ``reference(ids, attention, trained)`` gives the frozen policy's log-probabilities of
    the trained tokens (None: no KL term, KL not measured).
    """
    device = accelerator.device if accelerator is not None else next(model.parameters()).device
    samples = [s for s in samples]
    if mini_batches > 1:
        _fill_old_logprobs(model, samples, pad_id, micro_batch_tokens, temperature, device)
    totals = {"loss": 0.0, "kl": 0.0, "clip": 0.0, "entropy": 0.0, "entropy_n": 0, "isw": 0.0, "tokens": 0, "micro": 0,
              "norm": 0.0}  # fmt: skip
    order = list(range(len(samples)))
    updates = _chunks(order, mini_batches) if order else []
    for update in updates:
        batch = [samples[i] for i in update]
        counts = [s.n_trained for s in batch]
        n_seq, n_tok, world = _global_counts(batch, accelerator)
        weights = aggregation_weights(
            counts, loss_config.aggregation, normalizer=loss_config.normalizer, n_sequences=n_seq, n_tokens=n_tok
        )
        groups = micro_batches([len(s.token_ids) for s in batch], micro_batch_tokens)
        groups = _pad_group_count(groups, accelerator)
        model.train()
        for k, group in enumerate(groups):
            last = k == len(groups) - 1
            if accelerator is not None:
                # Tells DeepSpeed where the accumulation boundary is (its engine steps there);
                # the prepared optimizer only steps while this is True.
                accelerator.sync_gradients = last
            with _no_sync(model, accelerator, last):
                _micro_step(
                    model, [batch[i] for i in group] if group else [batch[0]], [weights[i] for i in group] if group else [0.0],
                    loss_config, temperature, kl_coef, reference, pad_id, device, world, accelerator, totals,
                )
        totals["norm"] = _step(model, optimizer, scheduler, max_grad_norm, accelerator)
    tokens = max(totals["tokens"], 1)
    return UpdateStats(
        loss=totals["loss"],
        kl=totals["kl"] / tokens,
        clip_frac=totals["clip"] / tokens,
        entropy=totals["entropy"] / max(totals["entropy_n"], 1),
        is_weight=totals["isw"] / tokens,
        grad_norm=totals["norm"],
        tokens=totals["tokens"],
        micro_batches=totals["micro"],
    )


def _micro_step(
    model: torch.nn.Module,
    batch: list[TrainSample],
    weights: list[float],
    cfg: LossConfig,
    temperature: float,
    kl_coef: float,
    reference: ReferenceFn | None,
    pad_id: int,
    device: torch.device,
    world: int,
    accelerator: Any,
    totals: dict[str, float],
) -> None:
    ids, attention, trained = pad_batch(batch, pad_id, device)  # (B, L) each
    logp, entropy = token_logprobs(
        model, ids, attention, trained, temperature=temperature, entropy_stride=ENTROPY_STRIDE
    )  # (N,) each; entropy NaN off the stride
    old = logp.detach() if batch[0].old_logprobs is None else _flat(batch, "old_logprobs", device)
    sampler = _flat(batch, "sampler_logprobs", device)
    sampler = torch.where(torch.isnan(sampler), old, sampler)  # no sampler value: no correction
    ref = None
    if reference is not None:
        with torch.no_grad():
            ref = reference(ids, attention, trained)
    advantages = _per_token(batch, [s.advantage for s in batch], device)
    pieces = token_loss(
        logp, old, sampler, advantages,
        clip_low=cfg.clip_low, clip_high=cfg.clip_high, is_cap=cfg.is_cap, ref_logp=ref, kl_coef=kl_coef,
    )  # fmt: skip
    weight = _per_token(batch, weights, device)
    # Data-parallel backends average gradients over processes; the weights already
    # divide by the global count, so undo that average.
    loss = (pieces.loss * weight).sum() * world
    if accelerator is not None:
        accelerator.backward(loss)
    else:
        loss.backward()
    live = sum(w > 0 for w in weights) > 0
    if live:
        n = int(logp.numel())
        totals["loss"] += float(loss.detach()) / world
        totals["kl"] += float(pieces.kl.detach().sum())
        totals["clip"] += float(pieces.clipped.sum())
        sampled = ~torch.isnan(entropy)
        totals["entropy"] += float(entropy[sampled].sum())
        totals["entropy_n"] += int(sampled.sum())
        totals["isw"] += float(pieces.is_weight.sum())
        totals["tokens"] += n
    totals["micro"] += 1


def _step(model: torch.nn.Module, optimizer: Any, scheduler: Any, max_grad_norm: float | None, accelerator: Any) -> float:
    params = [p for p in model.parameters() if p.requires_grad]
    if max_grad_norm is not None:
        clip = accelerator.clip_grad_norm_ if accelerator is not None else torch.nn.utils.clip_grad_norm_
        norm = clip(params, max_grad_norm)  # None under DeepSpeed, whose engine clips (its own config)
        norm = float(norm) if norm is not None else float("nan")
    else:
        grads = [p.grad.detach().norm() for p in params if p.grad is not None]
        norm = float(torch.linalg.vector_norm(torch.stack(grads))) if grads else 0.0
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return norm


def _global_counts(batch: Sequence[TrainSample], accelerator: Any) -> tuple[int, int, int]:
    """(episodes, trained tokens, processes) over every process of the run."""
    n_seq, n_tok = len(batch), sum(s.n_trained for s in batch)
    if accelerator is None or accelerator.num_processes == 1:
        return n_seq, n_tok, 1
    counts = torch.tensor([n_seq, n_tok], device=accelerator.device)
    total = accelerator.reduce(counts, reduction="sum")
    return int(total[0]), int(total[1]), accelerator.num_processes


def _pad_group_count(groups: list[list[int]], accelerator: Any) -> list[list[int]]:
    """Every process must run as many forward/backward passes (collectives pair up):
    the ones with fewer micro-batches add empty ones (zero weight)."""
    if accelerator is None or accelerator.num_processes == 1:
        return groups
    most = int(accelerator.gather(torch.tensor([len(groups)], device=accelerator.device)).max())
    return groups + [[] for _ in range(most - len(groups))]


def _no_sync(model: torch.nn.Module, accelerator: Any, last: bool) -> contextlib.AbstractContextManager[Any]:
    """Skip DDP's gradient all-reduce on all but the last micro-batch."""
    if accelerator is None or last or accelerator.num_processes == 1:
        return contextlib.nullcontext()
    from accelerate.utils import DistributedType

    if accelerator.distributed_type is DistributedType.MULTI_GPU:
        return accelerator.no_sync(model)
    return contextlib.nullcontext()

