"""``load_backend(model, backend=None, **options)``: from a name to a running backend.

``model`` is a preset name (``qwen2.5-coder-0.5b``), a GGUF file, a model directory, an
http(s) URL of an OpenAI-compatible server, or a hub id (``org/name``). The backend
is picked from the preset, else from what ``model`` is: GGUF → ``llama-cpp``,
directory or hub id → ``hf``, URL → ``openai``. Heavy libraries load only here, and
only the one the chosen backend needs.
"""

from __future__ import annotations

from dataclasses import replace

from pathlib import Path
from typing import Any, Callable

from sqlscout.assist.profile import Profile, get_profile
from sqlscout.backends.base import Backend, SamplingParams
from sqlscout.env.config import EpisodeConfig
from sqlscout.errors import BackendError, ConfigError
from sqlscout.models.fetch import Progress, default_cache_dir, fetch_gguf
from sqlscout.models.presets import PRESETS, LoraAdapter, Preset, get_preset

__all__ = ["BACKENDS", "ModelSpec", "load_backend", "model_defaults", "open_backend", "resolve_model"]

# The most KV cells a llama.cpp context is given, whatever the episodes in flight ask for.
_MAX_N_CTX = 262_144

BACKENDS = ("llama-cpp", "llama-cpp-python", "openai", "hf", "vllm", "scripted")


class ModelSpec:
    """What a ``model`` argument names: its kind, its location, and its preset if any."""

    def __init__(self, kind: str, location: str, preset: Preset | None = None) -> None:
        self.kind, self.location, self.preset = kind, location, preset  # kind: preset|gguf|dir|url|hub

    def default_backend(self) -> str:
        if self.preset is not None:
            return self.preset.backend
        return {"gguf": "llama-cpp", "url": "openai", "dir": "hf", "hub": "hf"}[self.kind]

    def __repr__(self) -> str:
        return f"ModelSpec({self.kind!r}, {self.location!r})"


def resolve_model(model: str) -> ModelSpec:
    """Classify ``model``.

    >>> resolve_model("qwen2.5-coder-0.5b").kind, resolve_model("http://127.0.0.1:8000/v1").kind
    ('preset', 'url')
    >>> resolve_model("Qwen/Qwen3-0.6B").kind
    'hub'
    """
    if model in PRESETS:
        return ModelSpec("preset", model, PRESETS[model])
    if not model.strip():
        raise ConfigError(f"the model is empty; give a preset ({', '.join(PRESETS)}), a .gguf file, a model directory, a hub id or a server URL")
    if model.startswith(("http://", "https://")):
        return ModelSpec("url", model)
    path = Path(model).expanduser()
    if path.is_dir():
        if not ((path / "config.json").is_file() or (path / "adapter_config.json").is_file()):
            raise ConfigError(f"{path} is a folder without a model in it (no config.json); give a model directory or a .gguf file")
        return ModelSpec("dir", str(path))
    if path.suffix.lower() == ".gguf":
        if not path.is_file():
            raise BackendError(f"model file not found: {path}")
        return ModelSpec("gguf", str(path))
    if path.exists():
        raise ConfigError(f"{path} is neither a .gguf file nor a model directory")
    if model.count("/") == 1 and not model.startswith((".", "/", "~")):
        return ModelSpec("hub", model)
    get_preset(model)  # raises the unknown-preset message
    raise AssertionError("unreachable")


def model_defaults(model: str) -> tuple[EpisodeConfig, SamplingParams, Profile]:
    """The episode, sampling and help settings ``model`` runs with unless told otherwise:
    its preset's, else the seed card's defaults (SPEC §4) and the plain protocol, without
    per-token log-probabilities: answering never reads them, and llama.cpp pays for them
    on every token (constrained 0.5B decoding, one thread: 16.5 tokens/s with them, 18.2
    without); the trainer asks for them itself.

    >>> episode, sampling, assist = model_defaults("qwen2.5-coder-0.5b")
    >>> episode.token_budget, sampling.temperature, "constrain" in assist.rules
    (12288, 0.6, True)
    >>> model_defaults("http://127.0.0.1:8000/v1") == (EpisodeConfig(), SamplingParams(logprobs=False), get_profile("none"))
    True
    """
    preset = resolve_model(model).preset
    if preset is None:
        return EpisodeConfig(), SamplingParams(logprobs=False), get_profile("none")
    return preset.episode, replace(preset.sampling, logprobs=False), get_profile(preset.assist)


def open_backend(
    model: str,
    backend: str | None = None,
    *,
    episodes: int = 1,
    token_budget: int | None = None,
    threads: int | None = None,
    api_key: str | None = None,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
) -> Backend:
    """The backend every command loads ``model`` with, sized for ``episodes`` in flight.

    Turns what a command knows (episodes at once, their token budget, CPU threads, an
    API key) into the chosen backend's options, so ``ask``, ``eval``, ``demo`` and
    ``serve`` resolve a model one way. GGUF presets are fetched into ``cache_dir``
    (default: ``$SQLSCOUT_CACHE_DIR``, ``$XDG_CACHE_HOME/sqlscout`` or ``~/.cache/sqlscout``).
    """
    import os

    chosen = backend or resolve_model(model).default_backend()
    options: dict[str, Any] = {}
    if chosen == "llama-cpp":
        # One cache slot per episode in flight, each large enough for a whole episode, so
        # every turn reuses its episode's prefix instead of evaluating it again.
        options = {"slots": episodes, "n_threads": threads}
        if token_budget is not None:
            options["n_ctx"] = min(episodes * token_budget, _MAX_N_CTX)
    elif chosen == "openai" and api_key:
        options = {"api_key": api_key}
    cache = cache_dir if cache_dir is not None else default_cache_dir(os.environ)
    return load_backend(model, chosen, cache_dir=cache, progress=progress, **options)


def load_backend(
    model: str,
    backend: str | None = None,
    *,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    **options: Any,
) -> Backend:
    """A ready backend for ``model``.

    Args:
        model: preset name, GGUF file, model directory, server URL or hub id.
        backend: force a backend (``llama-cpp``, ``openai``, ``hf``, ``vllm``); picked
            from ``model`` when None.
        cache_dir: where GGUF presets are joined and kept (default ``~/.cache/sqlscout``;
            the CLI passes ``$SQLSCOUT_CACHE_DIR`` / ``$XDG_CACHE_HOME``).
        progress: called while a preset is fetched and joined.
        options: passed to the backend (e.g. ``n_ctx``, ``slots`` for llama-cpp;
            ``concurrency``, ``timeout_s`` for openai).

    Raises:
        ConfigError: unknown preset or backend, or a backend that cannot run that model.
        BackendError: the model cannot be found, fetched or loaded.
    """
    spec = resolve_model(model)
    chosen = backend or spec.default_backend()
    if chosen not in BACKENDS:
        raise ConfigError(f"unknown backend {chosen!r}; choose one of {', '.join(BACKENDS)}")
    location = spec.location
    if spec.preset is not None and spec.preset.lora is not None:
        if chosen != "llama-cpp":
            raise ConfigError(f"{spec.preset.name} is a LoRA adapter that llama.cpp applies to its base model; use --backend llama-cpp")
        options["lora"] = verified_adapter(spec.preset.lora)
    if spec.preset is not None and spec.preset.gguf is not None:
        location = str(fetch_gguf(spec.preset, _cache(cache_dir), progress=progress))
    elif spec.preset is not None and spec.preset.hub_id is not None:
        location = spec.preset.hub_id
    loader = _LOADERS.get(chosen)
    if loader is None:
        raise ConfigError(f"the {chosen} backend cannot be built from a model name; construct it directly")
    return loader(location, spec, options)


def verified_adapter(adapter: LoraAdapter) -> Path:
    """The shipped adapter's path, once its size and SHA-256 are the preset's."""
    import hashlib

    path = adapter.path
    if not path.is_file():
        raise BackendError(f"the LoRA adapter {path} is missing from this install; reinstall sqlscout")
    if path.stat().st_size != adapter.size or hashlib.sha256(path.read_bytes()).hexdigest() != adapter.sha256:
        raise BackendError(f"the LoRA adapter {path} is not the one the preset was measured with (size or SHA-256 differs); reinstall sqlscout")
    return path


def _cache(cache_dir: Path | None) -> Path:
    return Path(cache_dir) if cache_dir is not None else Path.home() / ".cache" / "sqlscout"


def _llama_cpp(location: str, spec: ModelSpec, options: dict[str, Any]) -> Backend:
    """The default GGUF runtime: llama.cpp's server in process (the prebuilt xllamacpp wheel)."""
    from sqlscout.backends.llama_server import LlamaServerBackend, LlamaServerConfig

    _require_gguf(location, spec, "llama-cpp")
    chat = options.pop("chat", None)
    return LlamaServerBackend(location, LlamaServerConfig(**options), chat=chat)


def _llama_cpp_python(location: str, spec: ModelSpec, options: dict[str, Any]) -> Backend:
    """The opt-in llama-cpp-python backend (``pip install 'sqlscout[llama]'``, compiled at install)."""
    from sqlscout.backends.llama_cpp import LlamaCppBackend, LlamaCppConfig

    _require_gguf(location, spec, "llama-cpp-python")
    chat = options.pop("chat", None)
    return LlamaCppBackend(location, LlamaCppConfig(**options), chat=chat)


def _require_gguf(location: str, spec: ModelSpec, backend: str) -> None:
    if spec.kind in ("url", "hub", "dir") and not location.endswith(".gguf"):
        raise ConfigError(f"the {backend} backend needs a .gguf file, got {location}")


def _openai(location: str, spec: ModelSpec, options: dict[str, Any]) -> Backend:
    from sqlscout.backends.openai_compat import OpenAIBackend, OpenAIConfig

    if spec.kind != "url":
        raise ConfigError(f"the openai backend needs an http(s) server URL, got {location}")
    chat = options.pop("chat", None)
    return OpenAIBackend(OpenAIConfig(base_url=location, **options), chat=chat)


def _hf(location: str, spec: ModelSpec, options: dict[str, Any]) -> Backend:
    if spec.kind == "hub" or (spec.preset is not None and spec.preset.hub_id):
        _require_local_hub_copy(location)
    from sqlscout.backends.hf import HFConfig, load_hf

    tokenizer = options.pop("tokenizer", None)
    return load_hf(location, HFConfig(**options), tokenizer=tokenizer)


def _require_local_hub_copy(hub_id: str) -> None:
    """Fail in one line, before any download attempt hangs, when a hub model is not cached."""
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError
    except ImportError:
        raise BackendError(f"{hub_id} is a hub model and huggingface_hub is not installed: pip install 'sqlscout[hf]'") from None
    try:
        snapshot_download(hub_id, local_files_only=True)
    except LocalEntryNotFoundError:
        pass
    else:
        return
    try:
        snapshot_download(hub_id, allow_patterns=["config.json"], etag_timeout=10)
    except Exception as exc:  # the hub client raises many network error types
        raise BackendError(
            f"cannot load {hub_id}: the model hub is unreachable and no local copy exists "
            f"({type(exc).__name__}); download it where the hub is reachable, or pass a local directory"
        ) from None


def _vllm(location: str, spec: ModelSpec, options: dict[str, Any]) -> Backend:
    if spec.kind == "url":
        raise ConfigError("a server URL runs on the openai backend, not vllm")
    from sqlscout.backends.vllm import VLLMBackend, VLLMConfig

    chat = options.pop("chat", None)
    return VLLMBackend(location, VLLMConfig(**options), chat=chat)


_LOADERS: dict[str, Callable[[str, ModelSpec, dict[str, Any]], Backend]] = {
    "llama-cpp": _llama_cpp,
    "llama-cpp-python": _llama_cpp_python,
    "openai": _openai,
    "hf": _hf,
    "vllm": _vllm,
}
