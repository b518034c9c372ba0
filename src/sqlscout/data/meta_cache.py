"""Benchmark files, read once: what a loader takes from a question file, kept by the
files' size and modification time.

Spider's ``dev.json`` holds every question's parsed query (3.6 MB), read by the JSON
decoder and walked for its hardness at every start of ``sqlscout score``: a tenth of
its start-up. A loader hands :func:`cached_rows` the files it reads and a function
that reads them into rows (tuples of str, int, None); the rows are written to
``<cache_dir>/benchmarks-py3.11/<key>.marshal`` and read back while every file has the
same path, size and modification time (and this module's format). A file that
cannot be read or written is no error: the rows are built again. A loader that finds
a broken record raises as before, and nothing is written.

>>> import tempfile, os
>>> folder = tempfile.mkdtemp(); source = os.path.join(folder, "q.json")
>>> with open(source, "w") as f:
...     _ = f.write("[1, 2]")
>>> calls = []
>>> build = lambda: calls.append(1) or [("a", 1), ("b", 2)]
>>> cached_rows(folder, "demo", [source], build), cached_rows(folder, "demo", [source], build), len(calls)
([('a', 1), ('b', 2)], [('a', 1), ('b', 2)], 1)
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
from pathlib import Path
from typing import Callable, Sequence

__all__ = ["cached_rows"]

_FORMAT = 1
Rows = list[tuple]


def cached_rows(
    cache_dir: str | os.PathLike[str] | None, kind: str, sources: Sequence[str | os.PathLike[str]], build: Callable[[], Rows]
) -> Rows:
    """``build()``, or what it returned before for the same ``sources`` (as they are
    now) and ``kind`` (the loader, and any option that changes its rows)."""
    if cache_dir is None:
        return build()
    stamps = []
    for source in sources:
        try:
            stat = os.stat(source)
        except OSError:
            stamps.append((str(source), None))
        else:
            stamps.append((os.path.abspath(source), stat.st_size, stat.st_mtime_ns))
    key = repr((_FORMAT, kind, stamps))
    folder = Path(cache_dir).expanduser() / f"benchmarks-py{sys.version_info.major}.{sys.version_info.minor}"
    file = folder / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.marshal"
    try:
        with open(file, "rb") as handle:
            stored_key, rows = marshal.load(handle)
        if stored_key == key and isinstance(rows, list):
            return rows
    except (OSError, EOFError, ValueError, TypeError):
        pass
    rows = build()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial = file.with_name(f"{file.name}.{os.getpid()}.tmp")
        with open(partial, "wb") as handle:
            marshal.dump((key, rows), handle)
        os.replace(partial, file)
    except (OSError, ValueError):  # a read-only cache, or a value marshal cannot hold
        pass
    return rows
