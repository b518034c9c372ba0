"""The update path on a tiny model: log-probabilities of exactly the trained tokens,
micro-batching that leaves the gradient unchanged, and the mask from real rollouts."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace

import pytest
import torch

from sqlscout.backends.offline_tokenizers import qwen3_5_tokenizer
from sqlscout.backends.scripted import ScriptedBackend, ScriptTurn
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.trace import SegmentKind
from sqlscout.runner import RunnerConfig, run_all
from sqlscout.env.task import Task
from sqlscout.train.config import LossConfig, OptimConfig
from sqlscout.train.logprobs import Truncation, can_share_prefix, token_logprobs
from sqlscout.train.mask import TrainSample, train_sample, trainable_mask
from sqlscout.train.update import UpdateContext, grpo_update, micro_batches, pad_batch, prefix_batches

from conftest import CHINOOK


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny_model(vocab: int = 64, seed: int = 0) -> torch.nn.Module:
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(
        "qwen3_5_text", vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, linear_num_key_heads=2,
        linear_num_value_heads=2, linear_key_head_dim=8, linear_value_head_dim=8,
        layer_types=["linear_attention", "full_attention"], tie_word_embeddings=True,
    )  # fmt: skip
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(cfg)


def sample(ids: list[int], positions: list[int], advantage: float) -> TrainSample:
    return TrainSample(ids, positions, [float("nan")] * len(positions), advantage)


SAMPLES = [
    sample([1, 5, 7, 9, 11, 3, 4], [3, 4, 6], 1.0),
    sample([2, 6, 8, 10], [2, 3], -0.5),
    sample([3, 3, 3, 12, 13, 14, 15, 16, 17], [4, 5, 8], 0.25),
    sample([4, 20, 21], [1, 2], -0.75),
]


def test_token_logprobs_are_the_log_softmax_at_the_trained_tokens_only():
    model = tiny_model()
    ids, attention, trained = pad_batch(SAMPLES, pad_id=0, device=torch.device("cpu"))
    logp, entropy, kept = token_logprobs(model, ids, attention, trained, temperature=0.7, entropy_stride=1)
    full = model(input_ids=ids, attention_mask=attention).logits.float() / 0.7
    expected, ent = [], []
    for row, s in enumerate(SAMPLES):
        for t in s.positions:
            dist = full[row, t - 1].log_softmax(-1)
            expected.append(dist[ids[row, t]].item())
            ent.append(-(dist.exp() * dist).sum().item())
    assert logp.shape == (sum(s.n_trained for s in SAMPLES),)
    assert logp.tolist() == pytest.approx(expected, abs=1e-5)
    assert entropy.tolist() == pytest.approx(ent, abs=1e-5)
    assert kept.tolist() == [0.0] * len(expected)  # no truncation asked: the whole distribution


def _update(samples, micro_batch_tokens, aggregation, mini_batches=1):
    model = tiny_model()
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    before = [p.detach().clone() for p in model.parameters()]
    ctx = UpdateContext(model, LossConfig(aggregation=aggregation, normalizer=16.0), temperature=1.0, kl_coef=0.0,
                        reference=None, pad_id=0)  # fmt: skip
    optim = OptimConfig(micro_batch_tokens=micro_batch_tokens, mini_batches=mini_batches, max_grad_norm=None)
    stats = grpo_update(ctx, opt, None, samples, optim)
    return [p.detach() - b for p, b in zip(model.parameters(), before)], stats


@pytest.mark.parametrize("aggregation", ["constant", "token-mean", "sequence-mean"])
def test_micro_batching_does_not_change_the_update(aggregation):
    whole, stats_whole = _update(SAMPLES, 10_000, aggregation)
    split, stats_split = _update(SAMPLES, 5, aggregation)  # every episode alone
    assert stats_whole.micro_batches == 1 and stats_split.micro_batches == 4
    for a, b in zip(whole, split):
        assert torch.allclose(a, b, atol=1e-6)
    assert any(d.abs().sum() > 0 for d in whole)
    assert stats_whole.loss == pytest.approx(stats_split.loss, abs=1e-6)
    assert stats_whole.tokens == stats_split.tokens == 10


def test_zero_advantages_leave_the_model_unchanged():
    flat = [TrainSample(s.token_ids, s.positions, s.sampler_logprobs, 0.0) for s in SAMPLES]
    deltas, stats = _update(flat, 10_000, "constant")
    assert all(d.abs().max() == 0 for d in deltas)
    assert stats.clip_frac == 0.0


def test_positive_advantage_raises_the_trained_tokens_probability():
    model = tiny_model()
    s = sample([1, 5, 7, 9, 11], [3, 4], 1.0)
    ids, attention, trained = pad_batch([s], 0, torch.device("cpu"))
    before = token_logprobs(model, ids, attention, trained)[0].sum().item()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    ctx = UpdateContext(model, LossConfig(aggregation="token-mean"), temperature=1.0, kl_coef=0.0, reference=None, pad_id=0)
    grpo_update(ctx, opt, None, [s], OptimConfig(micro_batch_tokens=100, max_grad_norm=None))
    after = token_logprobs(model, ids, attention, trained)[0].sum().item()
    assert after > before


def test_several_mini_batches_use_the_pre_update_policy_and_clip():
    deltas, stats = _update(SAMPLES, 10_000, "token-mean", mini_batches=2)
    assert all(s.old_logprobs is not None for s in SAMPLES)
    assert any(d.abs().sum() > 0 for d in deltas)
    for s in SAMPLES:
        s.old_logprobs = s.old_kept_lognorm = None


def test_the_clip_binds_exactly_when_the_policy_has_moved_since_sampling():
    """One update per batch (the recipe): pi_old is the current policy, the ratio is 1 and
    the clip never binds. With two mini-batches the second is taken after the first
    moved the policy: its ratios leave [0.8, 1.28] and the clip binds."""
    def run(mini_batches: int):
        model = tiny_model()
        samples = [TrainSample(list(s.token_ids), list(s.positions), list(s.sampler_logprobs), 50 * s.advantage) for s in SAMPLES * 2]
        ctx = UpdateContext(model, LossConfig(aggregation="token-mean"), temperature=1.0, kl_coef=0.0, reference=None, pad_id=0)
        return grpo_update(ctx, torch.optim.SGD(model.parameters(), lr=1.0), None, samples,
                           OptimConfig(micro_batch_tokens=10_000, mini_batches=mini_batches, max_grad_norm=None))  # fmt: skip

    assert run(1).clip_frac == 0.0
    assert run(2).clip_frac > 0.05


def test_micro_batches_pack_by_padded_size():
    assert micro_batches([5, 9, 3, 8], 18) == [[1, 3], [0, 2]]
    assert micro_batches([100, 1], 10) == [[0], [1]]  # an oversized episode goes alone
    assert sorted(i for g in micro_batches([4] * 7, 12) for i in g) == list(range(7))


# -- the mask from real rollouts --------------------------------------------------


def _call(tool: str, **args: object) -> str:
    return json.dumps({"tool": tool, "args": args})


def test_mask_from_runner_segments_keeps_exactly_the_model_text():
    tok = qwen3_5_tokenizer()
    turns = [
        "<think>\nlook\n</think>\n\n" + _call("list_tables"),
        _call("run_query", sql="SELECT COUNT(*) FROM Genre"),
        "SELECT COUNT(*) FROM Genre",  # answer to the forced final turn
    ]

    def script(turn: ScriptTurn) -> str:
        return turns[min(turn.turn, 2)]

    backend = ScriptedBackend(script, tokenizer=tok)
    config = RunnerConfig(episode=EpisodeConfig(max_rounds=2))
    task = Task("q", "How many genres are there?", CHINOOK, gold_sql="SELECT COUNT(*) FROM Genre")
    (rollout,) = run_all(backend, [task], config)
    s = train_sample(rollout.token_ids, rollout.segments, rollout.logprobs, advantage=1.0)
    trained_text = tok.decode([rollout.token_ids[i] for i in s.positions])
    assert trained_text == "".join(t + "<|im_end|>" for t in turns)
    assert "tool turns left" not in trained_text  # budget lines
    assert "exploration limit is reached" not in trained_text  # the forced final message
    assert "Genre" in tok.decode(rollout.token_ids) and "Result 1 of list_tables" not in trained_text
    assert s.sampler_logprobs == [0.0] * len(s.positions)  # the scripted sampler's own values
    assert s.token_ids == rollout.token_ids[: s.positions[-1] + 1]  # nothing after the last trained token
    env = [i for kind, a, b in rollout.segments if kind is not SegmentKind.MODEL for i in range(a, b)]
    assert not set(env) & set(s.positions)
    assert all(rollout.logprobs[i] is None for i in env)


def test_tokens_after_the_last_trained_one_are_left_out_and_change_nothing():
    """A tool's last reply after the model's last turn predicts nothing trained and, the
    model being causal, changes no earlier position: the update's sample stops before it."""
    K = SegmentKind
    ids = [1, 5, 7, 9, 11, 2, 30, 31, 4, 32, 33, 34]
    s = train_sample(ids, [(K.PROMPT, 0, 6), (K.MODEL, 6, 8), (K.ENV, 8, 9), (K.MODEL, 9, 10), (K.ENV, 10, 12)], None, 1.0)
    assert s.token_ids == ids[:10] and s.positions == [6, 7, 9]
    model = tiny_attention_model()
    whole = TrainSample(ids, s.positions, s.sampler_logprobs, 1.0)
    trimmed = token_logprobs(model, *pad_batch([s], 0, torch.device("cpu"))).logp
    untrimmed = token_logprobs(model, *pad_batch([whole], 0, torch.device("cpu"))).logp
    assert torch.allclose(trimmed, untrimmed, atol=1e-6)


def test_trainable_mask_rejects_spans_outside_the_sequence():
    with pytest.raises(ValueError):
        trainable_mask([(SegmentKind.MODEL, 3, 9)], 5)
    with pytest.raises(ValueError):
        train_sample([1, 2], [(SegmentKind.MODEL, 0, 2)], None, 1.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_selective_log_softmax_matches_autograd(dtype, monkeypatch):
    from sqlscout.train import logprobs as lp

    monkeypatch.setattr(lp, "_CHUNK_ROWS", 3)  # several chunks
    torch.manual_seed(0)
    logits = (torch.randn(7, 50) * 3).to(dtype).requires_grad_()
    targets = torch.randint(0, 50, (7,))
    weights = torch.randn(7)
    logp, ent, _ = lp._SelectiveLogSoftmax.apply(logits, targets, 0.6, 1, None)
    (logp * weights).sum().backward()
    reference = logits.detach().float().requires_grad_()
    dist = (reference / 0.6).log_softmax(-1)
    expected = dist.gather(-1, targets[:, None]).squeeze(-1)
    (expected * weights).sum().backward()
    tol = 1e-5 if dtype is torch.float32 else 2e-2
    assert torch.allclose(logp, expected, atol=tol)
    assert torch.allclose(ent, -(dist.exp() * dist).sum(-1), atol=tol)
    assert torch.allclose(logits.grad.float(), reference.grad, atol=tol)
    strided = lp._SelectiveLogSoftmax.apply(logits.detach(), targets, 0.6, 2, None)[1]  # rows 0, 2, 4, 6 across chunks of 3
    assert torch.isnan(strided[1::2]).all()
    assert torch.allclose(strided[0::2], ent[0::2], atol=tol)


@pytest.mark.parametrize("top_k,top_p", [(5, 0.8), (0, 0.5), (20, 1.0), (3, 0.999)])
def test_kept_mass_is_the_hf_samplers_cut(top_k, top_p, monkeypatch):
    """logp - kept_lognorm is the log-probability the hf sampler reports for the token it drew."""
    from sqlscout.backends.base import SamplingParams
    from sqlscout.backends.hf import sample_tokens
    from sqlscout.train import logprobs as lp

    monkeypatch.setattr(lp, "_CHUNK_ROWS", 4)
    torch.manual_seed(1)
    logits = torch.randn(9, 64) * 2
    params = SamplingParams(temperature=0.6, top_p=top_p, top_k=top_k)
    drawn, reported = sample_tokens(logits, [params] * 9, [torch.Generator().manual_seed(i) for i in range(9)])
    logp, _, kept = lp._SelectiveLogSoftmax.apply(logits, torch.tensor(drawn), 0.6, 0, lp.Truncation(top_k, top_p))
    assert (logp - kept).tolist() == pytest.approx(reported, abs=1e-5)
    assert (kept <= 1e-6).all() and ((kept < -1e-3).any() or (top_k in (0, 20) and top_p == 1.0))


def test_sampler_replica_follows_the_policy_after_an_update():
    from types import SimpleNamespace

    from sqlscout.train.sampler import _replica_of, _sync_replica

    model = tiny_model()
    accelerator = SimpleNamespace(mixed_precision="no", device=torch.device("cpu"))
    replica = _replica_of(model, accelerator)
    _sync_replica(replica, model)
    ids = torch.tensor([[1, 5, 7, 9, 11]])
    assert torch.equal(replica(input_ids=ids).logits, model(input_ids=ids).logits)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    ctx = UpdateContext(model, LossConfig(), temperature=1.0, kl_coef=0.0, reference=None, pad_id=0)
    grpo_update(ctx, opt, None, SAMPLES, OptimConfig(micro_batch_tokens=100, max_grad_norm=None))
    assert not torch.equal(replica(input_ids=ids).logits, model(input_ids=ids).logits)
    _sync_replica(replica, model)
    assert torch.equal(replica(input_ids=ids).logits, model(input_ids=ids).logits)


# -- the model's own tokenizer ---------------------------------------------------------


def test_the_policy_takes_the_models_own_tokenizer_and_refuses_another(tmp_path):
    from sqlscout.backends.offline_tokenizers import qwen3_tokenizer
    from tiny_models import tiny_qwen3, tiny_qwen3_5
    from sqlscout.errors import ConfigError
    from sqlscout.train.config import ModelConfig
    from sqlscout.train.model import build_policy

    model, tokenizer = tiny_qwen3(seed=0)
    model.save_pretrained(tmp_path / "qwen3")
    tokenizer.save_pretrained(tmp_path / "qwen3")
    policy = build_policy(ModelConfig(name_or_path=str(tmp_path / "qwen3"), gradient_checkpointing=False), kl_enabled=False, seed=0)
    text = "<|im_start|>user\nHow many singers?<|im_end|>\n<|im_start|>assistant\n"
    assert policy.tokenizer.encode(text, add_special_tokens=False) == tokenizer.encode(text, add_special_tokens=False)

    model, tokenizer = tiny_qwen3_5(seed=0)  # Qwen3.5 weights ...
    model.save_pretrained(tmp_path / "qwen3.5")
    tokenizer.save_pretrained(tmp_path / "qwen3.5")
    qwen3_tokenizer().save_pretrained(tmp_path / "other")  # ... paired with Qwen3's tokenizer (a smaller vocabulary)
    with pytest.raises(ConfigError, match=r"ids \[248044, 248046\]: the tokenizer is not this model's; leave model.tokenizer null"):
        build_policy(ModelConfig(name_or_path=str(tmp_path / "qwen3.5"), tokenizer=str(tmp_path / "other"),
                                 gradient_checkpointing=False), kl_enabled=False, seed=0)  # fmt: skip


# -- trainer and sampler on one distribution ---------------------------------------------


def _sampler(name: str, where) -> tuple[object, torch.nn.Module]:
    """(backend, the trainer's model with the same weights) for ``hf-qwen3``, ``hf-qwen3.5`` or ``vllm-qwen3``."""
    from transformers import AutoModelForCausalLM

    from sqlscout.backends.hf import HFBackend, HFConfig
    from tiny_models import tiny_qwen3, tiny_qwen3_5

    if name == "hf-qwen3.5":
        model, tokenizer = tiny_qwen3_5(seed=0)
    else:  # vLLM's CPU attention takes no head_dim below 32 (the default tiny model has 16)
        model, tokenizer = tiny_qwen3(seed=0, hidden_size=256 if name.startswith("vllm") else 64)
    if name.startswith("hf"):
        return HFBackend(model, tokenizer, HFConfig(device="cpu")), model
    from sqlscout.backends.vllm import VLLMBackend, VLLMConfig

    model.save_pretrained(where)
    tokenizer.save_pretrained(where)
    device = {} if torch.cuda.is_available() else {"dtype": "float32", "gpu_memory_utilization": 0.1}
    backend = VLLMBackend(where, VLLMConfig(max_model_len=4096, enforce_eager=True, **device))
    return backend, AutoModelForCausalLM.from_pretrained(where, dtype=torch.float32)


NO_VLLM = pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")


@pytest.mark.parametrize("name", ["hf-qwen3", "hf-qwen3.5", pytest.param("vllm-qwen3", marks=NO_VLLM)])
def test_same_weights_in_sampler_and_trainer_give_importance_weights_of_one(name, tmp_path):
    """Sampling at T 0.6 / top-p 0.95 / top-k 20, the trainer's probability of every
    sampled token in the same processed distribution equals the sampler's: every
    truncated IS weight is 1 (the full-vocabulary one was the kept mass). vLLM computes
    in its own kernels (bf16 on a GPU), hence its looser tolerance."""
    from sqlscout.backends.base import SamplingParams
    from sqlscout.train.logprobs import Truncation

    backend, model = _sampler(name, tmp_path / "model")
    sampling = SamplingParams(temperature=0.6, top_p=0.95, top_k=20)
    config = RunnerConfig(episode=EpisodeConfig(max_rounds=1, max_turn_tokens=24), sampling=sampling, seed=3)
    rollouts = run_all(backend, [Task("q", "How many genres?", str(CHINOOK))], config, samples=3)
    backend.close()
    samples = [train_sample(r.token_ids, r.segments, r.logprobs, 1.0) for r in rollouts]
    assert sum(s.n_trained for s in samples) >= 3 * 24  # a model turn and the forced final one, each
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    truncation = Truncation(sampling.top_k, sampling.top_p)
    ctx = UpdateContext(model, LossConfig(is_cap=100.0), temperature=0.6, kl_coef=0.0, reference=None, pad_id=0,
                        truncation=truncation)  # fmt: skip
    stats = grpo_update(ctx, optimizer, None, samples, OptimConfig(micro_batch_tokens=100_000))
    tol = 1e-4 if name.startswith("hf") else 2e-2
    assert 1 - tol < stats.is_weight_min <= stats.is_weight_max < 1 + tol, (stats.is_weight_min, stats.is_weight_max)
    # What the trainer computed before: the full-vocabulary probability over the processed one.
    whole = grpo_update(replace(ctx, truncation=None), optimizer, None, samples, OptimConfig(micro_batch_tokens=100_000))
    assert whole.is_weight_max < 0.999


def tiny_attention_model(vocab: int = 64, seed: int = 0) -> torch.nn.Module:
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(
        "qwen2", vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=True,
    )  # fmt: skip
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(cfg)


# Two groups: three episodes after one 6-token prompt, two after another, one alone.
GROUPED = [
    sample([1, 5, 7, 9, 11, 2, 30, 31, 4, 32], [6, 7, 9], 1.0),
    sample([1, 5, 7, 9, 11, 2, 33, 4, 34, 35, 36], [6, 8, 9, 10], -0.5),
    sample([1, 5, 7, 9, 11, 2, 37], [6], -0.5),
    sample([3, 3, 8, 2, 40, 41], [4, 5], 0.5),
    sample([3, 3, 8, 2, 42, 43, 44, 45], [4, 5, 7], -0.5),
    sample([6, 2, 50, 51], [2, 3], 0.25),
]


def _lora_update(samples, share_prefix: bool, kl_coef: float = 0.05, micro_batch_tokens: int = 8192, per_micro_batch: bool = False):
    from peft import LoraConfig, get_peft_model

    from sqlscout.train.model import PolicyModel

    model = get_peft_model(tiny_attention_model(), LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False))
    policy = PolicyModel(model=model, tokenizer=None, reference_model=None, lora=True)
    params = [p for p in model.parameters() if p.requires_grad]
    before = [p.detach().clone() for p in params]
    ctx = UpdateContext(model, LossConfig(), temperature=0.7, kl_coef=kl_coef, reference=policy.reference_fn(0.7),
                        pad_id=0, truncation=Truncation(20, 0.95), share_prefix=share_prefix,
                        prompt_per_micro_batch=per_micro_batch)  # fmt: skip
    optim = OptimConfig(max_grad_norm=None, micro_batch_tokens=micro_batch_tokens)
    stats = grpo_update(ctx, torch.optim.SGD(params, lr=1.0), None, samples, optim)
    return [p.detach() - b for p, b in zip(params, before)], stats


def test_a_groups_shared_prompt_computed_once_gives_the_same_update():
    """The prompt of a group goes through the model once and every episode continues from
    its cache, the gradient flowing through it: loss, KL to the adapters-off reference and
    every adapter's change equal the episode-by-episode update's."""
    assert can_share_prefix(tiny_attention_model()) and not can_share_prefix(tiny_model())
    assert prefix_batches(GROUPED, 10_000) == [([1, 0, 2], 5), ([4, 3], 3), ([5], 0)]
    assert prefix_batches(GROUPED, 15) == [([1], 5), ([0, 2], 5), ([4, 3], 3), ([5], 0)]  # 5 + 2 x (10 - 5) fits, 5 + 2 x 6 does not
    whole, stats_whole = _lora_update(GROUPED, share_prefix=False)
    shared, stats_shared = _lora_update(GROUPED, share_prefix=True)
    assert stats_whole.micro_batches == 1 and stats_shared.micro_batches == 3
    assert stats_shared.tokens == stats_whole.tokens == 15
    assert stats_shared.loss == pytest.approx(stats_whole.loss, rel=1e-5)
    assert stats_shared.kl == pytest.approx(stats_whole.kl, rel=1e-4) and stats_whole.kl > 0
    assert stats_shared.is_weight == pytest.approx(stats_whole.is_weight, rel=1e-6)
    largest = max(float(d.abs().max()) for d in whole)
    assert largest > 1e-4
    assert max(float((a - b).abs().max()) for a, b in zip(whole, shared)) < 1e-4 * largest


def test_a_group_over_several_micro_batches_computes_its_prompt_once_for_the_same_update():
    """Issue 38: a group whose episodes fill several micro-batches computed its prompt in
    each (on the 0.5B, 3.4-3.9 tokens computed per trained token). The prompt now goes
    through the model once; the micro-batches continue from a detached copy of its cache
    and its gradient goes back through it once, after the last: the update is the same."""
    whole, stats_whole = _lora_update(GROUPED, share_prefix=False)
    shared, stats_shared = _lora_update(GROUPED, share_prefix=True, micro_batch_tokens=15)
    assert stats_shared.micro_batches == 4  # [1], [0, 2] after one prompt; [4, 3]; [5]
    # 11 for the first prompt's [1] (5 + 6), then 2 x 5 for [0, 2] without the prompt again;
    # 3 + 2 x 5 for [4, 3]; 4 for [5]. Computing the prompt per micro-batch made it 43.
    assert stats_shared.computed == 11 + 10 + 13 + 4
    assert stats_shared.loss == pytest.approx(stats_whole.loss, rel=1e-5)
    assert stats_shared.kl == pytest.approx(stats_whole.kl, rel=1e-4) and stats_whole.kl > 0
    largest = max(float(d.abs().max()) for d in whole)
    assert largest > 1e-4
    assert max(float((a - b).abs().max()) for a, b in zip(whole, shared)) < 1e-4 * largest


def test_an_episode_over_the_bound_after_a_shared_prompt_goes_through_whole_and_recomputed():
    """An episode longer than micro_batch_tokens is recomputed layer by layer, which keeps no
    key/value cache: in a group it must not continue from the shared prompt (the forward
    dropped the cache and failed, in the benchmark's per-micro-batch variant), and the update
    is still the unshared one, computing the prompt once or per micro-batch."""
    long = sample([1, 5, 7, 9, 11, 2, *range(20, 40)], [6, 10, 20, 25], 1.0)  # 26 tokens, the group's 6-token prompt
    group = [long, *GROUPED[:3]]
    assert prefix_batches(group, 15) == [([0], 0), ([2], 5), ([1, 3], 5)]
    whole, stats_whole = _lora_update(group, share_prefix=False)
    for per_micro_batch in (False, True):
        shared, stats_shared = _lora_update(group, share_prefix=True, micro_batch_tokens=15, per_micro_batch=per_micro_batch)
        assert stats_shared.recomputed == 1
        assert stats_shared.loss == pytest.approx(stats_whole.loss, rel=1e-5)
        largest = max(float(d.abs().max()) for d in whole)
        assert max(float((a - b).abs().max()) for a, b in zip(whole, shared)) < 1e-4 * largest


def test_a_shared_prefix_that_would_cover_a_trained_token_is_refused():
    s = GROUPED[0]
    ids, attention, trained = pad_batch([s, s], 0, torch.device("cpu"))
    with pytest.raises(ValueError, match="shared prefix"):
        token_logprobs(tiny_attention_model(), ids, attention, trained, prefix=6)


def _saved_bytes_and_update(samples, micro_batch_tokens: int):
    """The bytes autograd keeps for the backward pass over a whole update (one micro-batch
    here: its peak), and the adapters' change."""
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(tiny_attention_model(), LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False))
    params = [p for p in model.parameters() if p.requires_grad]
    before = [p.detach().clone() for p in params]
    ctx = UpdateContext(model, LossConfig(), temperature=1.0, kl_coef=0.0, reference=None, pad_id=0, share_prefix=True)
    saved = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append(t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        grpo_update(ctx, torch.optim.SGD(params, lr=1.0), None, samples,
                    OptimConfig(micro_batch_tokens=micro_batch_tokens, max_grad_norm=None))  # fmt: skip
    assert not model.is_activation_checkpointing  # as it was before the update
    return sum(saved), [p.detach() - b for p, b in zip(params, before)]


def test_an_episode_longer_than_the_micro_batch_bound_is_recomputed_not_held():
    """micro_batch_tokens bounds what a micro-batch keeps for its backward pass, also when
    one episode alone is longer than the bound (it is then recomputed layer by layer): the
    update is the same, what it holds is a fraction."""
    torch.manual_seed(1)
    long = sample(torch.randint(1, 64, (400,)).tolist(), list(range(300, 400, 3)), 1.0)
    bounded, step_bounded = _saved_bytes_and_update([long], micro_batch_tokens=100)
    whole, step_whole = _saved_bytes_and_update([long], micro_batch_tokens=10_000)
    assert bounded < whole / 3, (bounded, whole)
    largest = max(float(d.abs().max()) for d in step_whole)
    assert largest > 1e-4
    assert max(float((a - b).abs().max()) for a, b in zip(step_whole, step_bounded)) < 1e-4 * largest


@pytest.mark.parametrize("prefix", [0, 2])
def test_attention_under_a_padding_mask_runs_the_fused_kernel(prefix):
    """The update's batches are right-padded (and continue a shared prompt's cache): the
    attention must still take CPU flash attention, which keeps no (heads, L, L) weights
    for the backward pass, not the math kernel, which keeps them per layer. Checked on
    the architecture the CPU recipe trains (Qwen2: grouped-query attention)."""
    from torch.profiler import profile
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(vocab_size=64, hidden_size=64, intermediate_size=64, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2))  # fmt: skip
    group = [sample([1, 5, 7, 9, 11, 3, 4], [4, 6], 1.0), sample([1, 5, 7, 10], [3], -0.5)]
    ids, attention, trained = pad_batch(group, pad_id=0, device=torch.device("cpu"))
    assert not bool(attention.all())  # padded
    with profile() as prof:
        token_logprobs(model, ids, attention, trained, prefix=prefix).logp.sum().backward()
    ops = {e.name for e in prof.events()}
    assert "aten::_scaled_dot_product_flash_attention_for_cpu" in ops
    assert not any("attention_math" in op for op in ops)
