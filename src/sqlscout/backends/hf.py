"""The transformers backend: batched sampling on CPU or GPU with per-request settings.

One :meth:`HFBackend.generate` call prefills every prompt of the batch at once (left
padding), then decodes all rows together, one token per step, with the KV cache. Each
row has its own temperature, top-p, top-k, seed (its own random generator, so a row's
tokens do not depend on which other rows share its batch), stop strings and
``max_tokens``: a row stops at its own limit while the others go on.

The log-probability returned for a sampled token is taken from the distribution the
sampler drew it from — the logits divided by the temperature, cut by top-k then top-p,
renormalised — which is what an importance ratio against the sampler needs. Greedy
rows (temperature 0) report the model's plain log-softmax.

A request with a ``constraint`` (a :class:`~sqlscout.env.grammar.ReplyGrammar`) is
decoded under it with llguidance: before each draw, the tokens the grammar forbids get
-inf, so the log-probabilities are those of the constrained distribution.

Models load from a local directory, a hub id (where the hub is reachable), a GGUF file
(dequantised; its ``quantization_config`` is dropped so the model can be trained and
saved), or an in-memory model and tokenizer (the trainer passes its policy).
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from sqlscout.backends.base import Backend, Generation, GenerationRequest, SamplingParams
from sqlscout.env.chat import ChatFormat, ChatML
from sqlscout.errors import BackendError, ConfigError
from sqlscout.env.tokens import TokenizerCounter

__all__ = ["HFBackend", "HFConfig", "drop_quantization_config", "load_hf", "sample_token", "sample_tokens"]


@dataclass(frozen=True)
class HFConfig:
    """Settings of the transformers backend.

    Attributes:
        device: ``auto`` (CUDA when available), ``cpu``, ``cuda`` or ``cuda:N``.
        dtype: ``auto`` (bfloat16 on CUDA, float32 on CPU), ``float32``, ``bfloat16``, ``float16``.
        max_batch: most rows decoded together; larger batches are split.
        thinking: ``enable_thinking`` for the chat template (None: leave it undefined).
        seed: seeds the generator used by requests that carry no seed of their own.
    """

    device: str = "auto"
    dtype: str = "auto"
    max_batch: int = 64
    thinking: bool | None = True
    seed: int = 0

    def __post_init__(self) -> None:
        if self.max_batch < 1:
            raise ConfigError(f"max_batch must be >= 1, got {self.max_batch}")
        if self.dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise ConfigError(f"dtype must be auto, float32, bfloat16 or float16, got {self.dtype!r}")
        if not (self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:")):
            raise ConfigError(f"device must be auto, cpu, cuda or cuda:N, got {self.device!r}")


class HFBackend(Backend):
    """Generation with a transformers causal LM already in memory.

    Args:
        model: a ``PreTrainedModel`` (moved to nothing: it stays on its device).
        tokenizer: its tokenizer (a fast tokenizer with a chat template, ideally).
        config: batch size, thinking, seed.
        chat: the turn format; derived from the tokenizer's chat template when None.
    """

    name = "hf"

    def __init__(self, model: Any, tokenizer: Any, config: HFConfig | None = None, *, chat: ChatFormat | None = None):
        import torch

        self.model = model
        self.tokenizer = tokenizer
        self.config = config or HFConfig()
        self.chat = chat or _chat_format(tokenizer, self.config.thinking)
        self.counter = TokenizerCounter(tokenizer)
        self._torch = torch
        self._rng = torch.Generator().manual_seed(self.config.seed)
        self._pad_id = _pad_id(model, tokenizer)
        self._eos_ids = _eos_ids(model, tokenizer, self.chat.stop)
        # transformers renamed the cache argument (``past_key_values`` -> ``cache``) in 5.x.
        self._grammar: Any = None  # llguidance's view of the tokenizer, built on the first constrained request
        self._cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device

    def tokenize(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    @property
    def parameters(self) -> int | None:
        if self.model is None:
            return None
        return sum(p.numel() for p in self.model.parameters())

    def close(self) -> None:
        self.model = None

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        if self.model is None:
            raise BackendError("the hf backend is closed")
        out: list[Generation] = []
        size = self.config.max_batch
        for start in range(0, len(requests), size):
            chunk = requests[start : start + size]
            try:
                out += self._generate_batch(chunk)
            except Exception as exc:
                if is_out_of_memory(exc):
                    raise BackendError(
                        f"out of memory generating a batch of {len(chunk)} on {self.device}: lower the batch "
                        "size (runner max_batch / hf max_batch) or the token budget"
                    ) from exc
                raise
        return out

    # -- decoding ----------------------------------------------------------------

    def _generate_batch(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        torch = self._torch
        start = time.perf_counter()
        prompts = [list(r.prompt_ids) if r.prompt_ids is not None else self.tokenize(r.prompt or "") for r in requests]
        if any(not p for p in prompts):
            raise BackendError("a generation request has an empty prompt")
        rows = [_Row(r.params, self._generator(r.params), self._stop_window(r.params)) for r in requests]
        for row, request in zip(rows, requests):
            if request.constraint is not None:
                row.matcher = self._grammar_tokenizer().matcher(request.constraint)
        width = max(len(p) for p in prompts)
        device = self.device
        ids = torch.tensor([[self._pad_id] * (width - len(p)) + p for p in prompts], device=device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.inference_mode():
                out = self.model(
                    input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1
                )
                while True:
                    logits = out.logits[:, -1, :].float()
                    active = [i for i, row in enumerate(rows) if not row.done]
                    for i in active:
                        if rows[i].matcher is not None:
                            logits[i] = _masked(logits[i], rows[i].matcher.allowed())
                    tokens, logprobs = sample_tokens(
                        logits[active], [rows[i].params for i in active], [rows[i].generator for i in active]
                    )
                    for i, token, logprob in zip(active, tokens, logprobs):
                        self._record(rows[i], token, logprob)
                    if all(row.done for row in rows):
                        break
                    last = [row.ids[-1] if not row.done else self._pad_id for row in rows]
                    step = torch.tensor(last, device=device).unsqueeze(1)
                    mask = torch.cat([mask, mask.new_ones((len(rows), 1))], dim=1)
                    positions = positions[:, -1:] + 1
                    out = self.model(
                        input_ids=step,
                        attention_mask=mask,
                        position_ids=positions,
                        use_cache=True,
                        **{self._cache_arg: _cache_of(out)},
                    )
        finally:
            self.model.train(was_training)
        elapsed = time.perf_counter() - start
        return [
            Generation(
                text=self.tokenizer.decode(row.ids, skip_special_tokens=False),
                token_ids=row.ids,
                logprobs=row.logprobs if row.params.logprobs else None,
                finish_reason=row.finish,
                prompt_tokens=len(prompt),
                elapsed_s=elapsed,
            )
            for row, prompt in zip(rows, prompts)
        ]

    def _record(self, row: _Row, token: int, logprob: float) -> None:
        row.ids.append(token)
        row.logprobs.append(logprob)
        if row.matcher is not None:
            row.matcher.consume(token)
        if token in self._eos_ids:
            row.finish = "stop"
        elif row.stops and self._hit_stop(row):
            row.finish = "stop"
        elif len(row.ids) >= row.params.max_tokens:
            row.finish = "length"

    def _hit_stop(self, row: _Row) -> bool:
        tail = self.tokenizer.decode(row.ids[-row.window :], skip_special_tokens=False)
        return any(s in tail for s in row.stops)

    def _stop_window(self, params: SamplingParams) -> int:
        # Enough trailing tokens to contain any stop string (each stop is at most its token count).
        return 1 + max((len(self.tokenize(s)) for s in params.stop if s), default=0)

    def _grammar_tokenizer(self) -> Any:
        if self._grammar is None:
            from sqlscout.backends.guidance import GrammarTokenizer

            self._grammar = GrammarTokenizer(self.tokenizer, sorted(self._eos_ids))
        return self._grammar

    def _generator(self, params: SamplingParams) -> Any:
        seed = params.seed if params.seed is not None else int(self._torch.randint(0, 2**31 - 1, (1,), generator=self._rng))
        return self._torch.Generator().manual_seed(seed)


@dataclass
class _Row:
    params: SamplingParams
    generator: Any
    window: int
    ids: list[int] | None = None
    logprobs: list[float] | None = None
    finish: str | None = None
    matcher: Any = None  # a ReplyMatcher when the request carries a constraint

    def __post_init__(self) -> None:
        self.ids = []
        self.logprobs = []
        self.stops = tuple(s for s in self.params.stop if s)

    @property
    def done(self) -> bool:
        return self.finish is not None


def sample_token(logits: Any, params: SamplingParams, generator: Any) -> tuple[int, float]:
    """Draw one token from 1-D ``logits``; see :func:`sample_tokens`.

    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> sample_token(torch.tensor([0.0, 5.0, 1.0]), SamplingParams(temperature=0.0), g)[0]
    1
    >>> sample_token(torch.tensor([0.0, 5.0, 1.0]), SamplingParams(top_k=1), g)
    (1, 0.0)
    """
    tokens, logprobs = sample_tokens(logits.unsqueeze(0), [params], [generator])
    return tokens[0], logprobs[0]


def sample_tokens(logits: Any, params: Sequence[SamplingParams], generators: Sequence[Any]) -> tuple[list[int], list[float]]:
    """Draw one token per row of ``logits`` (``[rows, vocab]``), each row under its own
    settings; return the tokens and their log-probabilities in the processed
    distribution (temperature, then top-k, then top-p, renormalised).

    The cut-down of every row happens in one batched top-k; the draw itself happens on
    the CPU with the row's own ``generator``, so a seed gives the same token on any
    device and in any batch. Greedy rows (temperature 0) report the plain log-softmax.
    """
    import torch

    rows, vocab = logits.shape
    greedy = [p.temperature == 0 for p in params]
    ks = [p.top_k if 0 < p.top_k < vocab else vocab for p in params]
    temps = torch.tensor([p.temperature if p.temperature > 0 else 1.0 for p in params], device=logits.device)
    scaled = logits / temps[:, None]
    width = max(ks)
    if width < vocab or any(p.top_p < 1.0 for p in params):
        values, indices = torch.topk(scaled, width, dim=-1)  # sorted, largest first
    else:
        values, indices = scaled, None
    rank = torch.arange(values.shape[-1], device=values.device)
    cut = rank[None, :] >= torch.tensor(ks, device=values.device)[:, None]  # beyond the row's top-k
    values = values.masked_fill(cut, float("-inf"))
    top_p = torch.tensor([p.top_p for p in params], device=values.device)
    probs = torch.softmax(values, dim=-1)
    before = torch.cumsum(probs, dim=-1) - probs  # mass of the tokens ranked above
    values = values.masked_fill((before >= top_p[:, None]) & (rank[None, :] > 0), float("-inf"))
    logprobs = torch.log_softmax(values, dim=-1).cpu()
    plain = torch.log_softmax(logits, dim=-1) if any(greedy) else None
    tokens: list[int] = []
    out: list[float] = []
    for row in range(rows):
        if greedy[row]:
            token = int(torch.argmax(logits[row]))
            tokens.append(token)
            out.append(float(plain[row, token]))  # type: ignore[index]
            continue
        choice = int(torch.multinomial(logprobs[row].exp(), 1, generator=generators[row]))
        tokens.append(int(indices[row, choice]) if indices is not None else choice)
        out.append(float(logprobs[row, choice]))
    return tokens, out


def _masked(logits: Any, bitmask: bytes) -> Any:
    """``logits`` (1-D) with every token the grammar forbids set to -inf.

    Bit ``i % 32`` of 32-bit word ``i // 32`` allows token ``i``; ids past the mask (the
    padding rows of a model's embedding) are never allowed.
    """
    import torch

    words = torch.frombuffer(bytearray(bitmask), dtype=torch.int32)
    bits = (words[:, None] >> torch.arange(32, dtype=torch.int32)) & 1
    allowed = bits.flatten().bool()[: logits.shape[-1]].to(logits.device)
    out = torch.full_like(logits, float("-inf"))
    out[: allowed.shape[0]] = logits[: allowed.shape[0]].masked_fill(~allowed, float("-inf"))
    return out


def _cache_of(output: Any) -> Any:
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def is_out_of_memory(exc: BaseException) -> bool:
    """True for CUDA out-of-memory and for a CPU allocation that failed."""
    import torch

    if isinstance(exc, torch.OutOfMemoryError):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def _chat_format(tokenizer: Any, thinking: bool | None) -> ChatFormat:
    if getattr(tokenizer, "chat_template", None):
        from sqlscout.backends.chat_template import chat_format_from_tokenizer

        return chat_format_from_tokenizer(tokenizer, thinking=thinking)
    return ChatML()


def _pad_id(model: Any, tokenizer: Any) -> int:
    for candidate in (tokenizer.pad_token_id, getattr(model.config, "pad_token_id", None), tokenizer.eos_token_id):
        if isinstance(candidate, int):
            return candidate
    return 0


def _eos_ids(model: Any, tokenizer: Any, stops: Sequence[str]) -> frozenset[int]:
    """Token ids that end a turn: the model's eos ids and every stop that is one token."""
    ids: set[int] = set()
    generation = getattr(model, "generation_config", None)
    eos = getattr(generation, "eos_token_id", None) if generation is not None else None
    if eos is None:
        eos = getattr(model.config, "eos_token_id", None)
    if isinstance(eos, int):
        ids.add(eos)
    elif eos:
        ids.update(int(e) for e in eos)
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    for stop in stops:
        encoded = tokenizer.encode(stop, add_special_tokens=False)
        if len(encoded) == 1:
            ids.add(int(encoded[0]))
    return frozenset(ids)


# -- loading -----------------------------------------------------------------------


def load_hf(source: str | Path, config: HFConfig | None = None, *, tokenizer: str | Path | None = None) -> HFBackend:
    """Load a model for the hf backend from a local directory, a ``.gguf`` file or a hub id.

    A source that looks like a path (``/``, ``.``, ``~`` or ``.gguf``) must exist; anything
    else is tried as a hub id, which only works where the hub is reachable.
    """
    config = config or HFConfig()
    try:
        import torch  # noqa: F401
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise BackendError("the hf backend needs torch and transformers: pip install 'sqlscout[hf]'") from exc
    text = str(source)
    path = Path(text).expanduser()
    looks_local = text.startswith(("/", ".", "~")) or text.endswith(".gguf") or path.exists()
    if looks_local and not path.exists():
        raise BackendError(f"model not found: {path} does not exist (give a model directory, a .gguf file or a hub id)")
    kwargs: dict[str, Any] = {"dtype": _dtype(config)}
    if path.is_file():
        if path.suffix != ".gguf":
            raise BackendError(f"{path} is a file but not a .gguf model; give a model directory or a .gguf file")
        where, kwargs["gguf_file"] = str(path.parent), path.name
    else:
        where = str(path) if looks_local else text
    try:
        model = AutoModelForCausalLM.from_pretrained(where, **kwargs)
        tok = AutoTokenizer.from_pretrained(str(tokenizer) if tokenizer else where, **({"gguf_file": kwargs["gguf_file"]} if "gguf_file" in kwargs and not tokenizer else {}))
    except OSError as exc:
        hint = "" if looks_local else " (not a local path, and the hub is unreachable or has no such model)"
        raise BackendError(f"cannot load model {text}{hint}: {str(exc).splitlines()[0]}") from exc
    drop_quantization_config(model)
    model.to(_device(config))
    model.eval()
    return HFBackend(model, tok, config)


def drop_quantization_config(model: Any) -> None:
    """Forget that a model came from a quantized file (GGUF is dequantised on load).

    transformers keeps ``config.quantization_config`` and a quantizer on such a model,
    and then refuses to train or save it; the weights in memory are plain tensors.
    """
    if hasattr(model.config, "quantization_config"):
        delattr(model.config, "quantization_config")
    for attr in ("hf_quantizer", "quantization_method"):
        if getattr(model, attr, None) is not None:
            setattr(model, attr, None)
    if getattr(model, "is_quantized", False):
        model.is_quantized = False


def _device(config: HFConfig) -> str:
    import torch

    if config.device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if config.device.startswith("cuda") and not torch.cuda.is_available():
        raise BackendError(f"device {config.device} asked for, but no CUDA GPU is available; use device=cpu")
    return config.device


def _dtype(config: HFConfig) -> Any:
    import torch

    if config.dtype == "auto":
        return torch.bfloat16 if _device(config).startswith("cuda") else torch.float32
    return getattr(torch, config.dtype)
