"""Model backends. Each heavy backend is imported lazily by :func:`sqlscout.backends.load`."""
from sqlscout.backends.base import Backend, Generation, GenerationRequest, SamplingParams

__all__ = ["Backend", "Generation", "GenerationRequest", "SamplingParams"]
