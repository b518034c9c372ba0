"""Issue 38's recipe: the configs that train sqlscout's own agent, the database-disjoint
split they read, and the GPU script (run only where a CUDA GPU and the 1.5B are)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sqlscout.data import load_tasks
from sqlscout.data.splits import SPIDER_DEV_REPORT, SPIDER_DEV_TUNE
from sqlscout.train.config import config_to_dict, load_config
from sqlscout.train.questions import load_questions

from conftest import DATA, REPO, SPIDER, SPIDER_DK, needs_shared_data

CPU = REPO / "configs" / "grpo-cpu-qwen2.5-coder-0.5b.yaml"
GPU = REPO / "configs" / "grpo-gpu-qwen2.5-coder-1.5b.yaml"


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


def test_the_gpu_recipe_differs_from_the_cpu_one_only_where_the_machine_does():
    cpu, gpu = (_flat(config_to_dict(load_config(p))) for p in (CPU, GPU))
    differ = {k for k in cpu if cpu[k] != gpu[k]}
    assert differ == {
        "steps", "out", "model.name_or_path", "rollout.backend", "rollout.questions_per_step",
        "rollout.max_batch", "optim.micro_batch_tokens",
    }  # fmt: skip
    assert cpu["rollout.episode.schema"] == "full" and cpu["data.split"] == "dev-tune" and cpu["eval.data.split"] == "dev-report"
    assert cpu["optim.share_prefix"] is True and cpu["model.lora.enabled"] is True


@needs_shared_data
def test_no_database_is_both_trained_on_and_evaluated_on():
    config = load_config(CPU)
    data = config.data.model_copy(update={"path": str(SPIDER)})
    trained = {t.db_id for t in load_questions(data)}
    held = {t.db_id for t in load_questions(config.eval.data.model_copy(update={"path": str(SPIDER)}))}
    dk = {t.db_id for t in load_tasks("spider-dk", SPIDER_DK, db_root=SPIDER / "database", missing_db="skip")}
    report = {t.db_id for t in load_tasks("spider", SPIDER, split="dev-report", missing_db="skip")}
    assert trained == set(SPIDER_DEV_TUNE) and report <= set(SPIDER_DEV_REPORT)
    assert not trained & (held | dk | report)
    assert len(load_questions(data)) == 316


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


GGUF_15B = Path("~/.cache/sqlscout/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf").expanduser()


@pytest.mark.slow
@pytest.mark.skipif(not _has_cuda(), reason="needs a CUDA GPU (the script is for a lent one)")
@pytest.mark.skipif(not GGUF_15B.is_file(), reason=f"needs the 1.5B GGUF at {GGUF_15B}")
@needs_shared_data
def test_the_gpu_script_trains_and_reports(tmp_path):
    env = {**os.environ, "MINUTES": "4", "RUN_OUT": str(tmp_path / "run"), "PYTHON": sys.executable}
    done = subprocess.run(["bash", str(REPO / "benchmarks" / "grpo_gpu_1.5b.sh")], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "run" / "report" / "report.html").is_file()
    assert "eval/official" in (tmp_path / "run" / "telemetry.jsonl").read_text()  # step 0 at least
