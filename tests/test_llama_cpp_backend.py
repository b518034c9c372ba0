"""The opt-in llama-cpp-python backend (``.[llama]``) with the embedded default model
(Qwen2.5-Coder-0.5B GGUF); skipped where llama-cpp-python is not installed.

The contract both GGUF backends keep (text, ids and logprobs, stops, batching, the
runner, budgets) is tested once for both in tests/test_llama_server_backend.py; here is
what only this backend has. Short generations only: these run in CI on two cores.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is the opt-in [llama] extra and is not installed")
np = pytest.importorskip("numpy")

from sqlscout.backends.base import GenerationRequest, SamplingParams
from sqlscout.backends.llama_cpp import LlamaCppBackend, LlamaCppConfig, sample_token
from sqlscout.env.chat import ChatML
from sqlscout.errors import BackendError, ConfigError

GREEDY = SamplingParams(temperature=0.0, max_tokens=24, stop=("<|im_end|>", "<|endoftext|>"))


def _prompt(backend: LlamaCppBackend, question: str) -> str:
    return backend.chat.render([{"role": "user", "content": question}])


def test_a_growing_prompt_reuses_its_cached_prefix(llama_backend: LlamaCppBackend) -> None:
    prompt_ids = llama_backend.tokenize(_prompt(llama_backend, "Name one SQL keyword."))
    first = llama_backend.generate([GenerationRequest(GREEDY, prompt_ids=prompt_ids)])[0]
    glue = llama_backend.tokenize(("" if first.text.endswith("<|im_end|>") else "<|im_end|>") + ChatML().next_turn("Another one."))
    longer = prompt_ids + first.token_ids + glue
    before = llama_backend.stats.reused_tokens, llama_backend.stats.evaluated_tokens
    second = llama_backend.generate([GenerationRequest(GREEDY, prompt_ids=longer)])[0]
    reused = llama_backend.stats.reused_tokens - before[0]
    evaluated = llama_backend.stats.evaluated_tokens - before[1]
    # Everything but the last sampled token (never fed back) came from the cache.
    assert reused == len(prompt_ids) + len(first.token_ids) - 1
    assert evaluated == len(longer) - reused + len(second.token_ids) - 1


def test_interleaved_episodes_keep_their_own_prefixes(llama_backend: LlamaCppBackend) -> None:
    a = llama_backend.tokenize(_prompt(llama_backend, "Say A."))
    b = llama_backend.tokenize(_prompt(llama_backend, "Say B, please, in one word."))
    params = GREEDY.with_(max_tokens=4)
    ga, gb = llama_backend.generate([GenerationRequest(params, prompt_ids=a), GenerationRequest(params, prompt_ids=b)])
    llama_backend.generate([GenerationRequest(params, prompt_ids=b + gb.token_ids)])
    before = llama_backend.stats.reused_tokens
    llama_backend.generate([GenerationRequest(params, prompt_ids=a + ga.token_ids + [198])])
    assert llama_backend.stats.reused_tokens - before == len(a) + len(ga.token_ids) - 1


def test_samples_of_one_prompt_share_its_cells(llama_backend: LlamaCppBackend) -> None:
    prompt = llama_backend.tokenize(_prompt(llama_backend, "Pick a random colour and name it."))
    params = SamplingParams(max_tokens=3, stop=("<|im_end|>",))
    before = llama_backend.stats.reused_tokens, llama_backend.stats.evaluated_tokens
    group = llama_backend.generate([GenerationRequest(params.with_(seed=s), prompt_ids=prompt) for s in range(3)])
    assert all(g.error is None for g in group)
    # The first sample evaluates the prompt; the other two share its cells.
    assert llama_backend.stats.reused_tokens - before[0] >= 2 * (len(prompt) - 1)
    assert llama_backend.stats.evaluated_tokens - before[1] <= len(prompt) + 2 + 3 * 3


def test_sample_token_respects_top_k_and_seeds() -> None:
    logits = np.array([3.0, 2.9, 2.8, -5.0, -6.0])
    params = SamplingParams(temperature=1.0, top_k=2, top_p=1.0)
    draws = {sample_token(logits, params, np.random.default_rng(s))[0] for s in range(40)}
    assert draws == {0, 1}
    same = [sample_token(logits, params.with_(top_k=0), np.random.default_rng(7)) for _ in range(2)]
    assert same[0] == same[1]
    token, logprob = sample_token(logits, SamplingParams(temperature=1.0, top_k=1), np.random.default_rng(0))
    assert (token, logprob) == (0, 0.0)


def test_missing_file_and_bad_config_are_clear(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="model file not found"):
        LlamaCppBackend(tmp_path / "nope.gguf")
    not_gguf = tmp_path / "fake.gguf"
    not_gguf.write_bytes(b"not a model")
    with pytest.raises(BackendError, match="could not load"):
        LlamaCppBackend(not_gguf)
    with pytest.raises(ConfigError):
        LlamaCppConfig(slots=0)


