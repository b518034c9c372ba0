"""Log-probabilities (and entropy) of the trained tokens under a causal LM.

Only the positions that predict a trained token go through the LM head: agentic
transcripts are mostly prompt and tool output, and the vocabulary is large (248k for
Qwen3.5), so projecting every position would dominate memory. The log-softmax runs in
float32, in row chunks recomputed in the backward pass, so at most one chunk of
float32 logits is alive at a time.
"""

from __future__ import annotations

import torch
from torch.utils.checkpoint import checkpoint

__all__ = ["token_logprobs"]

_CHUNK_ROWS = 1024


def _supports_mask_keep() -> bool:
    """transformers >= 5.2x flattens a boolean (B, L) ``logits_to_keep`` to the kept rows."""
    import transformers.modeling_utils as mu

    return hasattr(mu, "slice_logits_to_keep")


def _rows_logprobs(logits: torch.Tensor, targets: torch.Tensor, temperature: float) -> torch.Tensor:
    scaled = logits.float() / temperature
    return scaled.gather(-1, targets[:, None]).squeeze(-1) - scaled.logsumexp(-1)


@torch.no_grad()
def _rows_entropy(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    scaled = logits.float() / temperature
    logp = scaled.log_softmax(-1)
    return -(logp.exp() * logp).sum(-1)


def token_logprobs(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    trained: torch.Tensor,
    *,
    temperature: float = 1.0,
    entropy: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probabilities of ``input_ids[trained]`` (flattened in row-major order).

    Args:
        input_ids: (B, L) right-padded token ids.
        attention_mask: (B, L) 1 for real tokens.
        trained: (B, L) bool, True at the tokens to score (never column 0).
        temperature: logits are divided by it, as the sampler did.
        entropy: also return each scored position's entropy (no gradient).

    Returns:
        (logp, entropy): shapes (N,), N = trained.sum().
    """
    predicting = torch.zeros_like(trained)
    predicting[:, :-1] = trained[:, 1:]  # the logits at t-1 predict the token at t
    targets = input_ids[trained]
    if _supports_mask_keep():
        out = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=predicting, use_cache=False)
        logits = out.logits  # (N, V)
    else:
        columns = predicting.any(0).nonzero().squeeze(-1)
        out = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=columns, use_cache=False)
        logits = out.logits[predicting[:, columns]]  # (N, V)
    pieces, entropies = [], []
    for start in range(0, logits.shape[0], _CHUNK_ROWS):
        rows, rows_targets = logits[start : start + _CHUNK_ROWS], targets[start : start + _CHUNK_ROWS]
        if rows.requires_grad:
            pieces.append(checkpoint(_rows_logprobs, rows, rows_targets, temperature, use_reentrant=False))
        else:
            pieces.append(_rows_logprobs(rows, rows_targets, temperature))
        if entropy:
            entropies.append(_rows_entropy(rows.detach(), temperature))
    logp = torch.cat(pieces) if pieces else logits.new_zeros(0, dtype=torch.float32)
    ent = (torch.cat(entropies) if entropies else logp.new_zeros(0)) if entropy else None
    return logp, ent
