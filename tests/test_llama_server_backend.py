"""The GGUF backends with the embedded default model (Qwen2.5-Coder-0.5B GGUF): the
default one (llama.cpp's server in process, xllamacpp) here, and the contract both it
and the opt-in llama-cpp-python backend keep (the ``gguf_backend`` tests; the second
skips where llama-cpp-python is not installed).

Short generations only: these run in CI on two cores.
"""

from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

pytest.importorskip("xllamacpp", reason="the llama-cpp backend's runtime (xllamacpp) is not installed")

from assist_helpers import assisted  # noqa: E402
from conftest import spin  # noqa: E402
from sqlscout.backends.base import GenerationRequest, SamplingParams  # noqa: E402
from sqlscout.backends.llama_server import LlamaServerBackend, LlamaServerConfig, common_prefix  # noqa: E402
from sqlscout.env.chat import ChatML  # noqa: E402
from sqlscout.env.config import EpisodeConfig  # noqa: E402
from sqlscout.env.episode import Episode  # noqa: E402
from sqlscout.env.prompts import initial_messages  # noqa: E402
from sqlscout.env.sandbox import Database  # noqa: E402
from sqlscout.env.task import Task  # noqa: E402
from sqlscout.env.trace import EpisodeResult, StopReason  # noqa: E402
from sqlscout.errors import BackendError, ConfigError  # noqa: E402
from sqlscout.runner import Runner, RunnerConfig  # noqa: E402

GREEDY = SamplingParams(temperature=0.0, max_tokens=24, stop=("<|im_end|>", "<|endoftext|>"))


@pytest.fixture(params=["server_backend", "llama_backend"])
def gguf_backend(request: pytest.FixtureRequest) -> Any:
    """Each GGUF backend in turn: the default one, then llama-cpp-python where installed."""
    return request.getfixturevalue(request.param)


def _prompt(backend: Any, question: str, system: str | None = None) -> str:
    messages = [{"role": "system", "content": system}] if system else []
    return backend.chat.render([*messages, {"role": "user", "content": question}])


def test_chat_format_comes_from_the_gguf_template(gguf_backend: Any) -> None:
    assert "{%" in gguf_backend.metadata["tokenizer.chat_template"]
    messages = initial_messages("How many albums?")
    assert gguf_backend.chat.render(messages) == ChatML().render(messages)
    assert gguf_backend.chat.end_of_turn == "<|im_end|>"
    assert gguf_backend.parameters is not None and 400e6 < gguf_backend.parameters < 700e6


def test_special_token_text_is_one_token(server_backend: LlamaServerBackend) -> None:
    ids = server_backend.tokenize("SELECT<|im_end|>")
    assert len(ids) == 2 and server_backend.detokenize(ids) == "SELECT<|im_end|>"
    assert server_backend.counter.count("SELECT<|im_end|>") == 2 and server_backend.counter.count("") == 0


def test_generation_text_ids_and_logprobs_agree(gguf_backend: Any) -> None:
    prompt = _prompt(gguf_backend, "Reply with the single word: yes")
    g = gguf_backend.generate([GenerationRequest(GREEDY, prompt=prompt)])[0]
    assert g.finish_reason in ("stop", "length") and g.error is None
    assert gguf_backend.detokenize(g.token_ids) == g.text
    assert g.logprobs is not None and len(g.logprobs) == len(g.token_ids)
    assert all(lp <= 0.0 for lp in g.logprobs)
    if g.finish_reason == "stop":  # the end-of-turn marker is part of the text when emitted
        assert g.text.endswith("<|im_end|>")
    assert g.prompt_tokens == gguf_backend.counter.count(prompt) == len(gguf_backend.tokenize(prompt))


def test_sampled_logprobs_are_of_the_distribution_drawn_from(server_backend: LlamaServerBackend) -> None:
    prompt = _prompt(server_backend, "Name a colour.")
    params = SamplingParams(temperature=0.8, top_k=1, max_tokens=4)  # top-k 1: every draw is certain
    g = server_backend.generate([GenerationRequest(params.with_(seed=1), prompt=prompt)])[0]
    assert g.logprobs is not None and len(g.logprobs) == len(g.token_ids)
    assert all(lp == pytest.approx(0.0, abs=1e-6) for lp in g.logprobs)
    again = server_backend.generate([GenerationRequest(params.with_(seed=1), prompt=prompt)])[0]
    assert again.token_ids == g.token_ids


def test_max_tokens_and_stop_strings(gguf_backend: Any) -> None:
    prompt = _prompt(gguf_backend, "Count from 1 to 50, separated by spaces.")
    cut = gguf_backend.generate([GenerationRequest(GREEDY.with_(max_tokens=5), prompt=prompt)])[0]
    assert cut.finish_reason == "length" and len(cut.token_ids) == 5
    stopped = gguf_backend.generate([GenerationRequest(GREEDY.with_(max_tokens=60, stop=(" 3",)), prompt=prompt)])[0]
    assert stopped.finish_reason == "stop" and " 3" in stopped.text and " 9" not in stopped.text
    assert gguf_backend.detokenize(stopped.token_ids) == stopped.text


def test_a_growing_prompt_reuses_its_cached_prefix(server_backend: LlamaServerBackend) -> None:
    prompt_ids = server_backend.tokenize(_prompt(server_backend, "Name one SQL keyword."))
    first = server_backend.generate([GenerationRequest(GREEDY, prompt_ids=prompt_ids)])[0]
    glue = server_backend.tokenize(("" if first.text.endswith("<|im_end|>") else "<|im_end|>") + ChatML().next_turn("Another one."))
    longer = prompt_ids + first.token_ids + glue
    second = server_backend.generate([GenerationRequest(GREEDY, prompt_ids=longer)])[0]
    assert first.prompt_evaluated + first.prompt_reused == first.prompt_tokens
    assert second.prefill_s > 0 and second.decode_s > 0 and second.elapsed_s >= second.prefill_s
    # Everything but the last sampled token (never fed back) came from the cache.
    assert second.prompt_reused >= len(prompt_ids) + len(first.token_ids) - 1
    assert second.prompt_evaluated == len(longer) - second.prompt_reused


def test_interleaved_episodes_keep_their_own_prefixes(server_backend: LlamaServerBackend) -> None:
    a = server_backend.tokenize(_prompt(server_backend, "Say A."))
    b = server_backend.tokenize(_prompt(server_backend, "Say B, please, in one word."))
    params = GREEDY.with_(max_tokens=4)
    ga, gb = server_backend.generate([GenerationRequest(params, prompt_ids=a), GenerationRequest(params, prompt_ids=b)])
    server_backend.generate([GenerationRequest(params, prompt_ids=b + gb.token_ids + [198])])
    again = server_backend.generate([GenerationRequest(params, prompt_ids=a + ga.token_ids + [198])])[0]
    assert again.prompt_reused >= len(a) + len(ga.token_ids) - 1


def test_a_prefix_shared_by_new_requests_is_evaluated_once(server_backend: LlamaServerBackend) -> None:
    system = "You answer questions about the Chinook music store database. " * 12
    prompts = [server_backend.tokenize(_prompt(server_backend, q, system)) for q in ("Say one.", "Say two.", "Say three.")]
    shared = common_prefix(prompts[0], prompts[1])
    assert shared > 100
    before = server_backend.stats.shared_prefixes, server_backend.stats.shared_evaluated
    out = server_backend.generate([GenerationRequest(GREEDY.with_(max_tokens=2), prompt_ids=p) for p in prompts])
    assert all(g.error is None for g in out)
    assert server_backend.stats.shared_prefixes == before[0] + 1
    assert server_backend.stats.shared_evaluated - before[1] <= shared
    for g in out:  # each request read the shared part from the cache and evaluated only its own question
        assert g.prompt_reused >= shared and g.prompt_evaluated <= g.prompt_tokens - shared
    assert 0 < server_backend.stats.hit_rate < 1 and "prompt cache:" in server_backend.stats.summary()


def test_a_prefix_a_slot_already_holds_is_copied_not_evaluated(server_backend: LlamaServerBackend) -> None:
    system = "You answer questions about the Spider concert_singer database, in SQLite SQL. " * 10
    first = server_backend.tokenize(_prompt(server_backend, "Say one.", system))
    server_backend.generate([GenerationRequest(GREEDY.with_(max_tokens=2), prompt_ids=first)])
    prompts = [server_backend.tokenize(_prompt(server_backend, q, system)) for q in ("Say two.", "Say three.", "Say four.")]
    shared = common_prefix(prompts[0], prompts[1])
    before = server_backend.stats.shared_prefixes, server_backend.stats.restores
    out = server_backend.generate([GenerationRequest(GREEDY.with_(max_tokens=2), prompt_ids=p) for p in prompts])
    assert server_backend.stats.shared_prefixes == before[0]  # nothing evaluated for the group
    assert server_backend.stats.restores >= before[1] + 2
    assert all(g.prompt_reused >= shared and g.error is None for g in out)


def test_samples_of_one_prompt_share_it(server_backend: LlamaServerBackend) -> None:
    prompt = server_backend.tokenize(_prompt(server_backend, "Pick a random colour and name it, in a full sentence please."))
    params = SamplingParams(max_tokens=3, stop=("<|im_end|>",))
    group = server_backend.generate([GenerationRequest(params.with_(seed=s), prompt_ids=prompt) for s in range(3)])
    assert all(g.error is None for g in group)
    assert sum(g.prompt_evaluated for g in group) <= 3 * 2  # the prompt itself was evaluated once, shared


def test_batched_requests_agree_with_one_by_one_under_greedy(gguf_backend: Any) -> None:
    prompts = [_prompt(gguf_backend, q) for q in ("What is 2+2? Answer with a number.", "Spell 'cat' backwards.")]
    params = GREEDY.with_(max_tokens=6)
    together = gguf_backend.generate([GenerationRequest(params, prompt=p) for p in prompts])
    alone = [gguf_backend.generate([GenerationRequest(params, prompt=p)])[0] for p in prompts]
    assert all(g.finish_reason in ("stop", "length") and g.error is None for g in together)
    # Batch composition changes llama.cpp's float sums slightly; greedy picks agree at the start.
    assert [g.token_ids[:2] for g in together] == [g.token_ids[:2] for g in alone]


def test_more_requests_than_slots(server_backend: LlamaServerBackend) -> None:
    prompts = [_prompt(server_backend, f"Say the number {i}.") for i in range(6)]  # 4 slots
    out = server_backend.generate([GenerationRequest(GREEDY.with_(max_tokens=2), prompt=p) for p in prompts])
    assert len(out) == 6 and all(g.error is None and len(g.token_ids) >= 1 for g in out)


def test_a_prompt_longer_than_the_context_is_an_error_result(gguf_backend: Any) -> None:
    g = gguf_backend.generate([GenerationRequest(GREEDY, prompt_ids=[198] * 9000)])[0]
    # the server backend's slots each hold a share of the 8192 cells; llama-cpp-python's share one cache
    assert g.finish_reason == "error" and "9000 tokens" in (g.error or "") and "context holds" in (g.error or "")


def test_missing_file_and_bad_config_are_clear(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="model file not found"):
        LlamaServerBackend(tmp_path / "nope.gguf")
    not_gguf = tmp_path / "fake.gguf"
    not_gguf.write_bytes(b"not a model")
    with pytest.raises(BackendError, match="could not load"):
        LlamaServerBackend(not_gguf)
    with pytest.raises(ConfigError):
        LlamaServerConfig(slots=0)


def test_the_server_listens_on_loopback_only_and_stops_on_close(qwen05_gguf: Path) -> None:
    backend = LlamaServerBackend(qwen05_gguf, LlamaServerConfig(n_ctx=512, slots=1, n_threads=1))
    url = urlparse(backend.url)
    assert url.hostname == "127.0.0.1" and url.port
    with socket.create_connection((url.hostname, url.port), timeout=5):
        pass
    backend.close()
    with pytest.raises(OSError):
        socket.create_connection((url.hostname, url.port), timeout=5).close()
    with pytest.raises(BackendError, match="closed"):
        backend.tokenize("a")


def test_each_slot_attends_over_a_share_of_its_own(qwen05_gguf: Path) -> None:
    # One cache that all slots draw on made every token attend over every slot's cells:
    # with 8 episodes in flight an evaluation ran 1.8 times slower than one at a time.
    backend = LlamaServerBackend(qwen05_gguf, LlamaServerConfig(n_ctx=1024, slots=2, n_threads=1))
    try:
        shares = [slot["n_ctx"] for slot in backend._get("/slots")]  # type: ignore[attr-defined]
        assert shares == [512, 512] and backend.slot_ctx == 512
        ids = backend.tokenize("SELECT 1; " * 150)
        assert 512 < len(ids) < 1024
        failed = backend.generate([GenerationRequest(GREEDY, prompt_ids=ids)])[0]
        assert failed.error is not None and "a slot's context holds 512" in failed.error
        fits = backend.generate([GenerationRequest(GREEDY, prompt_ids=ids[:400])])[0]
        assert fits.error is None and 0 < len(fits.token_ids) <= 24
    finally:
        backend.close()


def test_common_prefix() -> None:
    assert common_prefix([1, 2, 3], [1, 2, 3, 4]) == 3
    assert common_prefix([1, 2, 3], [1, 9, 3]) == 1
    assert common_prefix([], [1]) == 0
    long = list(range(5000))
    assert common_prefix(long, long[:3001] + [-1]) == 3001


def test_runner_episodes_on_chinook_with_an_exact_budget(gguf_backend: Any, chinook_path: Path) -> None:
    tasks = [
        Task("albums", "How many albums are there?", chinook_path, gold_sql="SELECT COUNT(*) FROM Album"),
        Task("genres", "How many genres are there?", chinook_path, gold_sql="SELECT COUNT(*) FROM Genre"),
    ]
    config = RunnerConfig(
        episode=EpisodeConfig(max_rounds=2, max_turn_tokens=64, token_budget=4096),
        sampling=SamplingParams(temperature=0.0),
        max_batch=2,
    )
    with Runner(gguf_backend, config) as runner:
        rollouts = sorted(runner.run(tasks), key=lambda r: r.index)
    assert [r.index for r in rollouts] == [0, 1]
    for rollout in rollouts:
        result = rollout.result
        assert result.stop_reason is not StopReason.BACKEND_ERROR
        assert 1 <= len(result.rounds) <= 3
        # The budget is counted in the model's own tokens: it equals the transcript's ids.
        assert result.total_tokens == len(rollout.token_ids)
        assert rollout.token_ids[: result.prompt_tokens] == gguf_backend.tokenize(gguf_backend.chat.render(result.messages))


def test_a_reply_cut_by_the_budget_is_a_recorded_outcome(gguf_backend: Any, chinook_path: Path) -> None:
    task = Task("cut", "List every table and describe each one in detail.", chinook_path)
    db = Database(chinook_path)
    probe = Episode(task, db, EpisodeConfig(), chat=gguf_backend.chat, counter=gguf_backend.counter)
    budget = probe.tokens_used + 8  # the first turn may write 8 tokens, and then nothing fits
    config = EpisodeConfig(token_budget=budget, final_turn_reserve=4)
    with Runner(gguf_backend, RunnerConfig(episode=config, sampling=SamplingParams(temperature=0.0), max_batch=1)) as runner:
        (rollout,) = runner.run([task])
    result = rollout.result
    assert result.rounds[0].finish_reason == "length" and result.rounds[0].completion_tokens == 8
    assert result.stop_reason is StopReason.BUDGET_EXHAUSTED
    assert result.total_tokens <= budget


def test_batched_and_lone_episodes_record_where_the_time_went(server_backend: LlamaServerBackend, chinook_path: Path) -> None:
    tasks = [Task(name, f"How many {name} are there?", chinook_path) for name in ("albums", "genres", "artists")]
    episode = EpisodeConfig(max_rounds=1, max_turn_tokens=12, token_budget=4096)
    config = RunnerConfig(episode=episode, sampling=SamplingParams(temperature=0.0), max_batch=3)
    with Runner(server_backend, config) as runner:
        results = [r.result for r in runner.run(tasks)]
    with Runner(server_backend, RunnerConfig(episode=episode, sampling=SamplingParams(temperature=0.0), max_batch=1)) as runner:
        results += [r.result for r in runner.run(tasks[:1])]  # one episode alone, as ask runs it
    for result in results:  # per round and per episode, and it survives a round trip
        assert all(r.prefill_s > 0 and r.decode_s > 0 for r in result.rounds)
        assert result.prompt_evaluated == sum(r.prompt_evaluated for r in result.rounds) > 0
        assert result.prompt_reused == sum(r.prompt_reused for r in result.rounds)
        assert result.prefill_s == pytest.approx(sum(r.prefill_s for r in result.rounds))
        assert result.decode_s == pytest.approx(sum(r.decode_s for r in result.rounds))
        first = result.rounds[0]
        assert first.prompt_evaluated + first.prompt_reused == result.prompt_tokens
        assert EpisodeResult.from_dict(result.to_dict()) == result
    # The episodes share the system prompt: their first turns read it from the cache.
    assert all(r.rounds[0].prompt_reused > 0 for r in results)


def test_the_default_gguf_backend_decodes_under_the_reply_grammar(server_backend: LlamaServerBackend) -> None:
    # The constrain rule is on in the offline presets' profiles, which run on this backend:
    # the request's grammar must reach llama.cpp (it was dropped here while the openai
    # backend sent it).
    from sqlscout.env.grammar import ReplyGrammar, ThinkMode, TurnKind

    prompt = server_backend.chat.render([{"role": "user", "content": "Say hello."}])
    params = SamplingParams(temperature=0.0, max_tokens=24, stop=server_backend.chat.stop)
    final = ReplyGrammar(TurnKind.FINAL_SQL, ThinkMode.NONE)
    free, bound = server_backend.generate(
        [GenerationRequest(params, prompt=prompt), GenerationRequest(params, prompt=prompt, constraint=final)]
    )
    assert not free.text.startswith("```sql")  # left alone, the model greets
    assert bound.text.startswith("```sql\n") and bound.text[7:].upper().startswith(("SELECT", "WITH")), bound.text


# -- concurrent calls: the runner's continuous mode sends every episode's turn alone


def test_concurrent_calls_get_their_own_answers(server_backend: LlamaServerBackend) -> None:
    assert server_backend.concurrent_requests
    words = ["banana", "Tokyo", "violet", "seventeen", "oxygen", "piano"]
    # A word said twice is said a third time: a continuation no batch's rounding can flip.
    prompts = [server_backend.tokenize(f"The word is {word}. Again: the word is {word}. Again: the word is") for word in words]
    params = GREEDY.with_(max_tokens=2)
    alone = [server_backend.generate([GenerationRequest(params, prompt_ids=p)])[0] for p in prompts]
    with ThreadPoolExecutor(len(prompts)) as pool:  # six callers, four slots
        calls = [pool.submit(server_backend.generate, [GenerationRequest(params, prompt_ids=p, episode=(i, 0))]) for i, p in enumerate(prompts)]
        together = [call.result()[0] for call in calls]
    for word, g, a, p in zip(words, together, alone, prompts):
        assert g.error is None and g.prompt_tokens == len(p)
        assert g.text.startswith(" " + word) and a.text.startswith(" " + word), (word, g.text, a.text)
        assert g.token_ids[0] == a.token_ids[0]


def test_a_short_turn_is_not_held_back_by_a_long_reply(server_backend: LlamaServerBackend) -> None:
    long_prompt = _prompt(server_backend, "Count from 1 to 100, separated by spaces.")
    finished: dict[str, float] = {}

    def long_reply() -> None:
        server_backend.generate([GenerationRequest(GREEDY.with_(max_tokens=48), prompt=long_prompt, episode=(0, 0))])
        finished["long"] = time.perf_counter()

    with ThreadPoolExecutor(1) as pool:
        decoding = pool.submit(long_reply)
        time.sleep(0.3)
        # Meanwhile an episode takes three turns, each continuing the one before from its slot.
        ids = server_backend.tokenize(_prompt(server_backend, "Name one SQL keyword."))
        before: list[int] = []
        for _ in range(3):
            g = server_backend.generate([GenerationRequest(GREEDY.with_(max_tokens=2), prompt_ids=ids, episode=(1, 0))])[0]
            assert g.error is None and g.prompt_reused >= len(before)  # its slot kept the turn before
            before, ids = ids, ids + g.token_ids + server_backend.tokenize("<|im_end|>\n<|im_start|>user\nAnother.<|im_end|>\n<|im_start|>assistant\n")
        finished["short"] = time.perf_counter()
        decoding.result()
    assert finished["short"] < finished["long"]


def test_episodes_starting_together_evaluate_their_shared_prefix_once(server_backend: LlamaServerBackend) -> None:
    # What the runner does in continuous mode: prepare() for the starters, then one call each.
    system = "You answer questions about the Spider pets_1 database, in SQLite SQL. " * 10
    prompts = [server_backend.tokenize(_prompt(server_backend, q, system)) for q in ("Say cat.", "Say dog.", "Say bird.", "Say fish.")]
    shared = common_prefix(prompts[0], prompts[1])
    requests = [GenerationRequest(GREEDY.with_(max_tokens=2), prompt_ids=p, episode=(i, 0)) for i, p in enumerate(prompts)]
    before = server_backend.stats.shared_prefixes, server_backend.stats.shared_evaluated
    server_backend.prepare(requests)
    assert server_backend.stats.shared_prefixes == before[0] + 1
    assert server_backend.stats.shared_evaluated - before[1] <= shared
    with ThreadPoolExecutor(len(requests)) as pool:
        out = [f.result()[0] for f in [pool.submit(server_backend.generate, [r]) for r in requests]]
    for g in out:  # each read the shared part from the cache and evaluated only its own question
        assert g.error is None and g.prompt_reused >= shared and g.prompt_evaluated <= g.prompt_tokens - shared
    assert server_backend.stats.shared_prefixes == before[0] + 1


def test_jump_forward_writes_what_the_grammar_forces_and_samples_the_rest(
    server_backend: LlamaServerBackend, chinook_path: Path
) -> None:
    # Forced text (`{"tool": "`, `", "args": {"sql": "` after the name) goes into the prompt
    # instead of being decoded token by token; greedy, the reply is the one plain decoding
    # writes, and it is a complete reply of the grammar.
    from dataclasses import replace

    from sqlscout.env.grammar import ReplyGrammar, ThinkMode, TurnKind
    from sqlscout.env.parser import parse_turn

    with Database(chinook_path) as db:
        episode = assisted(Task("q", "Which genres are there?", str(chinook_path)), db, chat=server_backend.chat, constrain=True)
        request = episode.request()
        prompt = request.prompt
    assert request.constraint is not None and request.constraint.kind is TurnKind.CALLS  # what the episode asks for
    grammar = ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, max_calls=2, reasoning_lines=0, tools=("run_query", "describe_table"))
    params = SamplingParams(temperature=0.0, max_tokens=80, stop=server_backend.chat.stop, logprobs=False)
    config = server_backend.config
    try:
        server_backend.config = replace(config, jump_forward=False)
        plain = server_backend.generate([GenerationRequest(params, prompt=prompt, constraint=grammar)])[0]
        server_backend.config = replace(config, jump_forward=True)
        before, forced = server_backend.stats.requests, server_backend.stats.forced_tokens
        jumped = server_backend.generate([GenerationRequest(params, prompt=prompt, constraint=grammar)])[0]
        assert server_backend.stats.requests == before + 1  # one Generation, however many llama.cpp requests
        assert server_backend.stats.forced_tokens - forced >= 8  # at least `":`, ` "`, `args`... of one call
        forced = server_backend.stats.forced_tokens
        logged = server_backend.generate([GenerationRequest(replace(params, logprobs=True), prompt=prompt, constraint=grammar)])[0]
    finally:
        server_backend.config = config
    assert jumped.text == plain.text, (jumped.text, plain.text)
    assert server_backend.detokenize(jumped.token_ids) == jumped.text
    calls = parse_turn(jumped.text).calls
    assert calls and all(c.tool in ("run_query", "describe_table") for c in calls)
    assert jumped.finish_reason == "stop"
    # Log-probabilities (training) need every token sampled: no jump there.
    assert logged.logprobs is not None and len(logged.logprobs) == len(logged.token_ids)
    assert server_backend.stats.forced_tokens == forced
    # Fully forced: one submittable query leaves nothing to sample.
    only = ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, reasoning_lines=0, tools=("submit_sql",), submittable=("SELECT Name FROM Genre",))
    done = server_backend.generate([GenerationRequest(params, prompt=prompt, constraint=only)])[0]
    assert done.text == '{"tool": "submit_sql", "args": {"sql": "SELECT Name FROM Genre"}}' and done.decode_s == 0.0


def test_auto_threads_counts_the_cores_idle_now_not_the_last_minute() -> None:
    """Every core busy: one thread. (The load average, its old measure, still counts
    work that ended a moment ago and gave one thread of two on an idle machine.)"""
    import multiprocessing

    from sqlscout.backends.threads import auto_threads

    cores = multiprocessing.cpu_count()
    spinners = [multiprocessing.Process(target=spin, args=(2.0,), daemon=True) for _ in range(cores)]
    for p in spinners:
        p.start()
    try:
        time.sleep(0.3)
        assert auto_threads(0.3) == 1
    finally:
        for p in spinners:
            p.terminate()
            p.join()


def test_the_trainers_share_of_cores_does_not_depend_on_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """The trainer's llama.cpp takes its process's cores even when they look busy (its own
    threads spinning after an update took one core of two through auto_threads), shared
    among the processes a launcher started on the machine."""
    import multiprocessing
    import os

    from sqlscout.backends.threads import process_cores

    cores = len(os.sched_getaffinity(0))
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    spinners = [multiprocessing.Process(target=spin, args=(1.0,), daemon=True) for _ in range(cores)]
    for p in spinners:
        p.start()
    try:
        time.sleep(0.2)
        assert process_cores() == cores
    finally:
        for p in spinners:
            p.terminate()
            p.join()
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(cores * 2))
    assert process_cores() == 1
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert process_cores() == max(1, cores // 2)

