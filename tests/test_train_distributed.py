"""More than one process, really run: two CPU processes under torchrun (gloo) train as
one data-parallel job — different questions per process, one set of weights, the same
update as one process with the same global batch, one writer of telemetry and
checkpoints, resampling and resume — and launches that would train silent copies are
refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sqlscout.errors import ConfigError
from sqlscout.train.processes import check_joined, make_accelerator

from conftest import SPIDER

REPO = Path(__file__).resolve().parents[1]
TORCHRUN = Path(sys.executable).with_name("torchrun")
SHARED = ("reward/mean", "reward/std", "episodes", "episodes/dropped", "groups/uniform", "outcome/equivalent",
          "outcome/invalid", "tokens/generated", "tokens/trained", "loss", "grad_norm", "kl", "kl_coef", "clip_frac",
          "is_weight", "curriculum/mean_key", "curriculum/epoch", "lr")  # fmt: skip


def config(tmp_path: Path, name: str, steps: int) -> Path:
    data = yaml.safe_load((REPO / "configs" / "tiny-cpu.yaml").read_text())
    data["model"]["random_init"].update(num_hidden_layers=2, layer_types=["linear_attention", "full_attention"])
    data["data"]["path"] = str(SPIDER)
    data["rollout"]["episode"].update(max_rounds=1, max_turn_tokens=256)
    data["rollout"].update(group_size=3, questions_per_step=2, equal_groups="resample", max_resample_rounds=1)
    data["optim"].update(warmup_ratio=0.0, schedule="constant")  # the resumed run asks for more steps: same lr
    data.update(steps=steps, out=str(tmp_path / name), checkpoint={"every": 1, "keep": 1},
                telemetry={"tensorboard": False, "progress": False})  # fmt: skip
    path = tmp_path / f"{name}-{steps}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run(args: list[str], logs: Path, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    logs.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO / 'tests'}", "OMP_NUM_THREADS": "1",
           **(env_extra or {})}  # fmt: skip
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=900)


def two_processes(cfg: Path, logs: Path) -> None:
    args = [str(TORCHRUN), "--standalone", "--nproc_per_node", "2", str(REPO / "tests" / "distributed_train.py"), str(cfg), str(logs)]
    done = run(args, logs)
    assert done.returncode == 0, done.stderr[-3000:]


def telemetry(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "telemetry.jsonl").read_text().splitlines()]


def weights(out: Path, step: int) -> dict:
    from safetensors.torch import load_file

    return load_file(str(out / "checkpoints" / f"step-{step:06d}" / "model" / "model.safetensors"))


@pytest.mark.slow
def test_two_cpu_processes_train_as_one_job(tmp_path):
    logs = tmp_path / "logs"
    two_processes(config(tmp_path, "two", steps=2), logs)
    two_processes(config(tmp_path, "two", steps=3), logs)  # resumes after step 2
    alone = run([sys.executable, str(REPO / "tests" / "distributed_train.py"), str(config(tmp_path, "one", steps=3)),
                 str(tmp_path / "one-logs")], tmp_path / "one-logs")  # fmt: skip
    assert alone.returncode == 0, alone.stderr[-3000:]

    # The ranks played different questions, between them all that one process played.
    ranks = [set((logs / f"rank-{r}.txt").read_text().splitlines()) for r in (0, 1)]
    assert ranks[0] and ranks[1] and not ranks[0] & ranks[1]
    assert ranks[0] | ranks[1] == set((tmp_path / "one-logs" / "rank-0.txt").read_text().splitlines())

    # One writer: a row per step, once; the resumed run continued the first.
    two, one = telemetry(tmp_path / "two"), telemetry(tmp_path / "one")
    assert [r["step"] for r in two] == [r["step"] for r in one] == [1, 2, 3]
    assert any(r["episodes"] > 6 for r in one) and any(r["groups/uniform"] > 0 for r in one)  # resampled
    assert sum(r["tokens/trained"] for r in one) > 0
    for a, b in zip(one, two):
        for key in SHARED:
            assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-7), (a["step"], key)
    assert len((tmp_path / "two" / "episodes.jsonl").read_text().splitlines()) == sum(r["episodes"] for r in one)

    # The same update as one process with the same global batch (the trainer also checks
    # after every step that both processes hold the same weights).
    w1, w2 = weights(tmp_path / "one", 3), weights(tmp_path / "two", 3)
    assert w1.keys() == w2.keys()
    for name in w1:
        assert (w1[name] - w2[name]).abs().max() < 1e-5, name


def test_a_launch_that_would_train_silent_copies_is_refused():
    # torchrun started two processes, but the accelerator joined only this one (what a
    # CPU-only machine used to give): each would train alone on the same run directory
    with pytest.raises(ConfigError, match="launcher started 2 processes but only 1 joined"):
        check_joined(2, 1)
    check_joined(2, 2)
    # `accelerate launch --cpu --num_processes 2` runs one process with a rendezvous address
    with pytest.raises(ConfigError, match="accelerate launch --cpu started one process"):
        make_accelerator("fp32", {"ACCELERATE_USE_CPU": "True", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"})


def test_a_run_after_another_accelerator_in_the_same_process_gets_its_own_precision():
    """TRL's trainer (or a notebook cell) may have set up accelerate in bf16 first; a sqlscout
    run in the same process must not die with "AcceleratorState has already been initialized"."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state()  # whatever an earlier test of this process set up
    Accelerator(mixed_precision="bf16")
    try:
        accelerator = make_accelerator("fp32", {})
        assert accelerator.mixed_precision == "no"
        assert make_accelerator("bf16", {}).mixed_precision == "bf16"
    finally:
        AcceleratorState._reset_state()
