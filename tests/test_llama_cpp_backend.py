"""The opt-in llama-cpp-python backend (``.[llama]``) with the embedded default model
(Qwen2.5-Coder-0.5B GGUF); skipped where llama-cpp-python is not installed.

Short generations only: these run in CI on two cores.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is the opt-in [llama] extra and is not installed")
np = pytest.importorskip("numpy")

from sqlscout.backends.base import GenerationRequest, SamplingParams
from sqlscout.backends.llama_cpp import LlamaCppBackend, LlamaCppConfig, sample_token
from sqlscout.env.chat import ChatML
from sqlscout.drive import drive_episode
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode import Episode
from sqlscout.env.trace import StopReason
from sqlscout.errors import BackendError, ConfigError
from sqlscout.env.prompts import initial_messages
from sqlscout.runner import Runner, RunnerConfig
from sqlscout.env.sandbox import Database
from sqlscout.env.task import Task

GREEDY = SamplingParams(temperature=0.0, max_tokens=24, stop=("<|im_end|>", "<|endoftext|>"))


def _prompt(backend: LlamaCppBackend, question: str) -> str:
    return backend.chat.render([{"role": "user", "content": question}])


def test_chat_format_comes_from_the_gguf_template(llama_backend: LlamaCppBackend) -> None:
    assert "tokenizer.chat_template" in llama_backend.metadata
    messages = initial_messages("How many albums?")
    assert llama_backend.chat.render(messages) == ChatML().render(messages)
    assert llama_backend.chat.end_of_turn == "<|im_end|>"


def test_generation_text_ids_and_logprobs_agree(llama_backend: LlamaCppBackend) -> None:
    prompt = _prompt(llama_backend, "Reply with the single word: yes")
    g = llama_backend.generate([GenerationRequest(GREEDY, prompt=prompt)])[0]
    assert g.finish_reason in ("stop", "length") and g.error is None
    assert llama_backend.detokenize(g.token_ids) == g.text
    assert g.logprobs is not None and len(g.logprobs) == len(g.token_ids)
    assert all(lp <= 0.0 for lp in g.logprobs)
    if g.finish_reason == "stop":  # the end-of-turn marker is part of the text when emitted
        assert g.text.endswith("<|im_end|>")
    assert g.prompt_tokens == llama_backend.counter.count(prompt) == len(llama_backend.tokenize(prompt))


def test_max_tokens_and_stop_strings(llama_backend: LlamaCppBackend) -> None:
    prompt = _prompt(llama_backend, "Count from 1 to 50, separated by spaces.")
    cut = llama_backend.generate([GenerationRequest(GREEDY.with_(max_tokens=5), prompt=prompt)])[0]
    assert cut.finish_reason == "length" and len(cut.token_ids) == 5
    stopped = llama_backend.generate([GenerationRequest(GREEDY.with_(max_tokens=60, stop=(" 3",)), prompt=prompt)])[0]
    assert stopped.finish_reason == "stop" and " 3" in stopped.text and " 9" not in stopped.text


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


def test_batched_requests_agree_with_one_by_one_under_greedy(llama_backend: LlamaCppBackend) -> None:
    prompts = [_prompt(llama_backend, q) for q in ("What is 2+2? Answer with a number.", "Spell 'cat' backwards.")]
    params = GREEDY.with_(max_tokens=6)
    together = llama_backend.generate([GenerationRequest(params, prompt=p) for p in prompts])
    alone = [llama_backend.generate([GenerationRequest(params, prompt=p)])[0] for p in prompts]
    assert all(g.finish_reason in ("stop", "length") and g.error is None for g in together)
    # Batch composition changes llama.cpp's float sums slightly; greedy picks agree at the start.
    assert [g.token_ids[:2] for g in together] == [g.token_ids[:2] for g in alone]


def test_a_prompt_longer_than_the_context_is_an_error_result(llama_backend: LlamaCppBackend) -> None:
    g = llama_backend.generate([GenerationRequest(GREEDY, prompt_ids=[198] * 9000)])[0]
    assert g.finish_reason == "error" and "context holds 8192" in (g.error or "")


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


def test_runner_episodes_on_chinook_with_an_exact_budget(llama_backend: LlamaCppBackend, chinook_path: Path) -> None:
    tasks = [
        Task("albums", "How many albums are there?", chinook_path, gold_sql="SELECT COUNT(*) FROM Album"),
        Task("genres", "How many genres are there?", chinook_path, gold_sql="SELECT COUNT(*) FROM Genre"),
    ]
    config = RunnerConfig(
        episode=EpisodeConfig(max_rounds=2, max_turn_tokens=64, token_budget=4096),
        sampling=SamplingParams(temperature=0.0),
        max_batch=2,
    )
    with Runner(llama_backend, config) as runner:
        rollouts = sorted(runner.run(tasks), key=lambda r: r.index)
    assert [r.index for r in rollouts] == [0, 1]
    for rollout in rollouts:
        result = rollout.result
        assert result.stop_reason is not StopReason.BACKEND_ERROR
        assert 1 <= len(result.rounds) <= 3
        # The budget is counted in the model's own tokens: it equals the transcript's ids.
        assert result.total_tokens == len(rollout.token_ids)
        assert rollout.token_ids[: result.prompt_tokens] == llama_backend.tokenize(llama_backend.chat.render(result.messages))


def test_a_reply_cut_by_the_budget_is_a_recorded_outcome(llama_backend: LlamaCppBackend, chinook_path: Path) -> None:
    task = Task("cut", "List every table and describe each one in detail.", chinook_path)
    db = Database(chinook_path)
    probe = Episode(task, db, EpisodeConfig(), chat=llama_backend.chat, counter=llama_backend.counter)
    budget = probe.tokens_used + 8  # the first turn may write 8 tokens, and then nothing fits
    config = EpisodeConfig(token_budget=budget, final_turn_reserve=4)
    episode = Episode(task, db, config, chat=llama_backend.chat, counter=llama_backend.counter)
    result = drive_episode(episode, llama_backend, SamplingParams(temperature=0.0))
    assert result.rounds[0].finish_reason == "length" and result.rounds[0].completion_tokens == 8
    assert result.stop_reason is StopReason.BUDGET_EXHAUSTED
    assert result.total_tokens <= budget
