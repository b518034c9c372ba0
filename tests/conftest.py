"""Shared fixtures: the real benchmark data beside the checkout, and small databases
built from SQL text in a temporary directory.

Where the benchmark data is not beside the checkout (a fresh clone), the core tests run
on a small Spider fixture in tests/data/spider_mini and the Chinook file the package
ships; tests that need the whole benchmark data are marked ``needs_shared_data`` and
skip with a one-line reason."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Callable

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SQLSCOUT_DATA", REPO.parent / "shared" / "data")).resolve()
HAVE_SHARED_DATA = (DATA / "spider" / "dev.json").is_file()
MINI_SPIDER = REPO / "tests" / "data" / "spider_mini"
_BUNDLED_CHINOOK = REPO / "src" / "sqlscout" / "data" / "chinook" / "Chinook_Sqlite.sqlite"
CHINOOK = DATA / "chinook" / "Chinook_Sqlite.sqlite" if HAVE_SHARED_DATA else _BUNDLED_CHINOOK
SPIDER = DATA / "spider" if HAVE_SHARED_DATA else MINI_SPIDER
SPIDER_DB = SPIDER / "database"
BIRD = DATA / "bird"
SPIDER_DK = DATA / "spider_dk"

# Tests that need the whole benchmark data (Spider-DK, BIRD's files, all of Spider dev).
needs_shared_data = pytest.mark.skipif(
    not HAVE_SHARED_DATA, reason=f"needs the benchmark data at {DATA} (set SQLSCOUT_DATA); a fresh clone has only tests/data"
)


def spin(seconds: float) -> None:
    """Keep one core busy for ``seconds`` (a process target: tests that need a loaded machine)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def spider_db(name: str) -> Path:
    return SPIDER_DB / name / f"{name}.sqlite"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not HAVE_SHARED_DATA:
        pytest.skip(f"needs the benchmark data at {DATA} (set SQLSCOUT_DATA); a fresh clone has only tests/data")
    return DATA


@pytest.fixture(scope="session")
def chinook_path() -> Path:
    return CHINOOK


@pytest.fixture
def make_db(tmp_path: Path) -> Callable[[str, str], Path]:
    """Build a SQLite file from SQL text: ``make_db(sql, name="fixture")``."""

    def build(sql: str, name: str = "fixture") -> Path:
        path = tmp_path / f"{name}.sqlite"
        with sqlite3.connect(path) as conn:
            conn.executescript(sql)
        conn.close()
        return path

    return build


@pytest.fixture(scope="session")
def bird_layout(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A BIRD-layout folder (dev.json + dev_databases/) built from Spider databases."""
    from benchmark_fixtures import build_bird_layout

    return build_bird_layout(SPIDER, tmp_path_factory.mktemp("bird"))


@pytest.fixture(scope="session")
def sqale_layout(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQaLe-layout folder (queries/ and schemas/ parquet) built from Spider databases."""
    from benchmark_fixtures import build_sqale_layout

    return build_sqale_layout(SPIDER, tmp_path_factory.mktemp("sqale"))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen3 saved as a model directory (the hf backend loads it in a second)."""
    from tiny_models import tiny_qwen3

    model, tokenizer = tiny_qwen3(seed=0)
    where = tmp_path_factory.mktemp("tiny-qwen3")
    model.save_pretrained(where)
    tokenizer.save_pretrained(where)
    return where


@pytest.fixture(scope="session")
def qwen05_gguf() -> Path:
    """The embedded default model (Qwen2.5-Coder-0.5B GGUF), joined once into the user's
    cache ($SQLSCOUT_CACHE_DIR / $XDG_CACHE_HOME/sqlscout) and reused by every test."""
    from sqlscout.models import PRESETS, default_cache_dir, fetch_gguf

    return fetch_gguf(PRESETS["qwen2.5-coder-0.5b"], default_cache_dir(os.environ))


@pytest.fixture(scope="session")
def server_backend(qwen05_gguf: Path):
    """One llama-cpp backend (llama.cpp's server in process, xllamacpp) over the 0.5B model
    for the whole session. One thread: robust on a shared 2-core machine."""
    from sqlscout.backends.llama_server import LlamaServerBackend, LlamaServerConfig

    backend = LlamaServerBackend(qwen05_gguf, LlamaServerConfig(n_ctx=8192, slots=4, n_threads=1))
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def llama_backend(qwen05_gguf: Path):
    """One llama-cpp-python backend (the opt-in ``[llama]`` extra) over the 0.5B model for the
    whole session. One thread: robust on a shared 2-core machine."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is the opt-in [llama] extra and is not installed")
    from sqlscout.backends.llama_cpp import LlamaCppBackend, LlamaCppConfig

    backend = LlamaCppBackend(qwen05_gguf, LlamaCppConfig(n_ctx=8192, slots=4, n_threads=1))
    yield backend
    backend.close()


@pytest.fixture
def one_torch_thread():
    """One intra-op torch thread for the test: on a small shared CPU, batched kernels (e.g.
    the triangular solves of Qwen3.5's linear attention) slow down by ~50x when their
    threads compete with other processes."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
