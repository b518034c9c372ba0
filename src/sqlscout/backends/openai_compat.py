"""Any OpenAI-compatible server (vLLM, SGLang, llama.cpp's servers, hosted endpoints).

Two ways to send a turn:

- **completions** (preferred): ``POST /v1/completions`` with the episode's raw
  transcript as the prompt, so the model sees exactly the text an in-process backend
  would, earlier reasoning included.
- **chat**, for servers without a completions endpoint: the transcript (ChatML text,
  the backend's chat format) is split back into its system / user / assistant
  messages and sent to ``POST /v1/chat/completions``; the server renders them with its
  own template. Earlier assistant turns are sent verbatim, but a template may still drop
  earlier ``<think>`` blocks — the server decides, not sqlscout.

``mode="auto"`` uses completions and switches to chat for good the first time the
server answers 404/405 there. Requests of one :meth:`generate` call run concurrently
(at most ``concurrency`` at once) with timeouts; calls from several threads run side by
side (the runner's continuous mode sends each episode's turn alone). Connection errors,
429 and 5xx are retried with exponential backoff. Token ids come from the server's tokenize
endpoint when it has one (``/tokenize`` with ``content`` on llama-server, with
``prompt`` on vLLM; ``/extras/tokenize`` on llama-cpp-python); without it the budget is
counted approximately. Log-probabilities are read in both shapes servers send:
``token_logprobs`` (the OpenAI completions shape, vLLM) and ``content`` (llama-server).
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Sequence

from sqlscout.backends.base import Backend, Generation, GenerationRequest
from sqlscout.env.chat import ChatFormat, ChatML, Message
from sqlscout.errors import BackendError, ConfigError
from sqlscout.env.tokens import ApproxTokenCounter

__all__ = ["OpenAIBackend", "OpenAIConfig", "split_chatml"]

_MODES = ("auto", "completions", "chat")
_GRAMMAR_FIELDS = ("grammar", "structured_outputs", "none")


@dataclass(frozen=True)
class OpenAIConfig:
    """How to reach the server.

    Attributes:
        base_url: the server, e.g. ``http://127.0.0.1:8000`` (``/v1`` is added when missing).
        model: model name to send; None takes the first one ``/v1/models`` lists.
        api_key: sent as a bearer token when set (the CLI reads ``$OPENAI_API_KEY``).
        mode: ``auto``, ``completions`` or ``chat`` (see the module docstring).
        concurrency: most requests in flight at once (>= 1).
        timeout_s: limit on one request, generation included.
        connect_timeout_s: limit on connecting; an unreachable server fails fast.
        retries: extra attempts after a connection error, 429 or 5xx.
        backoff_s: first wait between attempts; doubles each time.
        sampling_extras: also send ``top_k``, ``min_p=0`` and ``repeat_penalty=1`` (vLLM,
            SGLang and llama.cpp read them; turn off for servers that reject unknown fields).
        grammar_field: how a request's reply grammar (GBNF) is sent: ``grammar``
            (llama-server, llama-cpp-python), ``structured_outputs`` (vLLM >= 0.10's
            ``{"structured_outputs": {"grammar": ...}}``), or ``none`` (never sent).
        probe_tokenizer: ask the server for a tokenize route at start (up to three
            requests); off where the server is known to have none (verifiers' interception
            relay), and token counts are then estimated, as after a probe that finds none.
    """

    base_url: str
    model: str | None = None
    api_key: str | None = None
    mode: str = "auto"
    concurrency: int = 8
    timeout_s: float = 300.0
    connect_timeout_s: float = 5.0
    retries: int = 3
    backoff_s: float = 0.5
    sampling_extras: bool = True
    grammar_field: str = "grammar"
    probe_tokenizer: bool = True

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must start with http:// or https://, got {self.base_url!r}")
        if self.mode not in _MODES:
            raise ConfigError(f"mode must be one of {', '.join(_MODES)}, got {self.mode!r}")
        if self.concurrency < 1:
            raise ConfigError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.timeout_s <= 0 or self.connect_timeout_s <= 0:
            raise ConfigError("timeout_s and connect_timeout_s must be > 0")
        if self.retries < 0 or self.backoff_s < 0:
            raise ConfigError("retries and backoff_s must be >= 0")
        if self.grammar_field not in _GRAMMAR_FIELDS:
            raise ConfigError(f"grammar_field must be one of {', '.join(_GRAMMAR_FIELDS)}, got {self.grammar_field!r}")

    @property
    def api_url(self) -> str:
        url = self.base_url.rstrip("/")
        return url if url.endswith("/v1") else url + "/v1"

    @property
    def root_url(self) -> str:
        return self.api_url[: -len("/v1")]


class _Fatal(Exception):
    """A response that retrying cannot fix."""


class _ServerCounter:
    def __init__(self, backend: OpenAIBackend) -> None:
        self._backend = backend

    def count(self, text: str) -> int:
        return len(self._backend.tokenize(text) or []) if text else 0


class OpenAIBackend(Backend):
    """Generation through an OpenAI-compatible HTTP server.

    Raises:
        BackendError: at construction when the server cannot be reached or refuses us.
    """

    name = "openai"
    concurrent_requests = True  # each call runs its own requests on its own event loop

    def __init__(self, config: OpenAIConfig, *, chat: ChatFormat | None = None) -> None:
        try:
            import httpx
        except ImportError:
            raise BackendError("the openai backend needs httpx: pip install 'sqlscout[openai]'") from None
        self._httpx = httpx
        self.config = config
        self.chat = chat or ChatML()
        self._mode = config.mode
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=self._timeout(), headers=self._headers())
        self.model = config.model or self._first_model()
        self._tokenize_route = self._find_tokenizer() if config.probe_tokenizer else None
        self.counter = _ServerCounter(self) if self._tokenize_route else ApproxTokenCounter()

    # -- Backend interface -----------------------------------------------------------

    def tokenize(self, text: str) -> list[int] | None:
        if self._tokenize_route is None:
            return None
        path, key = self._tokenize_route
        data = self._sync_post(path, _tokenize_body(self.model, key, text))
        return list(data.get("tokens", []))

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        if not requests:
            return []
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._generate_all(requests))
        # Called from inside an event loop (a notebook): run ours on a worker thread.
        box: list[Any] = []
        worker = threading.Thread(target=lambda: box.append(asyncio.run(self._generate_all(requests))))
        worker.start()
        worker.join()
        return box[0]  # type: ignore[no-any-return]

    def close(self) -> None:
        self._client.close()

    # -- setup -----------------------------------------------------------------------

    def _timeout(self) -> Any:
        return self._httpx.Timeout(self.config.timeout_s, connect=self.config.connect_timeout_s)

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else {}

    def _first_model(self) -> str:
        try:
            response = self._client.get(self.config.api_url + "/models")
        except self._httpx.TransportError as exc:
            raise BackendError(
                f"cannot reach the OpenAI-compatible server at {self.config.base_url} ({_reason(exc)}); "
                "start it or check the URL"
            ) from None
        if response.status_code in (401, 403):
            raise BackendError(f"the server at {self.config.base_url} refused the API key ({response.status_code})")
        if response.status_code >= 400:
            raise BackendError(
                f"{self.config.api_url}/models answered {response.status_code}; is this an OpenAI-compatible server?"
            )
        models = response.json().get("data") or []
        if not models:
            raise BackendError(f"the server at {self.config.base_url} lists no models; pass model=")
        return str(models[0]["id"])

    def _find_tokenizer(self) -> tuple[str, str] | None:
        """The server's tokenize route and the name of its text field, or None. A route
        counts only when it tokenizes a word into tokens: llama-server answers a field it
        does not read (``prompt``) with ``{"tokens": []}``."""
        for path, key in (("/tokenize", "content"), ("/tokenize", "prompt"), ("/extras/tokenize", "input")):
            try:
                response = self._client.post(self.config.root_url + path, json=_tokenize_body(self.model, key, "a"))
            except self._httpx.TransportError:
                return None
            if response.status_code == 200 and _tokens(response):
                return path, key
        return None

    def _sync_post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            response = self._client.post(self.config.root_url + path, json=body)
        except self._httpx.TransportError as exc:
            raise BackendError(f"lost the server at {self.config.base_url} ({_reason(exc)})") from None
        if response.status_code >= 400:
            raise BackendError(f"{path} answered {response.status_code}: {_message(response)}")
        return response.json()  # type: ignore[no-any-return]

    # -- generation ------------------------------------------------------------------

    async def _generate_all(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        gate = asyncio.Semaphore(self.config.concurrency)
        async with self._httpx.AsyncClient(timeout=self._timeout(), headers=self._headers()) as client:
            tasks = [self._generate_one(client, gate, request) for request in requests]
            results = await asyncio.gather(*tasks, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return list(results)  # type: ignore[arg-type]

    async def _generate_one(self, client: Any, gate: asyncio.Semaphore, request: GenerationRequest) -> Generation:
        async with gate:
            started = time.perf_counter()
            if self._mode != "chat":
                try:
                    data = await self._post(client, "/completions", self._completion_body(request))
                except _NoRoute:
                    if self._mode == "completions":
                        raise BackendError(f"{self.config.api_url}/completions does not exist; use mode='chat'") from None
                    with self._lock:
                        self._mode = "chat"
                else:
                    return self._from_completion(data, request, time.perf_counter() - started)
            data = await self._post(client, "/chat/completions", self._chat_body(request))
            return self._from_chat(data, request, time.perf_counter() - started)

    def _sampling(self, request: GenerationRequest) -> dict[str, Any]:
        p = request.params
        body: dict[str, Any] = {"model": self.model, "max_tokens": p.max_tokens, "temperature": p.temperature, "top_p": p.top_p}
        if p.seed is not None:
            body["seed"] = p.seed
        if p.stop:
            body["stop"] = list(p.stop)
        if self.config.sampling_extras:
            body.update(top_k=p.top_k if p.top_k > 0 else -1, min_p=0.0, repeat_penalty=1.0)
        if request.constraint is not None and self.config.grammar_field != "none":
            gbnf = request.constraint.gbnf()
            if self.config.grammar_field == "grammar":
                body["grammar"] = gbnf
            else:
                body["structured_outputs"] = {"grammar": gbnf}
        return body

    def _completion_body(self, request: GenerationRequest) -> dict[str, Any]:
        prompt: Any = request.prompt if request.prompt is not None else list(request.prompt_ids or [])
        body = {**self._sampling(request), "prompt": prompt}
        if request.params.logprobs:
            body["logprobs"] = 1
        return body

    def _chat_body(self, request: GenerationRequest) -> dict[str, Any]:
        if request.prompt is None:
            raise BackendError("the chat endpoint needs the prompt as text, not token ids")
        body = {**self._sampling(request), "messages": split_chatml(request.prompt)}
        if request.params.logprobs:
            body["logprobs"] = True
        return body

    async def _post(self, client: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
        url = self.config.api_url + path
        attempt = 0
        while True:
            try:
                response = await client.post(url, json=body)
            except self._httpx.TransportError as exc:
                problem = f"cannot reach the server at {self.config.base_url} ({_reason(exc)})"
            else:
                if response.status_code < 400:
                    return response.json()  # type: ignore[no-any-return]
                if response.status_code in (404, 405):
                    raise _NoRoute()
                problem = f"the server answered {response.status_code} to {path}: {_message(response)}"
                if response.status_code != 429 and response.status_code < 500:
                    raise BackendError(problem)
            if attempt >= self.config.retries:
                raise BackendError(f"{problem}; gave up after {attempt + 1} attempts")
            await asyncio.sleep(self.config.backoff_s * 2**attempt)
            attempt += 1

    def _finish(self, text: str, reason: str | None, request: GenerationRequest) -> tuple[str, str]:
        """Servers drop the stop string they stopped on; put the end-of-turn marker back."""
        finish = "length" if reason == "length" else "stop"
        stops = request.params.stop
        if finish == "stop" and self.chat.end_of_turn in stops and not text.endswith(tuple(stops)):
            text += self.chat.end_of_turn
        return text, finish

    def _from_completion(self, data: dict[str, Any], request: GenerationRequest, elapsed: float) -> Generation:
        choice = (data.get("choices") or [{}])[0]
        text, finish = self._finish(choice.get("text") or "", choice.get("finish_reason"), request)
        logprobs = None
        if request.params.logprobs and isinstance(choice.get("logprobs"), dict):
            logprobs = _completion_logprobs(choice["logprobs"])
        return self._generation(text, finish, logprobs, data, elapsed)

    def _from_chat(self, data: dict[str, Any], request: GenerationRequest, elapsed: float) -> Generation:
        choice = (data.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        content = message.get("content") or ""
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if reasoning:  # servers that split thinking off: keep it in the transcript
            content = f"<think>\n{reasoning.strip()}\n</think>\n\n{content}"
        text, finish = self._finish(content, choice.get("finish_reason"), request)
        logprobs = None
        if request.params.logprobs and isinstance(choice.get("logprobs"), dict):
            logprobs = [float(item.get("logprob", 0.0)) for item in choice["logprobs"].get("content") or []]
        return self._generation(text, finish, logprobs, data, elapsed)

    def _generation(
        self, text: str, finish: str, logprobs: list[float] | None, data: dict[str, Any], elapsed: float
    ) -> Generation:
        usage = data.get("usage") or {}
        ids = self.tokenize(text) if self._tokenize_route else []
        return Generation(
            text=text,
            token_ids=ids or [],
            logprobs=logprobs,
            finish_reason=finish,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            elapsed_s=elapsed,
        )


class _NoRoute(Exception):
    """The server has no such endpoint (404/405)."""


_TURN = re.compile(r"<\|im_start\|>(system|user|assistant)\n(.*?)(?:<\|im_end\|>\n?|$)", re.DOTALL)


def split_chatml(prompt: str) -> list[Message]:
    """The messages of a ChatML transcript; the open assistant turn at the end is dropped.

    >>> split_chatml("<|im_start|>system\\nS<|im_end|>\\n<|im_start|>user\\nQ<|im_end|>\\n<|im_start|>assistant\\n")
    [{'role': 'system', 'content': 'S'}, {'role': 'user', 'content': 'Q'}]
    """
    messages = [{"role": m.group(1), "content": m.group(2)} for m in _TURN.finditer(prompt)]
    if messages and messages[-1]["role"] == "assistant" and not prompt.rstrip().endswith("<|im_end|>"):
        messages.pop()
    return messages


def _tokenize_body(model: str, key: str, text: str) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, key: text}
    if key == "prompt":
        body["add_special_tokens"] = False
    return body


def _tokens(response: Any) -> list[int]:
    try:
        tokens = response.json().get("tokens")
    except (ValueError, AttributeError):
        return []
    return tokens if isinstance(tokens, list) else []


def _completion_logprobs(logprobs: dict[str, Any]) -> list[float]:
    """Per-token log-probabilities of a completions choice, in the OpenAI shape
    (``token_logprobs``) or llama-server's (``content``: one object per token).

    >>> _completion_logprobs({"token_logprobs": [-0.5, None]})
    [-0.5, 0.0]
    >>> _completion_logprobs({"content": [{"id": 9, "token": "a", "logprob": -0.25}]})
    [-0.25]
    """
    if logprobs.get("token_logprobs") is not None:
        return [float(v) if v is not None else 0.0 for v in logprobs["token_logprobs"]]
    return [float(item.get("logprob", 0.0)) for item in logprobs.get("content") or []]


def _reason(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


def _message(response: Any) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text.strip().splitlines()[0][:300] if response.text.strip() else "(empty body)"
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return str(error.get("message", error))[:300]
    if isinstance(data, dict) and "detail" in data:
        return str(data["detail"])[:300]
    return str(data)[:300]
