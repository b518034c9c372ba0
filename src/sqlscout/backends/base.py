"""The one interface every model backend implements.

A backend turns a batch of raw prompts (strings or token ids) into completions with
their token ids and per-token log-probabilities. It also owns the model's chat format
and token counter, so episodes it drives use the model's own turn glue and an exact
token budget. Heavy libraries are imported inside each backend, never here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from typing import Sequence

from sqlscout.env.chat import ChatFormat
from sqlscout.env.grammar import ReplyGrammar
from sqlscout.errors import ConfigError
from sqlscout.env.tokens import TokenCounter

__all__ = ["Backend", "Generation", "GenerationRequest", "SamplingParams", "common_prefix"]


@dataclass(frozen=True)
class SamplingParams:
    """Sampling settings of one request (defaults: the seed card's 0.6 / 0.95 / 20).

    Attributes:
        temperature: 0 means greedy.
        top_p: nucleus mass in (0, 1].
        top_k: 0 or -1 disables top-k.
        seed: per-request seed; None draws from the backend's generator.
        max_tokens: most tokens to generate (>= 1).
        stop: stop strings; generation ends when one is produced.
        logprobs: whether to return per-token log-probabilities of the sampled tokens.
    """

    temperature: float = field(default=0.6, metadata={"help": "Sampling temperature (0: greedy)."})
    top_p: float = field(default=0.95, metadata={"help": "Nucleus mass, in (0, 1]."})
    top_k: int = field(default=20, metadata={"help": "Top-k (0 or -1: off)."})
    seed: int | None = None
    max_tokens: int = 1024
    stop: tuple[str, ...] = ()
    logprobs: bool = True

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ConfigError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < -1:
            raise ConfigError(f"top_k must be >= -1, got {self.top_k}")
        if self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be >= 1, got {self.max_tokens}")

    def with_(self, **changes: object) -> SamplingParams:
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt to continue: ``prompt`` text, or ``prompt_ids`` (preferred when known).

    ``episode`` is the (task index, sample) the turn belongs to, and ``final`` says it is
    the forced final turn (SQL only); the runner sets both, so a backend can keep an
    episode on one cache slot and a script can answer per episode.

    ``constraint``, when set, is the grammar the reply must follow; backends that can
    apply a grammar do (llama.cpp, llguidance in transformers, vLLM), the others ignore it.
    """

    params: SamplingParams
    prompt: str | None = None
    prompt_ids: Sequence[int] | None = None
    episode: tuple[int, int] | None = None
    final: bool = False
    constraint: ReplyGrammar | None = None

    def __post_init__(self) -> None:
        if self.prompt is None and self.prompt_ids is None:
            raise ConfigError("a GenerationRequest needs prompt or prompt_ids")


@dataclass
class Generation:
    """A completion.

    ``text`` includes the end-of-turn marker (e.g. ``<|im_end|>``) when the model emitted
    it, so that ``token_ids`` and ``text`` describe the same tokens; ``logprobs[i]`` is
    the sampler's log-probability of ``token_ids[i]``.

    Where the time went, when the backend knows (0 otherwise): of the ``prompt_tokens``,
    ``prompt_evaluated`` were run through the model and ``prompt_reused`` came from its
    prompt cache; ``prefill_s`` and ``decode_s`` split ``elapsed_s``'s model time
    between reading the prompt and generating.
    """

    text: str
    token_ids: list[int]
    logprobs: list[float] | None
    finish_reason: str  # "stop" (end of turn or stop string), "length", or "error"
    prompt_tokens: int = 0
    elapsed_s: float = 0.0
    error: str | None = field(default=None)
    prompt_evaluated: int = 0
    prompt_reused: int = 0
    prefill_s: float = 0.0
    decode_s: float = 0.0


class Backend(ABC):
    """Where tokens come from. Subclasses: hf, llama-cpp, openai, vllm, scripted."""

    name: str = "backend"
    chat: ChatFormat
    counter: TokenCounter
    # True when generate may be called from several threads at once, each call returning
    # as soon as its own requests are done while the others still decode (a server with
    # continuous batching). The runner then sends each episode's turn as a call of its
    # own, so that no episode waits for another's reply; otherwise it sends waves.
    concurrent_requests: bool = False

    @abstractmethod
    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Complete every request; the i-th result answers the i-th request."""

    def prepare(self, requests: Sequence[GenerationRequest]) -> None:
        """Say that ``requests`` are about to come, each in a call of its own: a backend
        that caches prompts may set up now what they share (the llama-cpp backend
        evaluates their common prefix once). Nothing to do for the others."""

    def tokenize(self, text: str) -> list[int] | None:
        """Token ids of ``text`` (special-token text maps to its single id); None when
        the backend has no tokenizer of its own (e.g. a chat-only HTTP endpoint)."""
        return None

    @property
    def parameters(self) -> int | None:
        """The model's parameter count when the backend knows it (evaluation reports
        compute as 2 x parameters x tokens); None when it does not (a remote server)."""
        return None

    def close(self) -> None:
        """Free the model and any server or thread the backend holds."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the common prefix of two token lists.

    >>> common_prefix([1, 2, 3], [1, 2, 4, 5])
    2
    """
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    low, high = 0, n  # a[:low] == b[:low] and a[:high] != b[:high]; slices compare in C
    while high - low > 1:
        middle = (low + high) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle
    return low
