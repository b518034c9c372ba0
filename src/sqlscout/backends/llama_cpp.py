"""llama.cpp over a GGUF file (llama-cpp-python), with the episode prefix kept in cache.

An episode's prompt only ever grows: each turn is the previous prompt plus the model's
reply plus the tool results. Re-reading the whole transcript every turn would make an
episode quadratic in its length, so the backend keeps each recent sequence's tokens in
the KV cache. It holds one llama.cpp context with ``slots`` sequences sharing
``n_ctx`` cells (a unified KV cache); a request goes to the slot whose cached tokens
share the longest prefix with its prompt, and only the new suffix is evaluated; when
another slot holds a longer prefix (samples of one prompt), its cells are shared.
Requests of one :meth:`LlamaCppBackend.generate` call decode together, one token per
sequence per step, in a single llama.cpp batch.

Sampling is done here, in numpy, from the logits llama.cpp returns: temperature,
top-k, top-p, a per-request seed, and the log-probability of every sampled token in
the distribution it was drawn from (as the hf backend reports it).

>>> backend = LlamaCppBackend("model.gguf")  # doctest: +SKIP
>>> backend.generate([GenerationRequest(SamplingParams(max_tokens=8), prompt="Hi")])  # doctest: +SKIP
"""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from sqlscout.backends.base import Backend, Generation, GenerationRequest, SamplingParams, common_prefix
from sqlscout.backends.threads import auto_threads
from sqlscout.env.chat import ChatFormat, ChatML
from sqlscout.errors import BackendError, ConfigError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CacheStats", "LlamaCppBackend", "LlamaCppConfig", "sample_token"]


@dataclass(frozen=True)
class LlamaCppConfig:
    """Settings of the llama.cpp context.

    Attributes:
        n_ctx: KV-cache cells shared by all slots; one prompt plus its reply must fit.
        slots: sequences kept in cache at once (set it to the number of episodes in
            flight so every episode keeps its prefix); also the widest decode batch.
        n_batch: most prompt tokens evaluated per llama.cpp call.
        n_threads: CPU threads; None takes the cores idle at start
            (:func:`sqlscout.backends.threads.auto_threads`): llama.cpp's threads spin
            while they wait for each other, so a thread on a busy core slows all of them.
        seed: seeds the sampler for requests without a seed of their own.
    """

    n_ctx: int = 32_768
    slots: int = 8
    n_batch: int = 512
    n_threads: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.n_ctx < 64:
            raise ConfigError(f"n_ctx must be >= 64, got {self.n_ctx}")
        if not 1 <= self.slots <= 64:
            raise ConfigError(f"slots must be in 1..64, got {self.slots}")
        if self.n_batch < 1:
            raise ConfigError(f"n_batch must be >= 1, got {self.n_batch}")
        if self.n_threads is not None and self.n_threads < 1:
            raise ConfigError(f"n_threads must be >= 1 or None, got {self.n_threads}")


@dataclass
class CacheStats:
    """Prompt tokens seen, and how many of them came from the cache instead of being evaluated."""

    prompt_tokens: int = 0
    reused_tokens: int = 0
    evaluated_tokens: int = 0  # prompt suffixes plus sampled tokens fed back
    generated_tokens: int = 0


@dataclass
class _Slot:
    seq_id: int
    ids: list[int] = field(default_factory=list)  # tokens whose K/V are in the cache
    last_used: int = 0


@dataclass
class _Job:
    index: int
    request: GenerationRequest
    prompt_ids: list[int]
    slot: _Slot
    rng: Any
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    pieces: bytearray = field(default_factory=bytearray)
    logits: Any = None
    finish: str | None = None
    error: str | None = None


class _LlamaCounter:
    """Token counts from the model's own tokenizer, so the episode budget is exact."""

    def __init__(self, backend: LlamaCppBackend) -> None:
        self._backend = backend

    def count(self, text: str) -> int:
        return len(self._backend.tokenize(text)) if text else 0


def chat_format_from_gguf(metadata: dict[str, str], eos_token: str, special_tokens: Sequence[str] = ()) -> ChatFormat:
    """The turn format of a GGUF model, derived from its embedded chat template
    (``tokenizer.chat_template``); ChatML when the file has none."""
    template = metadata.get("tokenizer.chat_template", "")
    if not template:
        return ChatML()
    from sqlscout.backends.chat_template import chat_format_from_template

    return chat_format_from_template(template, eos_token=eos_token, special_tokens=special_tokens)


class LlamaCppBackend(Backend):
    """Generation from a GGUF file with llama.cpp.

    Args:
        model_path: the ``.gguf`` file.
        config: context size, slots, threads, seed.
        chat: the turn format; derived from the GGUF's chat template when None.
    """

    name = "llama-cpp-python"

    def __init__(self, model_path: str | Path, config: LlamaCppConfig | None = None, *, chat: ChatFormat | None = None):
        self.config = config or LlamaCppConfig()
        self.model_path = Path(model_path)
        if not self.model_path.is_file():
            raise BackendError(f"model file not found: {self.model_path}; give an existing .gguf file or a preset name")
        try:
            import llama_cpp
            import numpy as np
            from llama_cpp import _internals
        except ImportError:
            raise BackendError("the llama-cpp backend needs llama-cpp-python: pip install 'sqlscout[llama]'") from None
        self._lib, self._np = llama_cpp, np
        llama_cpp.llama_log_set(_silent_log, None)  # llama.cpp logs every load to stderr otherwise
        _init_backend(llama_cpp)
        model_params = llama_cpp.llama_model_default_params()
        try:
            self._model = _internals.LlamaModel(path_model=str(self.model_path), params=model_params, verbose=False)
        except ValueError as exc:
            raise BackendError(f"llama.cpp could not load {self.model_path}: {exc} (is it a GGUF file?)") from None
        threads = self.config.n_threads or auto_threads()
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = self.config.n_ctx
        params.n_batch = params.n_ubatch = self.config.n_batch
        params.n_seq_max = self.config.slots
        params.kv_unified = True  # slots share the cells: episodes differ a lot in length
        params.n_threads = params.n_threads_batch = threads
        try:
            self._ctx = _internals.LlamaContext(model=self._model, params=params, verbose=False)
        except ValueError as exc:
            raise BackendError(f"llama.cpp could not create a context of {self.config.n_ctx} tokens: {exc}") from None
        self._batch = llama_cpp.llama_batch_init(max(self.config.n_batch, self.config.slots), 0, 1)
        self._memory = llama_cpp.llama_get_memory(self._ctx.ctx)
        self._vocab = self._model.vocab
        self._n_vocab = self._model.n_vocab()
        self._pieces: dict[int, bytes] = {}
        self._slots = [_Slot(seq_id=i) for i in range(self.config.slots)]
        self._clock = 0
        self._rng = np.random.default_rng(self.config.seed)
        self.metadata: dict[str, str] = self._model.metadata()
        eos = self._piece(self._model.token_eos()).decode("utf-8", errors="replace")
        self.chat = chat or chat_format_from_gguf(self.metadata, eos, [eos, "<|endoftext|>"])
        self.counter = _LlamaCounter(self)
        self.stats = CacheStats()

    # -- Backend interface -----------------------------------------------------------

    def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text`` (no BOS; special-token text maps to its id)."""
        return list(self._model.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    @property
    def parameters(self) -> int | None:
        return int(self._model.n_params()) if getattr(self, "_model", None) is not None else None

    def detokenize(self, ids: Sequence[int]) -> str:
        return self._model.detokenize(list(ids), special=True).decode("utf-8", errors="replace")

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        results: list[Generation | None] = [None] * len(requests)
        width = self.config.slots
        for start in range(0, len(requests), width):
            self._run_wave(list(enumerate(requests))[start : start + width], results)
        return [r for r in results if r is not None]

    def close(self) -> None:
        if getattr(self, "_batch", None) is not None:
            self._lib.llama_batch_free(self._batch)
            self._batch = None
        for name in ("_ctx", "_model"):
            obj = getattr(self, name, None)
            if obj is not None:
                obj.close()
                setattr(self, name, None)

    # -- one wave: at most `slots` requests decoded together --------------------------

    def _run_wave(self, wave: list[tuple[int, GenerationRequest]], results: list[Generation | None]) -> None:
        started = time.perf_counter()
        jobs: list[_Job] = []
        taken: set[int] = set()
        for index, request in wave:
            ids = list(request.prompt_ids) if request.prompt_ids is not None else self.tokenize(request.prompt or "")
            if not ids:
                ids = [self._model.token_bos()]
            if len(ids) + 1 > self.config.n_ctx:
                results[index] = _failed(f"the prompt is {len(ids)} tokens; the context holds {self.config.n_ctx}")
                continue
            slot = self._pick_slot(ids, taken)
            taken.add(slot.seq_id)
            seed = request.params.seed
            rng = self._np.random.default_rng(seed) if seed is not None else self._rng
            jobs.append(_Job(index, request, ids, slot, rng))
        for job in jobs:
            self._prefill(job, taken)
        active = [job for job in jobs if job.finish is None]
        while active:
            for job in active:
                self._sample_into(job)
            active = [job for job in active if job.finish is None]
            if active:
                self._decode_step(active, taken)
                active = [job for job in active if job.finish is None]
        elapsed = time.perf_counter() - started
        for job in jobs:
            results[job.index] = Generation(
                text=job.pieces.decode("utf-8", errors="replace"),
                token_ids=job.tokens,
                logprobs=job.logprobs if job.request.params.logprobs else None,
                finish_reason=job.finish or "error",
                prompt_tokens=len(job.prompt_ids),
                elapsed_s=elapsed,
                error=job.error,
            )
            self.stats.generated_tokens += len(job.tokens)

    def _pick_slot(self, ids: list[int], taken: set[int]) -> _Slot:
        """The free slot sharing the longest prefix with ``ids``; the least recently used if none does."""
        free = [s for s in self._slots if s.seq_id not in taken]
        best = max(free, key=lambda s: (common_prefix(s.ids, ids), -s.last_used))
        if common_prefix(best.ids, ids) == 0:
            best = min(free, key=lambda s: s.last_used)
        self._clock += 1
        best.last_used = self._clock
        return best

    def _prefill(self, job: _Job, taken: set[int]) -> None:
        slot, ids = job.slot, job.prompt_ids
        keep = min(common_prefix(slot.ids, ids), len(ids) - 1)  # the last token is re-read for its logits
        self._lib.llama_memory_seq_rm(self._memory, slot.seq_id, keep, -1)
        del slot.ids[keep:]
        donor = max(self._slots, key=lambda s: common_prefix(s.ids, ids))
        shared = min(common_prefix(donor.ids, ids), len(ids) - 1)
        if shared > keep:
            # Another sequence holds a longer prefix (a GRPO group's samples share their
            # prompt): share its cells instead of evaluating the same tokens again.
            self._lib.llama_memory_seq_rm(self._memory, slot.seq_id, -1, -1)
            self._lib.llama_memory_seq_cp(self._memory, donor.seq_id, slot.seq_id, 0, shared)
            slot.ids[:] = donor.ids[:shared]
            keep = shared
        self.stats.prompt_tokens += len(ids)
        self.stats.reused_tokens += keep
        suffix = ids[keep:]
        self._make_room(len(suffix), taken)
        for start in range(0, len(suffix), self.config.n_batch):
            chunk = suffix[start : start + self.config.n_batch]
            self._batch.n_tokens = 0
            for offset, token in enumerate(chunk):
                self._add(token, len(slot.ids) + offset, slot.seq_id, start + offset == len(suffix) - 1)
            if not self._decode(taken, len(chunk)):
                job.finish, job.error = "error", "the KV cache is full; lower slots or raise n_ctx"
                return
            slot.ids.extend(chunk)
        self.stats.evaluated_tokens += len(suffix)
        job.logits = self._logits(self._batch.n_tokens - 1)

    def _sample_into(self, job: _Job) -> None:
        """Draw the next token of ``job`` from its logits and decide whether it stopped."""
        params = job.request.params
        token, logprob = sample_token(job.logits, params, job.rng)
        job.tokens.append(token)
        job.logprobs.append(logprob)
        job.pieces += self._piece(token)
        if self._lib.llama_vocab_is_eog(self._vocab, token):
            job.finish = "stop"
        elif params.stop and _hits_stop(job.pieces, params.stop):
            job.finish = "stop"
        elif len(job.tokens) >= params.max_tokens:
            job.finish = "length"
        elif len(job.slot.ids) + 1 >= self.config.n_ctx:
            job.finish = "length"

    def _decode_step(self, active: list[_Job], taken: set[int]) -> None:
        """Feed every active job its last sampled token, in one batch."""
        self._batch.n_tokens = 0
        for job in active:
            self._add(job.tokens[-1], len(job.slot.ids), job.slot.seq_id, True)
        if not self._decode(taken, len(active)):
            for job in active:
                job.finish, job.error = "length", "the KV cache is full; lower slots or raise n_ctx"
            return
        for row, job in enumerate(active):
            job.slot.ids.append(job.tokens[-1])
            job.logits = self._logits(row)
        self.stats.evaluated_tokens += len(active)

    # -- llama.cpp plumbing -----------------------------------------------------------

    def _add(self, token: int, pos: int, seq_id: int, logits: bool) -> None:
        b, i = self._batch, self._batch.n_tokens
        b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = token, pos, 1, logits
        b.seq_id[i][0] = seq_id
        b.n_tokens = i + 1

    def _decode(self, taken: set[int], n_new: int) -> bool:
        """Run the batch; when the cache has no room, evict idle slots and retry."""
        while True:
            code = self._lib.llama_decode(self._ctx.ctx, self._batch)
            if code == 0:
                return True
            if code != 1 or not self._evict_one(taken):
                return False

    def _make_room(self, needed: int, taken: set[int]) -> None:
        used = sum(len(s.ids) for s in self._slots)
        while used + needed > self.config.n_ctx and self._evict_one(taken):
            used = sum(len(s.ids) for s in self._slots)

    def _evict_one(self, taken: set[int]) -> bool:
        idle = [s for s in self._slots if s.seq_id not in taken and s.ids]
        if not idle:
            return False
        victim = min(idle, key=lambda s: s.last_used)
        self._lib.llama_memory_seq_rm(self._memory, victim.seq_id, -1, -1)
        victim.ids.clear()
        return True

    def _piece(self, token: int) -> bytes:
        """The bytes of one token (special tokens as their text), memoised."""
        piece = self._pieces.get(token)
        if piece is None:
            buffer = ctypes.create_string_buffer(64)
            n = self._lib.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, True)
            if n < 0:
                buffer = ctypes.create_string_buffer(-n)
                n = self._lib.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, True)
            piece = self._pieces[token] = buffer.raw[:n]
        return piece

    def _logits(self, row: int) -> np.ndarray:
        pointer = self._lib.llama_get_logits_ith(self._ctx.ctx, row)
        return self._np.ctypeslib.as_array(pointer, shape=(self._n_vocab,)).copy()


def sample_token(logits: np.ndarray, params: SamplingParams, rng: Any) -> tuple[int, float]:
    """One token from ``logits`` under ``params``, and its log-probability in the
    processed distribution (temperature, then top-k, then top-p, renormalised) — the
    same convention as the hf backend; greedy reports the plain log-softmax.

    >>> import numpy as np
    >>> sample_token(np.array([0.0, 2.0, 1.0]), SamplingParams(temperature=0), None)[0]
    1
    >>> sample_token(np.array([0.0, 5.0, 1.0]), SamplingParams(top_k=1), np.random.default_rng(0))
    (1, 0.0)
    """
    import numpy as np

    if params.temperature == 0:
        token = int(np.argmax(logits))
        shifted = logits.astype(np.float64) - logits[token]
        return token, float(-np.log(np.exp(shifted).sum()))
    scaled = logits.astype(np.float64) / params.temperature
    vocab = scaled.size
    k = params.top_k if 0 < params.top_k < vocab else vocab
    candidates = np.argpartition(-scaled, k - 1)[:k] if k < vocab else np.arange(vocab)
    candidates = candidates[np.argsort(-scaled[candidates], kind="stable")]
    values = scaled[candidates]
    if params.top_p < 1.0:
        probs = np.exp(values - values[0])
        probs /= probs.sum()
        before = np.cumsum(probs) - probs  # mass of the tokens ranked above
        keep = max(1, int((before < params.top_p).sum()))
        candidates, values = candidates[:keep], values[:keep]
    logprobs = values - values[0]
    logprobs -= np.log(np.exp(logprobs).sum())
    choice = int(rng.choice(len(candidates), p=np.exp(logprobs)))
    return int(candidates[choice]), float(logprobs[choice])


def _hits_stop(pieces: bytearray, stops: Sequence[str]) -> bool:
    longest = max(len(s.encode("utf-8")) for s in stops)
    tail = bytes(pieces[-(longest + 8) :]).decode("utf-8", errors="ignore")
    return any(s in tail for s in stops)


def _failed(message: str) -> Generation:
    return Generation(text="", token_ids=[], logprobs=None, finish_reason="error", error=message)


_BACKEND_READY = False


def _init_backend(lib: Any) -> None:
    """llama.cpp's process-wide init (CPU feature detection, thread pool); once."""
    global _BACKEND_READY
    if not _BACKEND_READY:
        lib.llama_backend_init()
        _BACKEND_READY = True


def _silent_log(level: int, text: bytes, user_data: Any) -> None:
    """llama.cpp's log callback: drop everything (errors surface as return codes)."""


try:  # the callback must be a ctypes function object kept alive for the process
    import llama_cpp as _llama_cpp

    _silent_log = _llama_cpp.llama_log_callback(_silent_log)  # type: ignore[assignment]
except ImportError:  # pragma: no cover - the backend raises a clear error on use
    pass
