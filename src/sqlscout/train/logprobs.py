"""Log-probabilities (and entropy) of the trained tokens under a causal LM.

Only the positions that predict a trained token go through the LM head: agentic
transcripts are mostly prompt and tool output, and the vocabulary is large (248k for
Qwen3.5), so projecting every position would dominate memory. The log-softmax runs in
float32, in row chunks, forward and backward (:class:`_SelectiveLogSoftmax`), so at most
one chunk of float32 logits is alive at a time.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

import torch

from sqlscout.train.memory import is_checkpointing

__all__ = ["SharedPrefix", "TokenLogprobs", "Truncation", "can_share_prefix", "token_logprobs"]

_CHUNK_ROWS = 1024


def _supports_mask_keep() -> bool:
    """transformers >= 5.2x flattens a boolean (B, L) ``logits_to_keep`` to the kept rows."""
    import transformers.modeling_utils as mu

    return hasattr(mu, "slice_logits_to_keep")


class Truncation(NamedTuple):
    """The sampler's cut of the distribution: top-k (0 or -1: none), then top-p of the
    renormalised top-k, as the hf sampler and vLLM apply them after the temperature."""

    top_k: int
    top_p: float


class TokenLogprobs(NamedTuple):
    """Per trained token: ``logp`` (with gradient) under softmax(z / T) over the whole
    vocabulary; ``entropy`` (or None); ``kept_lognorm``, the log of the probability mass
    the sampler's truncation keeps (no gradient; zeros without one), so that
    ``logp - kept_lognorm`` is the log-probability in the sampler's processed
    distribution."""

    logp: torch.Tensor
    entropy: torch.Tensor | None
    kept_lognorm: torch.Tensor


def _kept_logsumexp(y: torch.Tensor, truncation: Truncation) -> torch.Tensor | None:
    """logsumexp of the scaled logits ``y`` the truncation keeps — top-k, then top-p of
    the renormalised top-k, the rule of ``sqlscout.backends.hf.sample_tokens`` — per
    row; None when it keeps everything."""
    vocab = y.shape[-1]
    k = truncation.top_k if 0 < truncation.top_k < vocab else vocab
    if k == vocab and truncation.top_p >= 1.0:
        return None
    values = torch.topk(y, k, dim=-1).values  # sorted, largest first
    log_top = values.logsumexp(-1)
    probs = (values - log_top[:, None]).exp()
    before = probs.cumsum(-1) - probs  # mass of the tokens ranked above, within the top-k
    rank = torch.arange(k, device=y.device)
    cut = (before >= truncation.top_p) & (rank[None, :] > 0)
    return values.masked_fill(cut, float("-inf")).logsumexp(-1)


class _SelectiveLogSoftmax(torch.autograd.Function):
    """log softmax(logits / T)[target] per row, and the entropy of every
    ``entropy_stride``-th row (NaN elsewhere; 0 computes none).

    Saves only the rows' log-normaliser: the backward pass recomputes the softmax chunk
    by chunk, so the vocabulary-sized work is one exponential pass forward and one
    backward — what a plain cross-entropy costs — and no float32 copy of the logits
    outlives its chunk. Entropy is telemetry, so a strided sample of rows keeps its
    cost (one more exponential pass on those rows) small.
    """

    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, targets: torch.Tensor, temperature: float, entropy_stride: int,
                truncation: Truncation | None) -> Any:  # fmt: skip
        n = logits.shape[0]
        logp = torch.empty(n, dtype=torch.float32, device=logits.device)
        kept = torch.zeros(n, dtype=torch.float32, device=logits.device)
        lse = torch.empty(n, dtype=torch.float32, device=logits.device)
        ent = torch.full((n if entropy_stride else 0,), float("nan"), dtype=torch.float32, device=logits.device)
        for start in range(0, n, _CHUNK_ROWS):
            rows = slice(start, start + _CHUNK_ROWS)
            y = torch.div(logits[rows].float(), temperature)  # a fresh float32 buffer: safe to edit in place
            top = y.amax(-1, keepdim=True)
            y.sub_(top)  # y = z - max(z)
            picked = y.gather(-1, targets[rows, None]).squeeze(-1)
            kept_lse = _kept_logsumexp(y, truncation) if truncation is not None else None
            if entropy_stride:
                # H = log(sum e) - sum(e * y) / sum(e), with y = z - max(z) and e = exp(y),
                # on every entropy_stride-th row (start aligned to the stride)
                first = (-start) % entropy_stride
                y_sub = y[first::entropy_stride]
                e = y_sub.exp()
                sub_total = e.sum(-1)
                ent[start + first : start + y.shape[0] : entropy_stride] = (
                    sub_total.log() - torch.bmm(e[:, None, :], y_sub[:, :, None]).view(-1) / sub_total
                )
            total = y.exp_().sum(-1)
            log_total = total.log()
            lse[rows] = top.squeeze(-1) + log_total
            if kept_lse is not None:
                kept[rows] = kept_lse - log_total
            logp[rows] = picked - log_total
        ctx.save_for_backward(logits, targets, lse)
        ctx.temperature = temperature
        ctx.mark_non_differentiable(ent, kept)
        return logp, ent, kept

    @staticmethod
    def backward(ctx: Any, grad_logp: torch.Tensor, _grad_ent: torch.Tensor, _grad_kept: torch.Tensor) -> Any:
        logits, targets, lse = ctx.saved_tensors
        temperature = ctx.temperature
        grad = torch.empty_like(logits)
        same_dtype = logits.dtype == torch.float32
        for start in range(0, logits.shape[0], _CHUNK_ROWS):
            rows = slice(start, start + _CHUNK_ROWS)
            g = grad_logp[rows, None] / temperature
            # d logp / d logits = (onehot(target) - softmax(z)) / T, computed in place
            chunk = grad[rows] if same_dtype else torch.empty(grad[rows].shape, dtype=torch.float32, device=grad.device)
            torch.div(logits[rows].float(), temperature, out=chunk)
            chunk.sub_(lse[rows, None]).exp_().mul_(-g)
            chunk.scatter_add_(-1, targets[rows, None], g)
            if not same_dtype:
                grad[rows] = chunk.to(grad.dtype)
        return grad, None, None, None, None


def token_logprobs(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    trained: torch.Tensor,
    *,
    temperature: float = 1.0,
    entropy_stride: int = 0,
    truncation: Truncation | None = None,
    prefix: int = 0,
    shared: SharedPrefix | None = None,
) -> TokenLogprobs:
    """Log-probabilities of ``input_ids[trained]`` (flattened in row-major order).

    Args:
        input_ids: (B, L) right-padded token ids.
        attention_mask: (B, L) 1 for real tokens.
        trained: (B, L) bool, True at the tokens to score (never column 0).
        temperature: logits are divided by it, as the sampler did.
        entropy_stride: also return the entropy (no gradient) of every this-many-th scored
            position, NaN at the others; 0 for none.
        truncation: the sampler's top-k / top-p, to measure the mass it keeps (None: all).
        prefix: the first ``prefix`` tokens are the same in every row (a group's prompt)
            and predict no trained token: they go through the model once, as one row,
            and every row continues from that row's key/value cache. Gradients flow
            through the shared cache, so the result and its gradient are the unshared
            ones (to float rounding) at a fraction of the cost: a group of G episodes
            over a long prompt computes that prompt once instead of G times. 0: no
            sharing.
        shared: the prefix computed already (:class:`SharedPrefix`, for several batches
            of one group); ``prefix`` is then its length.

    Returns:
        (logp, entropy, kept_lognorm): shapes (N,), N = trained.sum(); entropy is None
        when not asked.
    """
    predicting = torch.zeros_like(trained)
    predicting[:, :-1] = trained[:, 1:]  # the logits at t-1 predict the token at t
    targets = input_ids[trained]
    extra: dict[str, Any] = {"use_cache": False}
    prefix = shared.length if shared is not None else prefix
    if prefix:
        if bool(predicting[:, :prefix].any()):
            raise ValueError(f"a shared prefix of {prefix} tokens would cover a position that predicts a trained token")
        shared = shared or SharedPrefix(model, input_ids, attention_mask, prefix, detached=False)
        extra = {"use_cache": True, _CACHE_KEYWORD: shared.cache(input_ids.shape[0])}
        input_ids, predicting = input_ids[:, prefix:], predicting[:, prefix:]
    if _supports_mask_keep():
        out = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=predicting, **extra)
        logits = out.logits  # (N, V)
    else:
        columns = predicting.any(0).nonzero().squeeze(-1)
        out = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=columns, **extra)
        logits = out.logits[predicting[:, columns]]  # (N, V)
    logp, ent, kept = _SelectiveLogSoftmax.apply(logits, targets, temperature, entropy_stride, truncation)
    return TokenLogprobs(logp, ent if entropy_stride else None, kept)


def _cache_keyword() -> str:
    """transformers >= 5.2x names the key/value cache ``cache``; before, ``past_key_values``."""
    from transformers.modeling_outputs import CausalLMOutputWithPast

    return "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"


_CACHE_KEYWORD = _cache_keyword()


class SharedPrefix:
    """The key/value cache of ``input_ids[0, :length]``, computed once and continued from
    by any number of batches (:func:`token_logprobs` ``shared``).

    ``detached=False``: every batch's cache keeps the prefix's autograd history, so each
    backward pass goes through the prefix's forward (one batch per prefix).
    ``detached=True``: the batches continue from detached copies that collect the
    gradient of every batch's loss; :meth:`backward` then sends their sum through the
    prefix's forward once. The gradient is the same as every batch recomputing the
    prefix (the chain rule sums over its uses), at the cost of one prefix, for a group
    whose episodes fill several micro-batches.
    """

    def __init__(self, model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor, length: int,
                 *, detached: bool = True) -> None:  # fmt: skip
        self.length = length
        out = model(input_ids=input_ids[:1, :length], attention_mask=attention_mask[:1, :length], logits_to_keep=1, use_cache=True)
        self._cache = getattr(out, _CACHE_KEYWORD)
        self._computed = [(layer.keys, layer.values) for layer in self._cache.layers]
        self._starts = self._computed
        if detached:
            self._starts = [tuple(t.detach().requires_grad_(t.requires_grad) for t in kv) for kv in self._computed]

    def cache(self, rows: int) -> Any:
        """A fresh cache of the prefix for a batch of ``rows`` (the model appends to it)."""
        cache = copy.copy(self._cache)
        cache.layers = []
        for layer, (keys, values) in zip(self._cache.layers, self._starts):
            fresh = copy.copy(layer)
            fresh.keys, fresh.values = keys.repeat_interleave(rows, dim=0), values.repeat_interleave(rows, dim=0)
            cache.layers.append(fresh)
        return cache

    def backward(self) -> None:
        """Send the gradient the batches left on the detached prefix through its forward
        (no-op when nothing needs it); the prefix's activations are freed."""
        pairs = [
            (t, start.grad)
            for kv, starts in zip(self._computed, self._starts) for t, start in zip(kv, starts)
            if start is not t and start.grad is not None
        ]  # fmt: skip
        if pairs:
            torch.autograd.backward([t for t, _ in pairs], [g for _, g in pairs])
        self._computed = self._starts = []


def can_share_prefix(model: torch.nn.Module) -> bool:
    """Whether :func:`token_logprobs` may share a prefix on ``model``: its cache must be
    one whose rows can be repeated (attention layers; Qwen3.5's recurrent linear-attention
    state is not), and gradient checkpointing must be off (recomputing a layer would
    append to the cache a second time)."""
    if is_checkpointing(model):
        return False
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    layer_types = set(getattr(config, "layer_types", None) or ["full_attention"])
    return layer_types <= {"full_attention", "sliding_attention"}
