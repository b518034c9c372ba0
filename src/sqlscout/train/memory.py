"""The trainer's memory: activation checkpointing, the process's peak per step, and giving
freed memory back.

glibc keeps memory that torch frees (activations, logits) in its heap for reuse, so after
one update the process stays as large as the update's peak: 14.5 GB resident through the
0.5B run's rollouts, most of it free. :func:`trim_heap` hands it back between the
phases of a step, so each starts from what it holds.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Any

__all__ = [
    "disable_checkpointing",
    "enable_checkpointing",
    "is_checkpointing",
    "peak_memory_gb",
    "reset_peak_memory",
    "set_mmap_threshold",
    "trim_heap",
]


def reset_peak_memory() -> None:
    """Start measuring this process's peak resident memory afresh (Linux: the high-water
    mark is reset through ``/proc/self/clear_refs``; elsewhere it keeps the lifetime peak)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        pass


def peak_memory_gb() -> float:
    """This process's peak resident memory since :func:`reset_peak_memory` (GB, 10^9 bytes)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024 / 1e9
    except OSError:
        pass
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak / 1e9 if sys.platform == "darwin" else peak * 1024 / 1e9


@functools.lru_cache(maxsize=8)
def _glibc(name: str) -> Any:
    """glibc's function ``name``, looked up once; None where there is none."""
    try:
        return getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), name)
    except (OSError, AttributeError):
        return None


def trim_heap() -> None:
    """Return the heap's free memory to the system (glibc's ``malloc_trim``; a no-op elsewhere)."""
    trim = _glibc("malloc_trim")
    if trim is not None:
        trim(0)


_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


def set_mmap_threshold(size_bytes: int) -> bool:
    """Serve every allocation of ``size_bytes`` or more from its own mapping, returned to
    the system when freed (glibc's ``mallopt(M_MMAP_THRESHOLD)``; False where there is none).

    glibc's default threshold moves: each large block freed raises it to that block's size
    (up to 32 MiB), so after the first update the model's activations (a few MiB each, of a
    new size every micro-batch) come from the heap, whose free pieces no longer fit the next
    shapes; the update's peak then grows step after step within one process. A fixed
    threshold stops that at the cost of mapping and zeroing each large block anew.
    """
    mallopt = _glibc("mallopt")
    return mallopt is not None and bool(mallopt(_M_MMAP_THRESHOLD, int(size_bytes)))


def enable_checkpointing(model: Any) -> None:
    """Recompute activations in the backward pass (non-reentrant: works with frozen inputs,
    LoRA and no_grad references). transformers renamed the method in 5.2x."""
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def disable_checkpointing(model: Any) -> None:
    """Undo :func:`enable_checkpointing`."""
    if hasattr(model, "activation_checkpointing_disable"):
        model.activation_checkpointing_disable()
    else:
        model.gradient_checkpointing_disable()


def is_checkpointing(model: Any) -> bool:
    """Whether ``model`` recomputes its activations (transformers renamed the property in 5.2x)."""
    flag = getattr(model, "is_activation_checkpointing", None)
    if flag is None:
        return bool(getattr(model, "is_gradient_checkpointing", False))
    return bool(flag() if callable(flag) else flag)
