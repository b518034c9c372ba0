"""Checkpoints that resume exactly: ``OUT/checkpoints/step-NNNNNN/``.

- ``accelerate/``: accelerate's own state — weights, optimizer, scheduler, and the RNG
  states of Python, NumPy and torch (CPU and CUDA) of every process — so sharded
  (FSDP/DeepSpeed) runs save and load the way accelerate means them to.
- ``model/``: the policy in Hugging Face format (the adapters alone under LoRA) and its
  tokenizer, loadable by any backend for evaluation or further training.
- ``trainer_state.json``: the step, the curriculum's sampler (RNG, epoch, questions
  used this epoch), the KL coefficient. Written last: a folder without it is
  incomplete and ignored.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

__all__ = ["checkpoint_dir", "latest_checkpoint", "load_checkpoint", "save_checkpoint"]

STATE_FILE = "trainer_state.json"


def checkpoint_dir(out: Path, step: int) -> Path:
    return Path(out) / "checkpoints" / f"step-{step:06d}"


def latest_checkpoint(out: Path) -> Path | None:
    """The most recent complete checkpoint under ``out``, or None."""
    root = Path(out) / "checkpoints"
    if not root.is_dir():
        return None
    done = sorted(p for p in root.glob("step-*") if (p / STATE_FILE).is_file())
    return done[-1] if done else None


def save_checkpoint(
    accelerator: Any,
    model: Any,
    tokenizer: Any,
    out: Path,
    step: int,
    state: dict[str, Any],
    *,
    keep: int,
) -> Path:
    """Save everything needed to continue after ``step`` completed steps."""
    path = checkpoint_dir(out, step)
    if accelerator.is_main_process and path.exists():
        shutil.rmtree(path)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(path / "accelerate"))
    weights = accelerator.get_state_dict(model)
    if accelerator.is_main_process:
        unwrapped = accelerator.unwrap_model(model)
        unwrapped.save_pretrained(str(path / "model"), state_dict=weights, safe_serialization=True)
        tokenizer.save_pretrained(str(path / "model"))
        (path / STATE_FILE).write_text(json.dumps({"step": step, **state}, indent=1), encoding="utf-8")
        _prune(Path(out), keep)
    accelerator.wait_for_everyone()
    return path


def load_checkpoint(accelerator: Any, path: Path) -> dict[str, Any]:
    """Restore accelerate's state from ``path`` and return the trainer state."""
    accelerator.load_state(str(Path(path) / "accelerate"))
    return json.loads((Path(path) / STATE_FILE).read_text(encoding="utf-8"))


def _prune(out: Path, keep: int) -> None:
    done = sorted(p for p in (out / "checkpoints").glob("step-*") if (p / STATE_FILE).is_file())
    for old in done[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
