"""``sqlscout train``: GRPO training from one config file, with a live progress bar."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from sqlscout.cli.common import console, fail
from sqlscout.errors import SqlscoutError


def train(
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML config (see configs/ and docs/training.md)."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="Train this many steps (overrides the file's steps)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (overrides the file's out)."),
    print_config: bool = typer.Option(False, "--print-config", help="Print the full config, every default included, and exit."),
    fresh: bool = typer.Option(False, "--fresh", help="Ignore checkpoints in the run directory (default: resume from the latest)."),
    amend: bool = typer.Option(False, "--amend", help="Resume under the config's changed reward, KL, loss, learning rate, sampling or episode settings (recorded in the run's amendments.jsonl)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show the progress bar."),
) -> None:
    """Train a policy with GRPO on multi-turn text-to-SQL episodes (SPEC §8)."""
    from sqlscout.train.config import TrainConfig, config_to_dict, load_config

    overrides: dict[str, Any] = {"steps": max_steps, "out": str(out) if out else None}
    try:
        cfg = load_config(config, **overrides) if config else TrainConfig().replace(**{k: v for k, v in overrides.items() if v is not None})
    except SqlscoutError as exc:
        fail(str(exc) if config else f"--max-steps/--out: {exc}")
    if print_config:
        import yaml

        console.print(yaml.safe_dump(config_to_dict(cfg), sort_keys=False), markup=False, end="")
        raise typer.Exit(0)
    if config is None:
        fail("give a config file: sqlscout train --config configs/tiny-cpu.yaml (see --print-config for every field)")
    if amend and fresh:
        fail("--amend continues a run and --fresh starts one over: give one of them")
    _run(cfg, resume=not fresh, amend=amend, progress=progress and cfg.telemetry.progress)


def _run(cfg: Any, *, resume: bool, progress: bool, amend: bool = False) -> None:
    from sqlscout.train.loop import train as run_training

    bar = _ProgressBar() if progress else None
    try:
        result = run_training(
            cfg,
            resume=resume,
            amend=amend,
            on_start=bar.start if bar else None,
            on_step=bar.update if bar else _print_step,
        )
    except SqlscoutError as exc:
        fail(str(exc))
    finally:
        if bar:
            bar.stop()
    if result.main:  # one line per run, not per process
        console.print(f"trained {result.steps} steps; telemetry, checkpoints and config in {result.out}", soft_wrap=True)


def _summary(row: dict[str, Any]) -> str:
    def f(key: str, fmt: str) -> str:
        value = row.get(key)
        return format(value, fmt) if isinstance(value, (int, float)) else "-"

    text = (
        f"reward {f('reward/mean', '.3f')}  equiv {f('outcome/equivalent', '.0%')}  invalid {f('outcome/invalid', '.0%')}  "
        f"calls {f('episode/tool_calls', '.1f')}  kl {f('kl', '.4f')}  {f('time/step_s', '.1f')} s/step"
    )
    if "eval/official" in row:
        text += f"  eval {f('eval/official', '.1%')}"
    return text


def _print_step(row: dict[str, Any]) -> None:
    console.print(f"step {row['step']}: {_summary(row)}", markup=False)


class _ProgressBar:
    """A rich progress bar whose description carries the key numbers of the last step."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.progress = Progress(
            TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            TextColumn("{task.description}"), console=console,
        )  # fmt: skip
        self.task: Any = None

    def start(self, done: int, total: int) -> None:
        self.progress.start()
        self.task = self.progress.add_task("starting", total=total, completed=done)

    def update(self, row: dict[str, Any]) -> None:
        self.progress.update(self.task, completed=row["step"], description=_summary(row))

    def stop(self) -> None:
        self.progress.stop()


def register(app: typer.Typer) -> None:
    app.command()(train)
