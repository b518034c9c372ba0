"""Which tokens are trained — decided here and nowhere else.

An episode's transcript is the opening prompt, then model turns and environment turns
in alternation. Only the tokens the model generated (``SegmentKind.MODEL``, which
includes the end-of-turn marker the model emitted) are trained; the prompt, the turn
glue, tool results, budget lines and the forced final message (all ``PROMPT`` or
``ENV``) are masked out, because the model did not choose them.

>>> from sqlscout.env.trace import SegmentKind as K
>>> trainable_mask([(K.PROMPT, 0, 3), (K.MODEL, 3, 5), (K.ENV, 5, 7), (K.MODEL, 7, 8)], 8)
[False, False, False, True, True, False, False, True]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from sqlscout.env.trace import SegmentKind

__all__ = ["TrainSample", "trainable_mask", "train_sample"]


def trainable_mask(segments: Sequence[tuple[Any, int, int]], length: int) -> list[bool]:
    """True for every token position inside a MODEL segment (half-open ``[start, end)``)."""
    mask = [False] * length
    for kind, start, end in segments:
        if not 0 <= start <= end <= length:
            raise ValueError(f"segment {kind}[{start}:{end}] lies outside a sequence of {length} tokens")
        if SegmentKind(kind) is SegmentKind.MODEL:
            mask[start:end] = [True] * (end - start)
    return mask


@dataclass
class TrainSample:
    """One episode as the update sees it.

    ``positions`` are the indices of trained tokens in ``token_ids`` (never 0: a token
    is predicted from the ones before it); ``sampler_logprobs[k]`` is the sampler's
    log-probability of ``token_ids[positions[k]]`` (NaN when the sampler gave none: the
    correction then falls back to 1); ``old_logprobs`` (and ``old_kept_lognorm``, the
    log of the mass the sampler's truncation keeps) are filled by the update when it
    needs the trainer's own pre-update values.
    """

    token_ids: list[int]
    positions: list[int]
    sampler_logprobs: list[float]
    advantage: float
    old_logprobs: list[float] | None = None
    old_kept_lognorm: list[float] | None = None

    @property
    def n_trained(self) -> int:
        return len(self.positions)


def train_sample(
    token_ids: Sequence[int],
    segments: Sequence[tuple[Any, int, int]],
    logprobs: Sequence[float | None] | None,
    advantage: float,
) -> TrainSample:
    """Build the update's view of an episode from the runner's token ids, segments and logprobs."""
    mask = trainable_mask(segments, len(token_ids))
    if mask and mask[0]:
        raise ValueError("the first token cannot be trained: nothing precedes it")
    positions = [i for i, keep in enumerate(mask) if keep]
    sampled = [logprobs[i] if logprobs is not None and i < len(logprobs) else None for i in positions]
    # Tokens after the last trained one (a tool's last reply, a closing line) predict
    # nothing trained and, the model being causal, change no earlier position: the
    # update does not compute them.
    end = positions[-1] + 1 if positions else len(token_ids)
    return TrainSample(
        token_ids=list(token_ids[:end]),
        positions=positions,
        sampler_logprobs=[math.nan if lp is None else float(lp) for lp in sampled],
        advantage=float(advantage),
    )
