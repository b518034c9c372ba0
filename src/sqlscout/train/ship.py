"""A trained LoRA checkpoint shipped as a model preset (``--model sqlscout-0.5b-grpo``).

``ship_adapter`` writes the checkpoint's adapters as an f16 GGUF LoRA into the package
(``sqlscout/models/adapters/NAME.gguf``) and beside it a manifest (``NAME.json``) with its
SHA-256 and size, the run and step it comes from, the training config, the database split,
the episode settings it was trained with and the temperature its held-out evaluation used
(the preset's defaults), and
whatever measured figures the caller passes. :mod:`sqlscout.models.presets` turns every
manifest there into a preset on the base GGUF it names, with the plain protocol.

    python -m sqlscout.train.ship runs/grpo-0.5b --step 40 --name sqlscout-0.5b-grpo

Several steps (``--step 12 16 20 24``) ship the average of their updates, cut to the run's
rank (:func:`sqlscout.train.gguf_lora.average_lora`): checkpoints of one run along its
trajectory, a weight average that is chosen on a tuning set like any other checkpoint.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

import yaml

from sqlscout.errors import ConfigError
from sqlscout.models.presets import ADAPTERS_DIR, get_preset

__all__ = ["ship_adapter"]


def ship_adapter(run: Path, step: int | Sequence[int], name: str, *, base: str, dest: Path = ADAPTERS_DIR,
                 measured: dict[str, Any] | None = None, episode: dict[str, Any] | None = None) -> Path:  # fmt: skip
    """Write run ``run``'s checkpoint of ``step`` as preset ``name`` over base preset
    ``base``; returns the manifest's path. Several steps write their average.

    ``episode`` changes episode settings from those it trained with (limits chosen on a
    tuning set, say); the manifest keeps the trained ones beside them as ``episode_trained``."""
    from sqlscout.data.splits import SPIDER_DEV_REPORT
    from sqlscout.train.config import config_to_dict, load_config
    from sqlscout.train.gguf_lora import averaged_checkpoints_gguf, checkpoint_lora_gguf
    from sqlscout.train.questions import data_sources

    run = Path(run)
    steps = sorted(set([step] if isinstance(step, int) else step))
    if not steps:
        raise ConfigError("give the step (or steps) to ship")
    model_dirs = [run / "checkpoints" / f"step-{s:06d}" / "model" for s in steps]
    for model_dir in model_dirs:
        if not (model_dir / "adapter_config.json").is_file():
            raise ConfigError(f"{model_dir} holds no LoRA adapters (adapter_config.json); give a step whose checkpoint is kept")
    config = load_config(run / "config.yaml")
    base_preset = get_preset(base)
    if base_preset.gguf is None or Path(str(config.model.name_or_path)).name != base_preset.gguf.filename:
        raise ConfigError(f"{run} trained {config.model.name_or_path}, not the {base} preset's GGUF")
    resolved = config_to_dict(config)
    trained_episode = resolved["rollout"]["episode"]
    unknown = sorted(set(episode or {}) - set(trained_episode))
    if unknown:
        raise ConfigError(f"unknown episode setting {', '.join(unknown)}: use one of {', '.join(sorted(trained_episode))}")
    trained_on = _training_databases(config)
    sources = " + ".join(f"{d.benchmark} {d.split or Path(str(d.path)).name}" for d in data_sources(config.data))
    if set(trained_on) & set(SPIDER_DEV_REPORT):
        raise ConfigError(f"{run} trained on evaluation databases ({', '.join(sorted(set(trained_on) & set(SPIDER_DEV_REPORT)))}): its figures would not be held out")
    dest.mkdir(parents=True, exist_ok=True)
    if len(steps) == 1:
        adapter, kept = checkpoint_lora_gguf(model_dirs[0], dest / f"{name}.gguf", "qwen2", dtype="f16"), None
    else:
        adapter, kept = averaged_checkpoints_gguf(model_dirs, dest / f"{name}.gguf", "qwen2", dtype="f16")
    which = f"step {steps[0]}" if len(steps) == 1 else f"the average of steps {', '.join(map(str, steps))}"
    data = adapter.read_bytes()
    manifest = {
        "name": name,
        "base": base,
        "filename": adapter.name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
        "trained": f"GRPO + LoRA r {config.model.lora.r}, {which} of {run.name} ({sources})"
                   + (f", its first {config.warmup.steps} steps imitating {Path(config.warmup.demos or '').name}" if config.warmup.steps else "")
                   + (f", from {Path(config.model.lora.init).name}" if config.model.lora.init else ""),
        "step": steps[0] if len(steps) == 1 else steps,
        **({"average_kept": round(kept, 6)} if kept is not None else {}),
        "episode": {**trained_episode, **(episode or {})},
        **({"episode_trained": trained_episode} if episode else {}),
        # the held-out evaluation's temperature (greedy in the recipe), not the rollouts'
        # (raised to explore): the preset answers as the figures it ships with were measured
        "sampling": {"temperature": config.eval.temperature,
                     **{k: resolved["rollout"]["sampling"][k] for k in ("top_p", "top_k")}},
        "split": {"train_databases": trained_on, "evaluation_databases": list(SPIDER_DEV_REPORT) + ["Spider-DK"]},
        "measured": measured or {},
        "config": resolved,
    }
    path = dest / f"{name}.json"
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return path


def _training_databases(config: Any) -> list[str]:
    """The databases a run's pool draws from, without opening them: Spider's named tuning
    split, a ``db_ids`` filter, and the databases a JSONL source's questions name."""
    from sqlscout.data import load_tasks
    from sqlscout.data.splits import SPIDER_DEV_TUNE
    from sqlscout.train.questions import data_sources

    names: set[str] = set()
    for source in data_sources(config.data):
        if source.db_ids:
            names |= set(source.db_ids)
        elif source.benchmark == "spider" and source.split == "dev-tune":
            names |= set(SPIDER_DEV_TUNE)
        elif source.benchmark == "jsonl" and source.path:
            root = Path(source.db_root).expanduser() if source.db_root else None
            names |= {t.db_id for t in load_tasks("jsonl", Path(source.path).expanduser(), db_root=root, missing_db="keep") if t.db_id}
        else:
            raise ConfigError(f"cannot tell which databases {source.benchmark} {source.split} covers: give data.db_ids")
    return sorted(names)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", type=Path, help="the training run directory")
    p.add_argument("--step", type=int, nargs="+", required=True, help="the checkpoint's step; several ship their average")
    p.add_argument("--name", default="sqlscout-0.5b-grpo")
    p.add_argument("--base", default="qwen2.5-coder-0.5b", help="the preset whose GGUF the run trained on")
    p.add_argument("--measured", type=Path, help="a JSON file of measured figures to record in the manifest")
    p.add_argument("--episode", action="append", default=[], metavar="KEY=VALUE",
                   help="an episode setting other than the trained one (max_rounds=6); repeatable")  # fmt: skip
    args = p.parse_args(argv)
    measured = json.loads(args.measured.read_text(encoding="utf-8")) if args.measured else None
    episode = {}
    for item in args.episode:
        key, sep, value = item.partition("=")
        if not sep:
            p.error(f"--episode {item}: write KEY=VALUE, e.g. --episode max_rounds=6")
        episode[key.strip()] = yaml.safe_load(value)
    print(ship_adapter(args.run, args.step, args.name, base=args.base, measured=measured, episode=episode or None))


if __name__ == "__main__":
    main()
