"""Checkpoints that resume exactly: ``OUT/checkpoints/step-NNNNNN/``.

- ``accelerate/``: accelerate's own state — weights, optimizer, scheduler, and the RNG
  states of Python, NumPy and torch (CPU and CUDA) of every process — so sharded
  (FSDP/DeepSpeed) runs save and load the way accelerate means them to.
- ``model/``: the policy in Hugging Face format (the adapters alone under LoRA) and its
  tokenizer, loadable by any backend for evaluation or further training.
- ``trainer_state.json``: the step, the curriculum's sampler (RNG, epoch, questions
  used this epoch), the KL coefficient. Written last: a folder without it is
  incomplete and ignored.

Past the ``keep`` most recent, a checkpoint is deleted, but for the steps the run
evaluated (``checkpoint.keep_evaluated``): their ``model/`` stays, so the best evaluated
step can be shipped (:mod:`sqlscout.train.ship`) long after the run moved on.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

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
    pinned: Callable[[int], bool] = lambda step: False,
) -> Path:
    """Save everything needed to continue after ``step`` completed steps; of older
    checkpoints past the ``keep`` most recent, the weights of the ``pinned`` steps stay
    (``model/``: enough to ship or evaluate them, not to resume from them)."""
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
        _prune(Path(out), keep, pinned)
    accelerator.wait_for_everyone()
    return path


def load_checkpoint(accelerator: Any, path: Path) -> dict[str, Any]:
    """Restore accelerate's state from ``path`` and return the trainer state."""
    accelerator.load_state(str(Path(path) / "accelerate"))
    return json.loads((Path(path) / STATE_FILE).read_text(encoding="utf-8"))


def _prune(out: Path, keep: int, pinned: Callable[[int], bool]) -> None:
    done = sorted(p for p in (out / "checkpoints").glob("step-*") if (p / STATE_FILE).is_file())
    for old in done[:-keep]:
        if not pinned(int(old.name.removeprefix("step-"))):
            shutil.rmtree(old, ignore_errors=True)
            continue
        # the state file first: without it the folder is no longer a checkpoint to resume from
        (old / STATE_FILE).unlink()
        for part in old.iterdir():
            if part.is_dir() and part.name != "model":
                shutil.rmtree(part, ignore_errors=True)
