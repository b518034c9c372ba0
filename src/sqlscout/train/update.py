"""One policy update from a batch of scored episodes: the GRPO step.

The batch is split into ``mini_batches`` optimizer updates (1 in the recipe); each is
packed into micro-batches of similar-length episodes that fit ``micro_batch_tokens``
padded tokens, whose gradients accumulate before the optimizer steps. With
``share_prefix``, the episodes of one group (same question, same prompt) go into
micro-batches of their own that continue from their prompt, computed once for the group
(:func:`prefix_batches`, :class:`~sqlscout.train.logprobs.SharedPrefix`). The per-token
weights of the loss aggregation are computed once per update over *all* its episodes
(across processes too), so micro-batching and data parallelism leave the gradient
unchanged.

Shapes in comments: B episodes in a micro-batch, L their padded length, N trained
tokens in the micro-batch.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, fields
from typing import Any, Callable, Sequence

import torch
from accelerate import Accelerator
from accelerate.utils import DistributedType
from torch.optim.lr_scheduler import LRScheduler

from sqlscout.train.config import LossConfig, OptimConfig
from sqlscout.train.logprobs import SharedPrefix, Truncation, token_logprobs
from sqlscout.train.loss import aggregation_weights, token_loss
from sqlscout.train.mask import TrainSample
from sqlscout.train.memory import disable_checkpointing, enable_checkpointing, is_checkpointing

__all__ = ["UpdateContext", "UpdateStats", "grpo_update", "micro_batches", "pad_batch", "prefix_batches"]

# Entropy is telemetry: estimated on every 8th trained token, it costs ~5 % of the
# vocabulary-sized work instead of ~45 % (measured on a 248k vocabulary).
ENTROPY_STRIDE = 8

# ``reference(ids, attention, trained, prefix=0)``: the frozen reference policy's
# log-probabilities of the trained tokens (the same model with LoRA adapters disabled, or
# a separate frozen model), sharing the first ``prefix`` tokens as token_logprobs does.
ReferenceFn = Callable[..., torch.Tensor]


@dataclass(frozen=True)
class UpdateContext:
    """What every micro-step of an update needs.

    Attributes:
        model: the policy, as the accelerator prepared it (forward passes go through it).
        loss: the surrogate's settings.
        temperature: the temperature log-probabilities are taken at.
        kl_coef: this step's KL coefficient.
        reference: ``reference(ids, attention, trained)`` gives the frozen policy's
            log-probabilities of the trained tokens (None: no KL term, KL not measured).
        pad_id: the padding token.
        accelerator: the run's accelerator (None: one process, no accelerator).
        truncation: the top-k / top-p the sampler drew with and took its reported
            log-probabilities after (hf and vLLM both do); the truncated importance
            weight compares the trainer's probability in that same processed
            distribution with the sampler's, so equal weights give a weight of 1.
            None: the sampler reports log-probabilities of the whole distribution.
        share_prefix: compute a group's common prompt once (:func:`prefix_batches`):
            once for all its micro-batches in one process, once per micro-batch across
            several (each backward pass must end in that micro-batch's gradient
            exchange); the caller checks the model can
            (:func:`~sqlscout.train.logprobs.can_share_prefix`).
        prompt_per_micro_batch: with ``share_prefix``, compute the prompt in every
            micro-batch even in one process (the measure of what once per group saves:
            ``benchmarks/grpo_update_cpu.py --compare group_prompt``).
    """

    model: torch.nn.Module
    loss: LossConfig
    temperature: float
    kl_coef: float
    reference: ReferenceFn | None
    pad_id: int
    accelerator: Accelerator | None = None
    truncation: Truncation | None = None
    share_prefix: bool = False
    prompt_per_micro_batch: bool = False

    @property
    def device(self) -> torch.device:
        return self.accelerator.device if self.accelerator is not None else next(self.model.parameters()).device

    @property
    def world(self) -> int:
        return self.accelerator.num_processes if self.accelerator is not None else 1


@dataclass
class UpdateStats:
    """Sums over the trained tokens of an update (this process), and their means.

    ``loss`` is the summed (weighted) loss, ``grad_norm`` the last optimizer step's.
    """

    loss: float = 0.0
    kl_sum: float = 0.0
    clipped: int = 0
    entropy_sum: float = 0.0
    entropy_tokens: int = 0  # tokens whose entropy was estimated (every ENTROPY_STRIDE-th)
    is_weight_sum: float = 0.0
    is_weight_min: float = math.inf
    is_weight_max: float = -math.inf
    tokens: int = 0  # trained tokens (this process)
    computed: int = 0  # tokens the forward passes computed (a shared prompt once, padding included)
    micro_batches: int = 0
    recomputed: int = 0  # micro-batches over micro_batch_tokens, run with activation checkpointing
    grad_norm: float = 0.0

    def add(self, other: UpdateStats) -> None:
        for f in fields(self):
            if f.name not in ("grad_norm", "is_weight_min", "is_weight_max"):
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        self.is_weight_min = min(self.is_weight_min, other.is_weight_min)
        self.is_weight_max = max(self.is_weight_max, other.is_weight_max)

    @property
    def kl(self) -> float:
        """Mean k3 per trained token."""
        return self.kl_sum / max(self.tokens, 1)

    @property
    def clip_frac(self) -> float:
        """Share of trained tokens where the clip was active."""
        return self.clipped / max(self.tokens, 1)

    @property
    def entropy(self) -> float:
        """Mean entropy per trained token (nats), on every ENTROPY_STRIDE-th token."""
        return self.entropy_sum / max(self.entropy_tokens, 1)

    @property
    def is_weight(self) -> float:
        """Mean truncated IS weight."""
        return self.is_weight_sum / max(self.tokens, 1)


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


def prefix_batches(samples: Sequence[TrainSample], max_tokens: int) -> list[tuple[list[int], int]]:
    """Micro-batches as (indices, shared prefix length): episodes whose tokens up to their
    first trained token are the same (a group: one question, one prompt) are batched
    together and share all but the last of those tokens, which is computed once; the cost
    of a batch is then ``prefix + count × (longest − prefix)`` tokens, kept within
    ``max_tokens`` (so that a micro-batch holds no more than that, its group's prompt
    included). Episodes alone with their prompt go through :func:`micro_batches`
    (prefix 0).

    >>> from sqlscout.train.mask import TrainSample
    >>> s = lambda ids, first: TrainSample(ids, [first], [0.0], 1.0)
    >>> prefix_batches([s([1, 2, 3, 4], 3), s([9, 8], 1), s([1, 2, 3, 5, 6], 3)], 100)
    [([2, 0], 2), ([1], 0)]
    """
    by_prompt: dict[tuple[int, ...], list[int]] = {}
    for i, s in enumerate(samples):
        first = s.positions[0] if s.positions else len(s.token_ids)
        by_prompt.setdefault(tuple(s.token_ids[:first]), []).append(i)
    batches: list[tuple[list[int], int]] = []
    alone: list[int] = []
    for prompt, members in by_prompt.items():
        prefix = len(prompt) - 1
        if len(members) < 2 or prefix < 1:
            alone += members
            continue
        members.sort(key=lambda i: (-len(samples[i].token_ids), i))
        current: list[int] = []
        for i in members:
            if current and _cost([samples[j] for j in (*current, i)], prefix) > max_tokens:
                batches.append(_alone_over(samples, current, prefix, max_tokens))
                current = []
            current.append(i)
        batches.append(_alone_over(samples, current, prefix, max_tokens))
    lengths = [len(samples[i].token_ids) for i in alone]
    batches += [([alone[k] for k in group], 0) for group in micro_batches(lengths, max_tokens)]
    return batches


def _alone_over(samples: Sequence[TrainSample], batch: list[int], prefix: int, max_tokens: int) -> tuple[list[int], int]:
    """An episode longer than ``max_tokens`` is a micro-batch of its own, recomputed layer by
    layer (:func:`_recomputed`), which keeps no key/value cache: it goes through whole."""
    return batch, prefix if _cost([samples[i] for i in batch], prefix) <= max_tokens else 0


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
def _fill_old_logprobs(ctx: UpdateContext, samples: Sequence[TrainSample], max_tokens: int) -> None:
    """The trainer's own pre-update log-probabilities (needed when one batch feeds several updates)."""
    for group in micro_batches([len(s.token_ids) for s in samples], max_tokens):
        batch = [samples[i] for i in group]
        ids, attention, trained = pad_batch(batch, ctx.pad_id, ctx.device)
        out = token_logprobs(ctx.model, ids, attention, trained, temperature=ctx.temperature, truncation=ctx.truncation)
        offset = 0
        for s in batch:
            s.old_logprobs = out.logp[offset : offset + s.n_trained].tolist()
            s.old_kept_lognorm = out.kept_lognorm[offset : offset + s.n_trained].tolist()
            offset += s.n_trained


def grpo_update(
    ctx: UpdateContext,
    optimizer: torch.optim.Optimizer,
    scheduler: LRScheduler | None,
    samples: Sequence[TrainSample],
    optim: OptimConfig,
) -> UpdateStats:
    """Run ``optim.mini_batches`` optimizer steps over ``samples`` (micro-batched by
    ``optim.micro_batch_tokens``, gradients clipped to ``optim.max_grad_norm``); return
    the step's statistics."""
    model, accelerator = ctx.model, ctx.accelerator
    samples = list(samples)
    if optim.mini_batches > 1:
        _fill_old_logprobs(ctx, samples, optim.micro_batch_tokens)
    stats = UpdateStats()
    order = list(range(len(samples)))
    updates = _chunks(order, optim.mini_batches) if order else []
    for update in updates:
        batch = [samples[i] for i in update]
        counts = [s.n_trained for s in batch]
        n_seq, n_tok = _global_counts(batch, accelerator)
        weights = aggregation_weights(
            counts, ctx.loss.aggregation, normalizer=ctx.loss.normalizer, n_sequences=n_seq, n_tokens=n_tok
        )
        if ctx.share_prefix:
            groups = prefix_batches(batch, optim.micro_batch_tokens)
        else:
            groups = [(g, 0) for g in micro_batches([len(s.token_ids) for s in batch], optim.micro_batch_tokens)]
        groups = _pad_group_count(groups, accelerator)
        model.train()
        prompt: _Prompt | None = None
        for k, (group, prefix) in enumerate(groups):
            last = k == len(groups) - 1
            if accelerator is not None:
                # Tells DeepSpeed where the accumulation boundary is (its engine steps there);
                # the prepared optimizer only steps while this is True.
                accelerator.sync_gradients = last
            with _no_sync(model, accelerator, last):
                if group:
                    members = [batch[i] for i in group]
                    cost = _cost(members, prefix)
                    shared = None
                    if prefix and ctx.world == 1 and not ctx.prompt_per_micro_batch:  # once for all the group's micro-batches
                        if prompt is None or not prompt.begins(members[0], prefix):
                            if prompt is not None:
                                prompt.shared.backward()
                            prompt = _Prompt(ctx, members[0], prefix)
                            stats.computed += prefix
                        shared, cost = prompt.shared, cost - prefix
                    with _recomputed(model, cost > optim.micro_batch_tokens):
                        stats.add(_micro_step(ctx, members, [weights[i] for i in group], prefix, shared))
                    stats.computed += cost
                    stats.recomputed += cost > optim.micro_batch_tokens
                else:  # an empty micro-batch: a zero-weight pass so collectives pair up
                    stats.add(_micro_step(ctx, [batch[0]], [0.0]))
        if prompt is not None:
            prompt.shared.backward()
        stats.grad_norm = _step(model, optimizer, scheduler, optim.max_grad_norm, accelerator)
    return stats


def _micro_step(ctx: UpdateContext, batch: list[TrainSample], weights: list[float], prefix: int = 0,
                shared: SharedPrefix | None = None) -> UpdateStats:  # fmt: skip
    """Forward and backward over one micro-batch (whose rows share their first ``prefix``
    tokens, computed already where ``shared``); its statistics (none for a zero-weight pass)."""
    cfg, device = ctx.loss, ctx.device
    ids, attention, trained = pad_batch(batch, ctx.pad_id, device)  # (B, L) each
    logp, entropy, kept = token_logprobs(
        ctx.model, ids, attention, trained, temperature=ctx.temperature, entropy_stride=ENTROPY_STRIDE,
        truncation=ctx.truncation, prefix=prefix, shared=shared,
    )  # (N,) each; entropy NaN off the stride
    if batch[0].old_logprobs is None:  # one update per batch: pi_old is the current policy
        old = logp.detach()
    else:
        old, kept = _flat(batch, "old_logprobs", device), _flat(batch, "old_kept_lognorm", device)
    # The sampler reports log pi_sampler in its processed (truncated) distribution; adding
    # the mass pi_old's truncation keeps puts it on the scale of old, so that
    # exp(old - sampler) = pi_old / pi_sampler, both processed: 1 for equal weights.
    sampler = _flat(batch, "sampler_logprobs", device) + kept
    sampler = torch.where(torch.isnan(sampler), old, sampler)  # no sampler value: no correction
    ref = None
    if ctx.reference is not None:
        with torch.no_grad():
            ref = ctx.reference(ids, attention, trained, prefix=prefix) if prefix else ctx.reference(ids, attention, trained)
    advantages = _per_token(batch, [s.advantage for s in batch], device)
    pieces = token_loss(
        logp, old, sampler, advantages,
        clip_low=cfg.clip_low, clip_high=cfg.clip_high, is_cap=cfg.is_cap, ref_logp=ref, kl_coef=ctx.kl_coef,
    )  # fmt: skip
    weight = _per_token(batch, weights, device)
    # Data-parallel backends average gradients over processes; the weights already
    # divide by the global count, so undo that average.
    loss = (pieces.loss * weight).sum() * ctx.world
    if ctx.accelerator is not None:
        ctx.accelerator.backward(loss)
    else:
        loss.backward()
    if not any(w > 0 for w in weights):
        return UpdateStats(micro_batches=1)
    sampled = ~torch.isnan(entropy)
    return UpdateStats(
        loss=float(loss.detach()) / ctx.world,
        kl_sum=float(pieces.kl.detach().sum()),
        clipped=int(pieces.clipped.sum()),
        entropy_sum=float(entropy[sampled].sum()),
        entropy_tokens=int(sampled.sum()),
        is_weight_sum=float(pieces.is_weight.sum()),
        is_weight_min=float(pieces.is_weight.min()),
        is_weight_max=float(pieces.is_weight.max()),
        tokens=int(logp.numel()),
        micro_batches=1,
    )


class _Prompt:
    """A group's shared prompt, computed once (with its autograd history) for the
    micro-batches that follow it."""

    def __init__(self, ctx: UpdateContext, first: TrainSample, length: int) -> None:
        self.tokens = first.token_ids[:length]
        ids = torch.tensor([self.tokens], dtype=torch.long, device=ctx.device)
        self.shared = SharedPrefix(ctx.model, ids, torch.ones_like(ids), length)

    def begins(self, sample: TrainSample, length: int) -> bool:
        return len(self.tokens) == length and sample.token_ids[:length] == self.tokens


def _cost(batch: Sequence[TrainSample], prefix: int) -> int:
    """Tokens a micro-batch computes: the shared prefix once, every row's rest padded to the longest."""
    longest = max(len(s.token_ids) for s in batch)
    return prefix + len(batch) * (longest - prefix)


@contextlib.contextmanager
def _recomputed(model: torch.nn.Module, needed: bool) -> Any:
    """Activation checkpointing for one micro-batch larger than ``micro_batch_tokens``.

    The packing bounds a micro-batch of several episodes, but an episode longer than the
    bound is one of its own: without this its activations grow with its length (a
    6,144-token episode of the 0.5B took the process to 24 GB, issue 38). Recomputed,
    only each layer's input stays alive, so the bound holds for it too at the price of
    one more forward over that episode. Nothing changes for a model that checkpoints
    already, or one that cannot."""
    inner = model.module if hasattr(model, "module") else model  # under DDP
    if not needed or is_checkpointing(inner) or not getattr(inner, "supports_gradient_checkpointing", True):
        yield
        return
    enable_checkpointing(inner)
    try:
        yield
    finally:
        disable_checkpointing(inner)


def _step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: LRScheduler | None, max_grad_norm: float | None,
          accelerator: Accelerator | None) -> float:  # fmt: skip
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


def _global_counts(batch: Sequence[TrainSample], accelerator: Accelerator | None) -> tuple[int, int]:
    """(episodes, trained tokens) over every process of the run."""
    n_seq, n_tok = len(batch), sum(s.n_trained for s in batch)
    if accelerator is None or accelerator.num_processes == 1:
        return n_seq, n_tok
    counts = torch.tensor([n_seq, n_tok], device=accelerator.device)
    total = accelerator.reduce(counts, reduction="sum")
    return int(total[0]), int(total[1])


def _pad_group_count(groups: list[tuple[list[int], int]], accelerator: Accelerator | None) -> list[tuple[list[int], int]]:
    """Every process must run as many forward/backward passes (collectives pair up):
    the ones with fewer micro-batches add empty ones (zero weight)."""
    if accelerator is None or accelerator.num_processes == 1:
        return groups
    most = int(accelerator.gather(torch.tensor([len(groups)], device=accelerator.device)).max())
    return groups + [([], 0) for _ in range(most - len(groups))]


def _no_sync(model: torch.nn.Module, accelerator: Accelerator | None, last: bool) -> contextlib.AbstractContextManager[Any]:
    """Skip DDP's gradient all-reduce on all but the last micro-batch."""
    if accelerator is None or last or accelerator.num_processes == 1:
        return contextlib.nullcontext()
    if accelerator.distributed_type in (DistributedType.MULTI_GPU, DistributedType.MULTI_CPU):
        return accelerator.no_sync(model)
    return contextlib.nullcontext()

