"""How many CPU threads llama.cpp gets when none is asked for: the cores idle now.

llama.cpp's threads wait for each other at every step, so a thread on a busy core slows
all of them, and a core left idle wastes half of a two-core machine.
"""

from __future__ import annotations

import os
import time

__all__ = ["auto_threads", "process_cores"]


def process_cores() -> int:
    """This process's share of the cores it may run on: its CPU affinity divided among the
    processes a launcher started on this machine (``LOCAL_WORLD_SIZE``), at least one.

    For a process that owns the machine (the trainer), unlike :func:`auto_threads`, which
    measures what is idle and so counts the process's own threads still spinning from
    its last piece of work.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform
        cores = os.cpu_count() or 1
    try:
        local = max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        local = 1
    return max(1, cores // local)


def auto_threads(probe_s: float = 0.1) -> int:
    """CPU threads for llama.cpp: the cores idle now, at least one.

    "Now" is the CPU time /proc/stat counts as idle over ``probe_s`` seconds; the
    one-minute load average (where there is no /proc/stat) still counts work that has
    just ended, so on a machine left idle a moment ago it takes one core of two and
    halves the speed.

    >>> 1 <= auto_threads() <= (os.cpu_count() or 1)
    True
    """
    cores = os.cpu_count() or 1
    idle = _idle_cores(probe_s)
    if idle is None:
        try:
            idle = cores - os.getloadavg()[0]
        except OSError:  # no load average on this platform
            return max(1, cores // 2)
    return max(1, min(cores, int(idle + 0.5)))


def _idle_cores(probe_s: float) -> float | None:
    """How many cores were idle over the next ``probe_s`` seconds (Linux), else None."""

    def ticks() -> tuple[int, int]:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
        return sum(fields[:8]), fields[3] + fields[4]  # all but guest time; idle + iowait

    try:
        total, idle = ticks()
        time.sleep(probe_s)
        total2, idle2 = ticks()
    except (OSError, ValueError, IndexError):
        return None
    if total2 <= total:
        return None
    return (os.cpu_count() or 1) * (idle2 - idle) / (total2 - total)
