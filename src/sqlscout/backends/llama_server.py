"""llama.cpp's server inside this process (the prebuilt ``xllamacpp`` wheel): the default GGUF backend.

``xllamacpp`` is llama.cpp's own server compiled as a Python extension: nothing to
compile at install time, continuous batching over parallel slots, a prompt cache per
slot, per-token log-probabilities. It listens on 127.0.0.1 on a port the OS picks, and
the server stops with the backend (or the process). This module talks to it over that
loopback port with the standard library only.

How requests use the cache:

- Every slot keeps the tokens of its last request and the episode it served
  (``GenerationRequest.episode``). A request takes its episode's slot back when it is
  free, else a free slot that holds nothing another episode may come back for (the one
  sharing the longest prefix with its prompt), else the least recently used one; the
  server evaluates only the prompt past what the slot holds.
- Episodes share a prefix — the system prompt, and in the full schema regime the
  schema of their database. Such a prefix is evaluated once, its KV state saved to a
  file (milliseconds), and restored into each slot that starts from it: for the new
  prompts of one :meth:`LlamaServerBackend.generate` call, or of one
  :meth:`LlamaServerBackend.prepare` (the runner's episodes that start together), before
  they are sent; and for a lone new prompt whose prefix another slot holds (an episode
  in flight on the same database). So a prefix is evaluated once per database, not
  once per episode.
- ``generate`` may be called from many threads at once (the runner sends each
  episode's turn alone): each request holds a slot while it runs, at most ``slots``
  run together, the server decodes all of them in one batch per step, and a call
  returns as soon as its own requests are done. Slot choice and the saved states are
  kept under one lock.

Prompt tokens evaluated vs reused and prefill vs decode seconds come from the server's
own timings, per request (on each :class:`~sqlscout.backends.base.Generation`) and in
total (:attr:`LlamaServerBackend.stats`).

>>> backend = LlamaServerBackend("model.gguf")  # doctest: +SKIP
>>> backend.generate([GenerationRequest(SamplingParams(max_tokens=8), prompt="Hi")])  # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence
from urllib.error import HTTPError, URLError
from urllib.request import Request, urlopen

from sqlscout.backends.base import Backend, Generation, GenerationRequest, SamplingParams, common_prefix
from sqlscout.backends.cache_stats import PromptCacheStats
from sqlscout.backends.jump_forward import JumpForward
from sqlscout.backends.threads import auto_threads
from sqlscout.env.chat import ChatFormat, ChatML
from sqlscout.env.grammar import jump_names
from sqlscout.errors import BackendError, ConfigError

__all__ = ["LlamaServerBackend", "LlamaServerConfig", "PromptCacheStats", "common_prefix"]

# A shared prefix shorter than this is cheaper to evaluate again than to save and restore.
_MIN_SHARED = 32


@dataclass(frozen=True)
class LlamaServerConfig:
    """Settings of the in-process llama.cpp server.

    Attributes:
        n_ctx: KV-cache cells, split evenly among the slots; one prompt plus its reply
            must fit in a slot's share. (Not one cache all slots draw on: llama.cpp then
            computes each token's attention over every slot's cells, and with 8 slots an
            evaluation ran 1.8 times slower than one episode at a time.)
        slots: requests decoded together (set it to the number of episodes in flight, so
            every episode keeps its prefix in a slot of its own).
        n_batch: most prompt tokens evaluated per llama.cpp call.
        n_threads: CPU threads; None takes the cores that are idle now (a tenth of a
            second of /proc/stat, :func:`sqlscout.backends.threads.auto_threads`):
            llama.cpp's threads wait for each other every step, so
            a thread on a busy core slows all of them.
        seed: seeds the sampler for requests without a seed of their own.
        share_prefixes: evaluate a prefix that several new requests share once, and
            restore it into each of their slots.
        timeout_s: limit on one request, generation included.
        jump_forward: under a grammar whose replies can only be call lines, write the
            text the grammar forces (``{"tool": "``, then ``", "args": {"sql": "`` after
            the name; a whole submission when only one query may be submitted) into the
            prompt instead of decoding it token by token. Only when no log-probabilities
            are asked for (answering, not training).
        lora: a GGUF LoRA adapter applied on top of the model at full scale (a policy
            trained with LoRA, :func:`sqlscout.train.gguf_lora.export_lora_gguf`).
    """

    n_ctx: int = 32_768
    slots: int = 8
    n_batch: int = 512
    n_threads: int | None = None
    seed: int = 0
    share_prefixes: bool = True
    timeout_s: float = 3600.0
    jump_forward: bool = True
    lora: Path | None = None

    def __post_init__(self) -> None:
        if self.n_ctx < 64:
            raise ConfigError(f"n_ctx must be >= 64, got {self.n_ctx}")
        if not 1 <= self.slots <= 256:
            raise ConfigError(f"slots must be in 1..256, got {self.slots}")
        if self.n_batch < 1:
            raise ConfigError(f"n_batch must be >= 1, got {self.n_batch}")
        if self.n_threads is not None and self.n_threads < 1:
            raise ConfigError(f"n_threads must be >= 1 or None, got {self.n_threads}")
        if self.timeout_s <= 0:
            raise ConfigError(f"timeout_s must be > 0, got {self.timeout_s}")


@dataclass
class _Slot:
    index: int
    ids: list[int] = field(default_factory=list)  # what the server's slot holds, as far as we know
    last_used: int = 0
    busy: bool = False  # a request (or a save) holds it
    owner: tuple[int, int] | None = None  # the episode whose transcript it holds


@dataclass
class _Saved:
    """A KV state saved to a file: the tokens it holds."""

    ids: list[int]
    filename: str
    last_used: int = 0
    readers: int = 0  # restores in progress: the file stays until they are done


class _ServerCounter:
    """Token counts from the model's own tokenizer, so the episode budget is exact."""

    def __init__(self, backend: LlamaServerBackend) -> None:
        self._backend = backend

    def count(self, text: str) -> int:
        return len(self._backend.tokenize(text)) if text else 0


class LlamaServerBackend(Backend):
    """Generation from a GGUF file with llama.cpp's server, in process.

    Args:
        model_path: the ``.gguf`` file.
        config: context size, slots, threads, seed.
        chat: the turn format; derived from the GGUF's chat template when None.

    Raises:
        BackendError: xllamacpp is missing, or the file does not load.
    """

    name = "llama-cpp"
    concurrent_requests = True

    def __init__(self, model_path: str | Path, config: LlamaServerConfig | None = None, *, chat: ChatFormat | None = None):
        self.config = config or LlamaServerConfig()
        self.model_path = Path(model_path)
        if not self.model_path.is_file():
            raise BackendError(f"model file not found: {self.model_path}; give an existing .gguf file or a preset name")
        try:
            import xllamacpp
        except ImportError:
            raise BackendError("the llama-cpp backend needs xllamacpp: pip install xllamacpp") from None
        if self.config.lora is not None and not Path(self.config.lora).is_file():
            raise BackendError(f"LoRA adapter not found: {self.config.lora}; give a GGUF LoRA file")
        self._states_dir = tempfile.TemporaryDirectory(prefix="sqlscout-kv-")
        self.threads = self.config.n_threads or auto_threads()
        params = xllamacpp.CommonParams()
        params.model.path = str(self.model_path)
        params.hostnames = ["127.0.0.1"]
        params.port = 0  # the OS picks a free port
        params.n_ctx = self.config.n_ctx
        params.n_parallel = self.config.slots
        params.kv_unified = False  # each slot attends over its own cells only
        params.n_batch = params.n_ubatch = self.config.n_batch
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = self.threads
        params.cache_ram_mib = 0  # slots and saved prefixes are managed here
        params.endpoint_slots = True
        # a request per slot, plus tokenize/detokenize calls beside them
        params.n_threads_http = self.config.slots + 4
        params.slot_save_path = self._states_dir.name + os.sep
        params.warmup = False
        params.verbosity = -1
        params.sampling.seed = self.config.seed
        if self.config.lora is not None:
            adapter = xllamacpp.CommonAdapterLoraInfo()
            adapter.path, adapter.scale = str(self.config.lora), 1.0
            params.lora_adapters = [adapter]
        try:
            self._server: Any = xllamacpp.Server(params)
        except Exception as exc:  # noqa: BLE001 - the extension raises plain exceptions
            self._states_dir.cleanup()
            raise BackendError(f"llama.cpp could not load {self.model_path}: {exc} (is it a GGUF file?)") from None
        self.url: str = self._server.listening_address
        props = self._get("/props")
        self.metadata: dict[str, str] = {"tokenizer.chat_template": props.get("chat_template") or ""}
        self._eos = str(props.get("eos_token") or "<|endoftext|>")
        models = self._get("/v1/models").get("data") or [{}]
        self._n_params = int((models[0].get("meta") or {}).get("n_params") or 0) or None
        self.chat = chat or _chat_format(self.metadata["tokenizer.chat_template"], self._eos)
        self.counter = _ServerCounter(self)
        self.stats = PromptCacheStats()
        self._slots = [_Slot(i) for i in range(self.config.slots)]
        # a slot's share of the cache, as the server rounded it
        shares = [int(s.get("n_ctx") or 0) for s in self._get("/slots")]
        self.slot_ctx: int = min(shares) if shares and min(shares) > 0 else self.config.n_ctx // self.config.slots
        self._saved: list[_Saved] = []
        self._clock = 0
        self._lock = threading.Lock()  # slots, saved states, stats, the clock
        self._slot_freed = threading.Condition(self._lock)
        self._pool = ThreadPoolExecutor(self.config.slots, thread_name_prefix="sqlscout-llama")
        self._jumper = JumpForward(self.tokenize, self.detokenize)

    # -- Backend interface -----------------------------------------------------------

    def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text`` (no BOS; special-token text maps to its id)."""
        if not text:
            return []
        return list(self._post("/tokenize", {"content": text, "add_special": False, "parse_special": True})["tokens"])

    def detokenize(self, ids: Sequence[int]) -> str:
        return str(self._post("/detokenize", {"tokens": list(ids)})["content"]) if ids else ""

    @property
    def parameters(self) -> int | None:
        return self._n_params

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        prompts = [self._prompt_ids(r) for r in requests]
        if len(requests) == 1:  # on the caller's thread: the runner sends each episode's turn alone
            return [self._complete(requests[0], prompts[0])]
        if self.config.share_prefixes:
            self._share_prefixes(prompts)
        futures = [self._pool.submit(self._complete, *job) for job in zip(requests, prompts)]
        return [f.result() for f in futures]

    def prepare(self, requests: Sequence[GenerationRequest]) -> None:
        """Evaluate once, and save, the prefixes that several of ``requests`` share and no
        slot or saved state holds yet (the runner calls it for episodes starting together)."""
        if self.config.share_prefixes and len(requests) > 1:
            self._share_prefixes([self._prompt_ids(r) for r in requests])

    def close(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        self._server = None  # the extension stops its threads and frees the model
        states = getattr(self, "_states_dir", None)
        if states is not None:
            states.cleanup()

    # -- one request: a slot of its own while it runs ------------------------------------

    def _prompt_ids(self, request: GenerationRequest) -> list[int]:
        return list(request.prompt_ids) if request.prompt_ids is not None else self.tokenize(request.prompt or "")

    def _complete(self, request: GenerationRequest, ids: list[int]) -> Generation:
        started = time.perf_counter()
        if not ids or len(ids) + 1 > self.slot_ctx:
            return _failed(f"the prompt is {len(ids)} tokens; a slot's context holds {self.slot_ctx}")
        slot = self._acquire(ids, request.episode)
        held: list[int] = []  # what the slot holds when it is given back: unknown after a failure
        jump = (
            request.constraint is not None
            and self.config.jump_forward
            and not request.params.logprobs
            and jump_names(request.constraint) is not None
        )
        try:
            self._fill(slot, ids)
            forced = 0
            if jump:
                assert request.constraint is not None

                def sample(grammar: str, budget: int, stop: str | None, reply: list[int]) -> dict[str, Any]:
                    return self._sample(request.params, ids + reply, slot.index, grammar, budget, stop)

                data, timings, forced = self._jumper.reply(request.constraint, request.params.max_tokens, sample)
            else:
                grammar = request.constraint.gbnf() if request.constraint is not None else None
                data = self._post("/completion", self._body(request.params, ids, slot.index, grammar))
                timings = [data.get("timings") or {}]
            held = ids + [int(t) for t in data.get("tokens") or []]
        except BackendError as exc:
            return _failed(str(exc))
        finally:
            self._release(slot, held)
        tokens = held[len(ids) :]
        reused = int(timings[0].get("cache_n", 0)) if timings else 0  # the later requests re-send the prompt
        evaluated = sum(int(t.get("prompt_n", 0)) for t in timings)
        prefill_s = sum(float(t.get("prompt_ms", 0.0)) for t in timings) / 1000
        decode_s = sum(float(t.get("predicted_ms", 0.0)) for t in timings) / 1000
        with self._lock:
            s = self.stats
            s.requests += 1
            s.forced_tokens += forced
            s.prompt_tokens += len(ids)
            s.reused_tokens += reused
            s.evaluated_tokens += evaluated
            s.generated_tokens += len(tokens)
            s.prefill_s += prefill_s
            s.decode_s += decode_s
        return Generation(
            text=self.detokenize(tokens),
            token_ids=tokens,
            logprobs=_logprobs(data, len(tokens)) if request.params.logprobs else None,
            finish_reason="length" if data.get("stop_type") == "limit" else "stop",
            prompt_tokens=len(ids),
            elapsed_s=time.perf_counter() - started,
            prompt_evaluated=evaluated,
            prompt_reused=reused,
            prefill_s=prefill_s,
            decode_s=decode_s,
        )

    def _sample(
        self, params: SamplingParams, ids: list[int], slot: int, grammar: str, budget: int, stop: str | None
    ) -> dict[str, Any]:
        """One jump-forward request: ``ids`` continued under ``grammar``, at most ``budget``
        tokens, stopping also at ``stop``."""
        body = self._body(params, ids, slot, grammar)
        body["n_predict"] = min(body["n_predict"], budget)
        if stop is not None:
            body["stop"] = [*body.get("stop", []), stop]
        return self._post("/completion", body)

    def _body(self, params: SamplingParams, ids: list[int], slot: int, grammar: str | None = None) -> dict[str, Any]:
        left = self.slot_ctx - len(ids)
        body: dict[str, Any] = {
            "prompt": ids,
            "id_slot": slot,
            "cache_prompt": True,
            "n_predict": min(params.max_tokens, left),
            "temperature": params.temperature,
            "top_k": max(0, params.top_k),
            "top_p": params.top_p,
            "min_p": 0.0,
            "repeat_penalty": 1.0,
            # temperature before top-p, as the other backends do (top-k does not care)
            "samplers": ["top_k", "temperature", "top_p"],
            "return_tokens": True,
            "n_probs": 1 if params.logprobs else 0,
            # the probability in the distribution the token was drawn from
            "post_sampling_probs": params.logprobs and params.temperature > 0,
        }
        if params.seed is not None:
            body["seed"] = params.seed
        if grammar is not None:  # the reply grammar (--constrain), as llama.cpp's GBNF
            body["grammar"] = grammar
        stops = [s for s in params.stop if s not in self.chat.stop]  # end-of-turn tokens stop as EOS
        if stops:
            body["stop"] = stops
        return body

    # -- slots and shared prefixes -----------------------------------------------------

    def _acquire(self, ids: list[int], episode: tuple[int, int] | None) -> _Slot:
        """A free slot for a prompt (waiting for one when all are busy), held until :meth:`_release`."""
        with self._slot_freed:
            # the episode's own slot may be held for a moment, for a save: wait for it
            own = next((s for s in self._slots if episode is not None and s.owner == episode), None)
            while all(s.busy for s in self._slots) or (own is not None and own.busy and own.owner == episode):
                self._slot_freed.wait()
            slot = _choose([s for s in self._slots if not s.busy], ids, episode)
            slot.busy, slot.owner = True, episode
            self._clock += 1
            slot.last_used = self._clock
            return slot

    def _release(self, slot: _Slot, ids: list[int]) -> None:
        with self._slot_freed:
            slot.ids, slot.busy = ids, False
            self._slot_freed.notify_all()  # the waiter may want this slot in particular

    def _take_idle(self, slot: _Slot, ids: list[int]) -> bool:
        """Hold ``slot`` for a save if it is free and still holds ``ids``."""
        with self._lock:
            if slot.busy or slot.ids is not ids:
                return False
            slot.busy = True
            return True

    def _fill(self, slot: _Slot, ids: list[int]) -> None:
        """Bring into ``slot`` (held) the longest prefix of ``ids`` that is cached anywhere:
        a saved state, or another slot (an episode in flight on the same database),
        which is saved first so that the episodes after this one find it too."""
        own = common_prefix(slot.ids, ids)
        with self._lock:
            others = [(s, s.ids) for s in self._slots if s is not slot]
            saved = [s.ids for s in self._saved]
        n_saved = max((common_prefix(held, ids) for held in saved), default=0)
        donor, donor_ids = max(others, key=lambda o: common_prefix(o[1], ids), default=(None, []))
        n_donor = min(common_prefix(donor_ids, ids), len(ids) - 1)
        if donor is not None and self.config.share_prefixes and n_donor >= max(own, n_saved) + _MIN_SHARED:
            if self._take_idle(donor, donor_ids):
                try:
                    self._save_slot(donor, donor_ids)
                finally:
                    self._release(donor, donor_ids)
            else:  # it is decoding: evaluate the shared part here, and save it
                self._build_prefix(ids[:n_donor], slot)
                return
        self._restore_best(slot, ids)

    def _restore_best(self, slot: _Slot, ids: list[int]) -> None:
        """Load the saved state sharing the most with ``ids`` into ``slot`` (held) when it
        beats what the slot holds."""
        own = common_prefix(slot.ids, ids)
        with self._lock:
            saved = list(self._saved)
        best = max(saved, key=lambda s: common_prefix(s.ids, ids), default=None)
        if best is None or common_prefix(best.ids, ids) < own + _MIN_SHARED:
            return
        with self._lock:
            if best not in self._saved:  # dropped meanwhile: evaluate instead
                return
            self._clock += 1
            best.last_used = self._clock
            best.readers += 1
        try:
            self._post(f"/slots/{slot.index}?action=restore", {"filename": best.filename})
        finally:
            with self._lock:
                best.readers -= 1
        slot.ids = list(best.ids)
        with self._lock:
            self.stats.restores += 1

    def _share_prefixes(self, prompts: list[list[int]]) -> None:
        """Make each prefix that several prompts share, and that no saved state or slot
        ready for it holds yet, available to restore: saved from a free slot that already
        holds it (an episode in flight on the same database), else evaluated once in a
        slot of its own and saved."""
        order = sorted(range(len(prompts)), key=lambda i: prompts[i])
        shared = [0] * len(prompts)
        for a, b in zip(order, order[1:]):  # in sorted order the longest match is a neighbour
            n = common_prefix(prompts[a], prompts[b])
            shared[a], shared[b] = max(shared[a], n), max(shared[b], n)
        with self._lock:
            saved = [s.ids for s in self._saved]
            held = [s.ids for s in self._slots]
        wanted: set[tuple[int, ...]] = set()
        for ids, n in zip(prompts, shared):
            n = min(n, len(ids) - 1)  # a request evaluates at least its last token
            if n >= _MIN_SHARED and n >= _cached(ids, saved, held) + _MIN_SHARED:
                wanted.add(tuple(ids[:n]))
        for key in sorted(wanted, key=len):  # shorter first: a longer one restores it and goes on
            prefix = list(key)
            with self._lock:
                saved = [s.ids for s in self._saved]
                others = [(s, s.ids) for s in self._slots]
            # "How many albums…" and "How many tracks…" share a few words past the system
            # prompt: not worth a state of their own
            if max((common_prefix(ids, prefix) for ids in saved), default=0) + _MIN_SHARED > len(prefix):
                continue
            donor, donor_ids = max(others, key=lambda o: common_prefix(o[1], prefix))
            if common_prefix(donor_ids, prefix) + _MIN_SHARED > len(prefix) and self._take_idle(donor, donor_ids):
                try:
                    self._save_slot(donor, donor_ids)
                finally:
                    self._release(donor, donor_ids)
                continue
            slot = self._acquire(prefix, None)
            built: list[int] = []
            try:
                self._build_prefix(prefix, slot)
                built = prefix
            finally:
                self._release(slot, built)

    def _build_prefix(self, prefix: list[int], slot: _Slot) -> None:
        """Evaluate ``prefix`` in ``slot`` (held) and save it."""
        self._restore_best(slot, prefix)
        body = {"prompt": prefix, "id_slot": slot.index, "cache_prompt": True, "n_predict": 0}
        timings = self._post("/completion", body).get("timings") or {}
        slot.ids = list(prefix)
        with self._lock:
            self.stats.shared_prefixes += 1
            self.stats.shared_evaluated += int(timings.get("prompt_n", 0))
            self.stats.shared_prefill_s += float(timings.get("prompt_ms", 0.0)) / 1000
        self._save_slot(slot, prefix)

    def _save_slot(self, slot: _Slot, ids: list[int]) -> None:
        """Save what ``slot`` (held) holds, ``ids``, to a file that any slot can restore."""
        with self._lock:
            self._clock += 1
            filename = f"state-{self._clock}.bin"
        self._post(f"/slots/{slot.index}?action=save", {"filename": filename})
        with self._lock:
            self._saved.append(_Saved(ids, filename, self._clock))
            while len(self._saved) > 2 * self.config.slots:  # keep the recently used ones
                idle = [s for s in self._saved if not s.readers]
                if not idle:
                    break
                oldest = min(idle, key=lambda s: s.last_used)
                self._saved.remove(oldest)
                Path(self._states_dir.name, oldest.filename).unlink(missing_ok=True)

    # -- HTTP on loopback ---------------------------------------------------------------

    def _get(self, path: str) -> dict[str, Any]:
        return self._send(Request(self.url + path))

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._send(Request(self.url + path, json.dumps(body).encode(), {"Content-Type": "application/json"}))

    def _send(self, request: Request) -> dict[str, Any]:
        if self._server is None:
            raise BackendError("the llama-cpp backend is closed")
        try:
            with urlopen(request, timeout=self.config.timeout_s) as response:
                return json.loads(response.read())  # type: ignore[no-any-return]
        except HTTPError as exc:
            raise BackendError(f"llama.cpp answered {exc.code} to {request.full_url}: {_error_text(exc)}") from None
        except (URLError, OSError) as exc:
            raise BackendError(f"lost llama.cpp's server at {self.url}: {exc}") from None


def _cached(ids: list[int], saved: list[list[int]], held: list[list[int]]) -> int:
    """How much of a prompt it can start from: a saved state, or a slot all of which is
    a prefix of the prompt (its own earlier turn)."""
    best = max((common_prefix(h, ids) for h in saved), default=0)
    for h in held:
        n = common_prefix(h, ids)
        if n >= len(h) - 1:
            best = max(best, n)
    return best


def _choose(free: list[_Slot], ids: list[int], episode: tuple[int, int] | None) -> _Slot:
    """The free slot for a prompt of ``episode``: its own; else one whose contents no
    other episode will come back for (unowned, or all of it a prefix of this prompt),
    sharing the most with the prompt; else the least recently used."""
    if episode is not None:
        for slot in free:
            if slot.owner == episode:
                return slot
    spare = [s for s in free if s.owner is None or s.owner == episode or common_prefix(s.ids, ids) >= len(s.ids) - 1]
    if spare:
        return max(spare, key=lambda s: (common_prefix(s.ids, ids), -s.last_used))
    return min(free, key=lambda s: s.last_used)


def _chat_format(template: str, eos: str) -> ChatFormat:
    if not template:
        return ChatML()
    from sqlscout.backends.chat_template import chat_format_from_template

    return chat_format_from_template(template, eos_token=eos, special_tokens=[eos, "<|endoftext|>"])


def _logprobs(data: dict[str, Any], n_tokens: int) -> list[float] | None:
    """Per-token log-probabilities; None when the server left some out (it drops those of
    a matched stop string)."""
    values = []
    for item in data.get("completion_probabilities") or []:
        if "logprob" in item:
            values.append(float(item["logprob"]))
        else:
            prob = float(item.get("prob", 0.0))
            values.append(math.log(prob) if prob > 0 else -math.inf)
    return values if len(values) == n_tokens else None


def _error_text(exc: HTTPError) -> str:
    try:
        data = json.loads(exc.read())
    except ValueError:
        return exc.reason or "no message"
    error = data.get("error") if isinstance(data, dict) else None
    return str(error.get("message", error) if isinstance(error, dict) else data)[:300]


def _failed(message: str) -> Generation:
    return Generation(text="", token_ids=[], logprobs=None, finish_reason="error", error=message)
