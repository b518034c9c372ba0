"""GRPO learns: a tiny model rewarded for writing one token learns to write it.

Episodes have the shape of the real ones — a prompt, a model turn, an environment turn
(forced tokens), a second model turn — and go through the trainer's own path: segments
→ ``train_sample`` (the mask) → group advantages → ``grpo_update`` (loss, truncated
correction against the sampler's log-probabilities, KL to a frozen copy, AdamW). If the
gradient's sign or the mask were wrong, the reward would not rise.
"""

from __future__ import annotations

import copy
import statistics

import pytest
import torch

from sqlscout.env.trace import SegmentKind
from sqlscout.train.advantages import group_advantages
from sqlscout.train.config import LossConfig, OptimConfig
from sqlscout.train.logprobs import token_logprobs
from sqlscout.train.mask import train_sample
from sqlscout.train.update import UpdateContext, grpo_update


pytestmark = pytest.mark.usefixtures("one_torch_thread")

VOCAB = 24
TARGET = 7
TURN = 5  # tokens per model turn
ENV = [3, 4, 3, 4]  # the environment's forced reply (never trained)
PROMPTS = [[1, 2, 9], [1, 2, 10], [1, 2, 11], [1, 2, 12]]
GROUP = 8
STEPS = 25


def tiny_policy() -> torch.nn.Module:
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(
        "qwen3", vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, tie_word_embeddings=True,
    )  # fmt: skip
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(cfg)


@torch.no_grad()
def sample_turn(model, ids: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, list[list[float]]]:
    """Append TURN sampled tokens to each row of ``ids``; their log-probabilities too."""
    logprobs: list[list[float]] = [[] for _ in range(ids.shape[0])]
    for _ in range(TURN):
        dist = model(input_ids=ids).logits[:, -1].float().log_softmax(-1)
        token = torch.multinomial(dist.exp(), 1, generator=generator)
        for row, (t, lp) in enumerate(zip(token[:, 0], dist.gather(1, token)[:, 0])):
            logprobs[row].append(float(lp))
        ids = torch.cat([ids, token], dim=1)
    return ids, logprobs


def play(model, generator: torch.Generator):
    """One step's episodes: GROUP per prompt (all sampled as one batch), with segments like the runner's."""
    model.eval()
    ids = torch.tensor([prompt for prompt in PROMPTS for _ in range(GROUP)])
    ids, first = sample_turn(model, ids, generator)
    ids = torch.cat([ids, torch.tensor([ENV] * ids.shape[0])], dim=1)
    ids, second = sample_turn(model, ids, generator)
    p, e = len(PROMPTS[0]), len(PROMPTS[0]) + TURN
    segments = [
        (SegmentKind.PROMPT, 0, p),
        (SegmentKind.MODEL, p, e),
        (SegmentKind.ENV, e, e + len(ENV)),
        (SegmentKind.MODEL, e + len(ENV), ids.shape[1]),
    ]
    episodes = []
    for row in range(ids.shape[0]):
        tokens = ids[row].tolist()
        logprobs: list[float | None] = [None] * len(tokens)
        logprobs[p:e] = first[row]
        logprobs[e + len(ENV) :] = second[row]
        written = tokens[p:e] + tokens[e + len(ENV) :]
        episodes.append((tokens, segments, logprobs, written.count(TARGET) / len(written)))
    return [episodes[i : i + GROUP] for i in range(0, len(episodes), GROUP)]


def test_mean_reward_rises_within_a_few_dozen_steps():
    model = tiny_policy()
    reference = copy.deepcopy(model).eval()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(0)

    def ref_fn(ids, attention, trained):
        return token_logprobs(reference, ids, attention, trained)[0]

    rewards = []
    for _ in range(STEPS):
        samples, step_rewards = [], []
        for group in play(model, generator):
            r = [reward for *_, reward in group]
            step_rewards += r
            for (tokens, segments, logprobs, _), advantage in zip(group, group_advantages(r)):
                samples.append(train_sample(tokens, segments, logprobs, advantage))
        rewards.append(statistics.fmean(step_rewards))
        # the recipe: constant normaliser, 0.2/0.28, TIS
        ctx = UpdateContext(model, LossConfig(), temperature=1.0, kl_coef=0.01, reference=ref_fn, pad_id=0)
        stats = grpo_update(ctx, optimizer, None, samples, OptimConfig(micro_batch_tokens=256))
        assert stats.tokens == len(samples) * 2 * TURN  # exactly the model's tokens
    start, end = statistics.fmean(rewards[:5]), statistics.fmean(rewards[-5:])
    assert start < 0.15  # about 1 / VOCAB before training
    assert end > 0.5, f"mean reward went from {start:.3f} to {end:.3f}: {[round(r, 2) for r in rewards]}"
    assert stats.kl > 0  # the policy moved away from its reference
