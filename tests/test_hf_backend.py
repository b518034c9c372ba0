"""The transformers backend with tiny random Qwen3 / Qwen3.5 models and the real tokenizers."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from sqlscout.backends.base import GenerationRequest, SamplingParams  # noqa: E402
from sqlscout.backends.hf import HFBackend, HFConfig, is_out_of_memory, load_hf, sample_token  # noqa: E402
from tiny_models import tiny_qwen3, tiny_qwen3_5  # noqa: E402
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode import SegmentKind  # noqa: E402
from sqlscout.errors import BackendError  # noqa: E402
from sqlscout.runner import RunnerConfig, run_all  # noqa: E402
from sqlscout.env.task import Task  # noqa: E402

from conftest import CHINOOK  # noqa: E402


@pytest.fixture(scope="module")
def qwen3() -> HFBackend:
    model, tokenizer = tiny_qwen3(seed=0)
    return HFBackend(model, tokenizer)


@pytest.fixture(scope="module")
def qwen3_5() -> HFBackend:
    model, tokenizer = tiny_qwen3_5(seed=0)
    return HFBackend(model, tokenizer)


def requests(backend: HFBackend, params: list[SamplingParams]) -> list[GenerationRequest]:
    questions = ["How many albums?", "Which artist has the most tracks in the whole store?", "Hi"]
    prompts = [backend.chat.render([{"role": "user", "content": q}]) for q in questions]
    return [GenerationRequest(p, prompt_ids=backend.tokenize(text)) for p, text in zip(params, prompts)]


def reference_logprobs(backend: HFBackend, request: GenerationRequest, ids: list[int]) -> list[float]:
    """Recompute each sampled token's log-probability with one unbatched forward pass."""
    prompt = list(request.prompt_ids)
    with torch.no_grad():
        full = torch.tensor([prompt + ids], device=backend.device)
        logits = backend.model(full, logits_to_keep=len(ids) + 1).logits[0, :-1].float()
    p = request.params
    out = []
    for step, token in enumerate(ids):
        scaled = logits[step] / p.temperature
        values, indices = torch.topk(scaled, p.top_k)
        probs = torch.softmax(values, -1)
        keep = int(((torch.cumsum(probs, -1) - probs) < p.top_p).sum())
        lps = torch.log_softmax(values[:keep], -1)
        out.append(float(lps[(indices[:keep] == token).nonzero()[0, 0]]))
    return out


@pytest.mark.parametrize("name", ["qwen3", "qwen3_5"])
def test_batched_sampling_returns_ids_text_and_sampler_logprobs(name, request) -> None:
    backend: HFBackend = request.getfixturevalue(name)
    params = [
        SamplingParams(seed=1, max_tokens=5),
        SamplingParams(seed=2, max_tokens=9, temperature=1.0, top_p=0.8, top_k=50),
        SamplingParams(seed=3, max_tokens=3, temperature=0.3),
    ]
    reqs = requests(backend, params)
    gens = backend.generate(reqs)
    for gen, req in zip(gens, reqs):
        assert gen.finish_reason == "length" and len(gen.token_ids) == req.params.max_tokens
        assert gen.text == backend.tokenizer.decode(gen.token_ids)
        assert gen.prompt_tokens == len(req.prompt_ids)
        assert gen.logprobs == pytest.approx(reference_logprobs(backend, req, gen.token_ids), abs=2e-4)
    # Each row has its own generator: the same request alone samples the same tokens.
    alone = backend.generate([reqs[1]])[0]
    assert alone.token_ids == gens[1].token_ids
    # The same seeds give the same tokens; another seed other tokens.
    assert [g.token_ids for g in backend.generate(reqs)] == [g.token_ids for g in gens]
    other = backend.generate([GenerationRequest(params[1].with_(seed=99), prompt_ids=reqs[1].prompt_ids)])[0]
    assert other.token_ids != gens[1].token_ids


def test_greedy_and_top_k_one_agree_with_certain_logprobs(qwen3) -> None:
    (req,) = requests(qwen3, [SamplingParams(top_k=1, max_tokens=6, seed=5)])[:1]
    sampled = qwen3.generate([req])[0]
    greedy = qwen3.generate([GenerationRequest(req.params.with_(temperature=0.0), prompt_ids=req.prompt_ids)])[0]
    assert sampled.token_ids == greedy.token_ids
    assert sampled.logprobs == [0.0] * 6
    assert all(lp < 0 for lp in greedy.logprobs)  # greedy reports the model's own log-softmax


def test_stop_strings_end_a_row_where_they_appear(qwen3) -> None:
    (req,) = requests(qwen3, [SamplingParams(temperature=0.0, max_tokens=8)])[:1]
    free = qwen3.generate([req])[0]
    stop = qwen3.tokenizer.decode(free.token_ids[2:4])
    cut = qwen3.generate([GenerationRequest(req.params.with_(stop=(stop,)), prompt_ids=req.prompt_ids)])[0]
    assert cut.finish_reason == "stop"
    assert cut.text.endswith(stop) or stop in cut.text
    assert cut.token_ids == free.token_ids[: len(cut.token_ids)] and len(cut.token_ids) <= 4


def test_an_end_of_turn_token_ends_the_row_and_stays_in_the_text() -> None:
    model, tokenizer = tiny_qwen3(seed=0)
    (req,) = requests(HFBackend(model, tokenizer), [SamplingParams(temperature=0.0, max_tokens=5)])[:1]
    first = HFBackend(model, tokenizer).generate([req])[0].token_ids[0]
    # Make the model's first greedy token one of its end-of-turn tokens.
    model.generation_config.eos_token_id = [tokenizer.convert_tokens_to_ids("<|im_end|>"), first]
    gen = HFBackend(model, tokenizer).generate([req])[0]
    assert gen.token_ids == [first] and gen.finish_reason == "stop"
    assert gen.text == tokenizer.decode([first])


def test_a_training_model_is_sampled_in_eval_mode_and_left_training(qwen3) -> None:
    qwen3.model.train()
    try:
        qwen3.generate(requests(qwen3, [SamplingParams(max_tokens=2, seed=0)])[:1])
        assert qwen3.model.training
    finally:
        qwen3.model.eval()


def test_runner_drives_tiny_models_with_exact_transcripts(qwen3_5) -> None:
    tasks = [Task(f"q{i}", f"How many rows are in table number {i}?", CHINOOK) for i in range(4)]
    config = RunnerConfig(
        episode=EpisodeConfig(max_rounds=1, max_turn_tokens=8, token_budget=4000), max_batch=4, seed=3
    )
    first = run_all(qwen3_5, tasks, config)
    second = run_all(qwen3_5, tasks, config)
    assert [r.token_ids for r in first] == [r.token_ids for r in second]
    for r in first:
        assert len(r.token_ids) == r.result.total_tokens <= 4000
        assert len(r.result.rounds) == 2  # a random model never calls a tool: 1 round + final
        model_lps = [lp for (k, s, e) in r.segments if k is SegmentKind.MODEL for lp in r.logprobs[s:e]]
        assert len(model_lps) == r.result.generated_tokens and all(lp <= 0 for lp in model_lps)


def test_load_from_a_local_directory_and_missing_paths(tmp_path) -> None:
    model, tokenizer = tiny_qwen3(seed=1)
    model.save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")
    backend = load_hf(tmp_path / "tiny", HFConfig(device="cpu"))
    assert backend.chat.end_of_turn == "<|im_end|>" and backend.model.dtype == torch.float32
    (req,) = requests(backend, [SamplingParams(max_tokens=2, seed=0)])[:1]
    assert len(backend.generate([req])[0].token_ids) == 2
    with pytest.raises(BackendError, match="model not found: .*nowhere does not exist"):
        load_hf(tmp_path / "nowhere")
    with pytest.raises(BackendError, match="not found"):
        load_hf("./no/such/model.gguf")


def test_out_of_memory_is_recognised(qwen3) -> None:
    with pytest.raises(RuntimeError) as info:
        torch.empty(2**50)  # a real failed allocation
    assert is_out_of_memory(info.value)
    assert not is_out_of_memory(RuntimeError("shape mismatch"))


def test_sample_token_respects_top_p() -> None:
    logits = torch.tensor([3.0, 2.9, -5.0, -6.0])
    g = torch.Generator().manual_seed(0)
    draws = {sample_token(logits, SamplingParams(temperature=1.0, top_p=0.5, top_k=0), g)[0] for _ in range(50)}
    assert draws == {0, 1} or draws <= {0, 1}
    assert sample_token(logits, SamplingParams(temperature=1.0, top_p=0.01, top_k=0), g) == (0, 0.0)


@pytest.mark.slow
def test_a_gguf_loads_dequantised_and_can_be_trained_and_saved(qwen05_gguf, tmp_path) -> None:
    backend = load_hf(qwen05_gguf, HFConfig(device="cpu"))
    model = backend.model
    # transformers marks a GGUF model as quantized (and then refuses to save it); the
    # weights in memory are plain tensors, so the backend drops that marking.
    assert getattr(model.config, "quantization_config", None) is None
    assert getattr(model, "hf_quantizer", None) is None and not getattr(model, "is_quantized", False)
    assert model.dtype == torch.float32 and backend.chat.end_of_turn == "<|im_end|>"
    (req,) = requests(backend, [SamplingParams(temperature=0.0, max_tokens=4)])[:1]
    assert len(backend.generate([req])[0].token_ids) == 4
    ids = torch.tensor([req.prompt_ids[:16]])
    model.train()
    model(ids, labels=ids).loss.backward()
    assert model.model.embed_tokens.weight.grad is not None
    model.zero_grad(set_to_none=True)
    model.eval()
    model.save_pretrained(tmp_path / "saved")
    assert (tmp_path / "saved" / "config.json").is_file()


@pytest.mark.parametrize("module_name", ["sqlscout.backends.hf", "tiny_models"])
def test_docstring_examples_run(module_name: str) -> None:
    import doctest
    import importlib

    results = doctest.testmod(importlib.import_module(module_name))
    assert results.attempted > 0 and results.failed == 0


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("build", [tiny_qwen3, tiny_qwen3_5])
def test_on_a_gpu(build) -> None:
    model, tokenizer = build(seed=0)
    exact = HFBackend(model.to("cuda"), tokenizer)  # float32: log-probs checked against a forward pass
    params = [SamplingParams(seed=1, max_tokens=5), SamplingParams(seed=2, max_tokens=9, temperature=1.0, top_p=0.8)]
    reqs = requests(exact, params)
    for gen, req in zip(exact.generate(reqs), reqs):
        assert len(gen.token_ids) == req.params.max_tokens
        assert gen.logprobs == pytest.approx(reference_logprobs(exact, req, gen.token_ids), abs=2e-3)
    fast = HFBackend(model.to(dtype=torch.bfloat16), tokenizer)
    tasks = [Task(f"q{i}", f"How many rows are in table number {i}?", CHINOOK) for i in range(8)]
    config = RunnerConfig(episode=EpisodeConfig(max_rounds=1, max_turn_tokens=16, token_budget=4000), seed=3)
    first = run_all(fast, tasks, config)
    assert [r.token_ids for r in first] == [r.token_ids for r in run_all(fast, tasks, config)]
    assert all(len(r.token_ids) == r.result.total_tokens for r in first)
