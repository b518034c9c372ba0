"""The GRPO objective per token, and how per-token losses are summed into one number.

For a trained token t of episode i, with advantage A_i:

    rho_t   = pi_theta(t) / pi_old(t)                          (PPO ratio)
    w_t     = min(pi_old(t) / pi_sampler(t), is_cap)           (truncated IS correction, no grad)
    surr_t  = -min(rho_t A_i, clip(rho_t, 1 - clip_low, 1 + clip_high) A_i) * w_t
    k3_t    = min(exp(ref_t - logp_t) - (ref_t - logp_t) - 1, 10)  (KL to the reference, >= 0)
    loss_t  = surr_t + beta * k3_t

``pi_old`` is the trainer's own probability when the batch was collected: with one
update per batch (the recipe) it is ``pi_theta`` detached, so rho is 1 in value, the
clip never binds, and the product ``rho * w`` is the ratio to the sampler, truncated;
the clip binds only on the later updates of ``mini_batches > 1``. ``w`` compares
``pi_old`` and ``pi_sampler`` in the sampler's processed distribution (its top-k /
top-p cut; see ``update.py``), so equal weights give w = 1. The correction w makes up
for the sampler (vLLM, or the same weights in another numeric path) not computing
exactly the trainer's probabilities.

The batch loss is ``sum_i sum_t weight_i * loss_t`` with the weights of
:func:`aggregation_weights` — computed once per batch, so splitting the batch into
micro-batches (or processes) never changes the gradient.

>>> aggregation_weights([2, 4], "constant", normalizer=1024)
[0.00048828125, 0.00048828125]
>>> aggregation_weights([2, 4], "token-mean")
[0.16666666666666666, 0.16666666666666666]
>>> aggregation_weights([2, 4], "sequence-mean")
[0.25, 0.125]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

__all__ = [
    "TokenLoss",
    "aggregation_weights",
    "clipped_surrogate",
    "K3_CAP",
    "k3",
    "token_loss",
    "truncated_is_weight",
]


def aggregation_weights(
    token_counts: Sequence[int],
    aggregation: str,
    *,
    normalizer: float = 1024.0,
    n_sequences: int | None = None,
    n_tokens: int | None = None,
) -> list[float]:
    """The weight of each token of each episode in the batch loss.

    ``token_counts[i]`` is how many tokens episode i trains on. ``constant``: 1 / (N * C)
    — the loss is each episode's token sum over a constant C, averaged over the N
    episodes, so long episodes weigh by their length and the scale does not drift with
    the batch's lengths. ``token-mean``: 1 / (total tokens). ``sequence-mean``:
    1 / (N * n_i), each episode's mean, then the mean over episodes.

    ``n_sequences`` / ``n_tokens`` are the batch's totals when ``token_counts`` is only
    this process's share of it (data parallelism); by default, the local totals.
    """
    if not token_counts:
        return []
    n = n_sequences if n_sequences is not None else len(token_counts)
    total = n_tokens if n_tokens is not None else sum(token_counts)
    if aggregation == "constant":
        return [1.0 / (n * normalizer)] * len(token_counts)
    if aggregation == "token-mean":
        return [1.0 / total if total else 0.0] * len(token_counts)
    if aggregation == "sequence-mean":
        return [1.0 / (n * c) if c else 0.0 for c in token_counts]
    raise ValueError(f"unknown aggregation {aggregation!r}")


# The most one token's k3 may count (nats), as verl's low-variance KL bounds it. k3 grows as
# exp(ref - logp): a token the reference finds far likelier than the policy does (the policy
# learned to avoid it) counts exponentially. Sampled from the policy such tokens are rare;
# a demonstration holds them. Run 5 of issue 38 imitated its greedy fixes: at step 4 the
# batch's mean k3 was 342 per token and the gradient's norm 690 (clipped to 1, so that
# step followed a few tokens' KL and nothing else).
K3_CAP = 10.0


def k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(pi_theta || pi_ref) per sampled token (>= 0, unbiased),
    at most :data:`K3_CAP` a token (a capped token passes no KL gradient).

    Written as expm1(d) - d: exp(d) - d - 1 cancels to 0 in float32 for the tiny d of a
    policy that has barely moved.
    """
    delta = ref_logp - logp
    return (torch.expm1(delta.clamp(max=K3_CAP + 2.0)) - delta).clamp(max=K3_CAP)


def truncated_is_weight(old_logp: torch.Tensor, sampler_logp: torch.Tensor, cap: float | None) -> torch.Tensor:
    """min(pi_old / pi_sampler, cap), without gradient; 1 where there is no cap."""
    if cap is None:
        return torch.ones_like(old_logp)
    return torch.exp(old_logp - sampler_logp).clamp(max=cap).detach()


def clipped_surrogate(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    clip_low: float,
    clip_high: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The negated clipped objective per token, and where the clip is active (bool)."""
    ratio = torch.exp(logp - old_logp)
    unclipped = ratio * advantages
    clipped = ratio.clamp(1.0 - clip_low, 1.0 + clip_high) * advantages
    active = ((ratio < 1.0 - clip_low) & (advantages < 0)) | ((ratio > 1.0 + clip_high) & (advantages > 0))
    return -torch.minimum(unclipped, clipped), active


@dataclass
class TokenLoss:
    """Per-token pieces of the objective (all shaped like the trained tokens)."""

    loss: torch.Tensor  # what the gradient follows
    kl: torch.Tensor  # k3 per token (zeros when there is no reference)
    clipped: torch.Tensor  # bool: the clip was active
    is_weight: torch.Tensor  # the truncated correction applied


def token_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    sampler_logp: torch.Tensor,
    advantages: torch.Tensor,
    *,
    clip_low: float,
    clip_high: float,
    is_cap: float | None,
    ref_logp: torch.Tensor | None = None,
    kl_coef: float = 0.0,
) -> TokenLoss:
    """``surr_t * w_t + beta * k3_t`` for each trained token (see the module docstring)."""
    surrogate, active = clipped_surrogate(logp, old_logp, advantages, clip_low, clip_high)
    weight = truncated_is_weight(old_logp, sampler_logp, is_cap)
    loss = surrogate * weight
    kl = k3(logp, ref_logp) if ref_logp is not None else torch.zeros_like(logp)
    if ref_logp is not None and kl_coef:
        loss = loss + kl_coef * kl
    return TokenLoss(loss=loss, kl=kl, clipped=active, is_weight=weight)
