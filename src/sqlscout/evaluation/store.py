"""A run directory on disk: ``config.json`` and the crash-safe ``episodes.jsonl``.

Each finished episode is one JSON line, written whole and flushed to the disk
(``fsync``) before the next one, so a run killed at any moment loses at most the
line being written. Reading ignores a torn last line, and :meth:`RunDir.open_for_append`
cuts it off before a resumed run writes again. A lock file keeps two processes from
writing the same directory.

>>> import tempfile
>>> run = RunDir(tempfile.mkdtemp())
>>> run.read_records()
[]
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import IO, Any, Iterator

from sqlscout.data.records import decode_json
from sqlscout.errors import DataError, SqlscoutError
from sqlscout.evaluation.record import EpisodeRecord

__all__ = ["RunDir", "RunDirBusy", "read_whole_lines"]

CONFIG_FILE = "config.json"
EPISODES_FILE = "episodes.jsonl"
LOCK_FILE = ".lock"


class RunDirBusy(SqlscoutError):
    """Another process is writing the run directory."""


class RunDir:
    """The files of one evaluation run.

    ``config.json`` holds ``{"settings": ..., "tasks": ..., "sessions": [...]}``:
    the :class:`~sqlscout.evaluation.config.EvalConfig` as a dict, the identity of the
    selected questions, and one provenance entry per invocation (start time, sqlscout
    version, git commit, backend details).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock: IO[str] | None = None

    @property
    def config_path(self) -> Path:
        return self.path / CONFIG_FILE

    @property
    def episodes_path(self) -> Path:
        return self.path / EPISODES_FILE

    @property
    def packed_episodes_path(self) -> Path:
        """Where a run kept compressed (as under benchmarks/results) holds its episodes."""
        return self.path / f"{EPISODES_FILE}.gz"

    def stored_episodes(self) -> Path | None:
        """The episodes file to read: ``episodes.jsonl``, else a kept ``episodes.jsonl.gz``;
        None when there is neither."""
        for path in (self.episodes_path, self.packed_episodes_path):
            if path.is_file():
                return path
        return None

    def exists(self) -> bool:
        return self.config_path.is_file()

    # -- config -----------------------------------------------------------------

    def read_config(self) -> dict[str, Any]:
        try:
            return json.loads(self.config_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise DataError(f"{self.path} is not a run directory (no {CONFIG_FILE}); run `sqlscout eval --out {self.path}` first") from None
        except json.JSONDecodeError as exc:
            raise DataError(f"{self.config_path} is not valid JSON ({exc}); restore it or start a new run") from None
        except UnicodeDecodeError:
            raise DataError(f"{self.config_path} is not UTF-8 text; restore it or start a new run") from None

    def write_config(self, config: dict[str, Any]) -> None:
        """Replace ``config.json`` atomically (write a temporary file, then rename)."""
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.config_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(config, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, self.config_path)

    # -- episodes ---------------------------------------------------------------

    def iter_records(self) -> Iterator[EpisodeRecord]:
        """The stored episodes in file order. A torn last line (a crash mid-write) is
        skipped; a broken line anywhere else is an error naming the line. A run kept
        compressed (``episodes.jsonl.gz`` alone, as under benchmarks/results) is read as is."""
        path = self.stored_episodes()
        if path is None:
            return
        for number, line in read_whole_lines(path):
            try:
                yield EpisodeRecord.from_dict(decode_json(line))
            except (KeyError, TypeError, ValueError) as exc:
                raise DataError(f"{path}:{number}: not an episode record ({exc})") from None

    def read_records(self) -> list[EpisodeRecord]:
        return list(self.iter_records())

    def open_for_append(self) -> EpisodeWriter:
        """Lock the directory and open ``episodes.jsonl`` for appending (cutting a torn
        last line first)."""
        packed = self.packed_episodes_path
        if self.stored_episodes() == packed:
            raise DataError(f"{packed} is compressed: unpack it first (gunzip {packed}), then run again")
        self.path.mkdir(parents=True, exist_ok=True)
        self._acquire_lock()
        _cut_torn_tail(self.episodes_path)
        return EpisodeWriter(open(self.episodes_path, "a", encoding="utf-8"), self)

    def _acquire_lock(self) -> None:
        import fcntl

        handle = open(self.path / LOCK_FILE, "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise RunDirBusy(f"another process is writing {self.path}; wait for it to finish or use another --out") from None
        self._lock = handle

    def release(self) -> None:
        if self._lock is not None:
            self._lock.close()  # closing the file drops the flock
            self._lock = None


def read_whole_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-blank line that was written whole.

    A last line with no newline is a write the run did not finish (it may end inside
    a UTF-8 character, or be any bytes at all): it is skipped, as ``--resume`` cuts it
    and runs its episode again. Any other line that is not UTF-8 is a
    :class:`~sqlscout.errors.DataError` naming it.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        lines = handle.readlines()
    for number, raw in enumerate(lines, start=1):
        if not raw.endswith(b"\n"):
            return  # torn write (only the last line can lack its newline)
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(
                f"{path}:{number}: line {number} is not UTF-8 text (byte {exc.start}); "
                "restore the line or remove it (its episode is then run again on --resume)"
            ) from None
        if line.strip():
            yield number, line


class EpisodeWriter:
    """Appends records one whole line at a time, each flushed and fsync'ed."""

    def __init__(self, handle: IO[str], run: RunDir) -> None:
        self._handle = handle
        self._run = run

    def write(self, record: EpisodeRecord) -> None:
        self._handle.write(record.to_json() + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()
        self._run.release()

    def __enter__(self) -> EpisodeWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _cut_torn_tail(path: Path) -> None:
    """Truncate ``path`` after its last newline (drops a half-written final line)."""
    if not path.is_file():
        return
    with open(path, "rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return
        # Walk back in blocks to the last newline.
        position = size
        while position > 0:
            start = max(0, position - 65536)
            handle.seek(start)
            block = handle.read(position - start)
            cut = block.rfind(b"\n")
            if cut >= 0:
                handle.truncate(start + cut + 1)
                return
            position = start
        handle.truncate(0)
