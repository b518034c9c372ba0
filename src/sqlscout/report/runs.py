"""What a report reads: evaluation run directories and training directories.

A directory holding ``telemetry.jsonl`` is a training run (``sqlscout train``); one
holding ``config.json`` and ``episodes.jsonl`` is an evaluation run (``sqlscout eval``).
:data:`SUMMARY_ROWS` is the one list of headline numbers both the Markdown and the
HTML report show, so the two can never disagree.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from sqlscout.errors import DataError
from sqlscout.evaluation.metrics import RunMetrics, compute_metrics, latest_records
from sqlscout.evaluation.record import EpisodeRecord
from sqlscout.evaluation.store import RunDir

__all__ = ["EvalRun", "SUMMARY_ROWS", "TrainRun", "fmt", "load_paths"]

TELEMETRY_FILE = "telemetry.jsonl"


@dataclass
class EvalRun:
    name: str
    path: Path
    config: dict[str, Any]
    records: list[EpisodeRecord]
    metrics: RunMetrics

    @property
    def settings(self) -> dict[str, Any]:
        return self.config.get("settings", {})

    def describe(self) -> str:
        s = self.settings
        schema = (s.get("episode") or {}).get("schema", "?")
        return f"{s.get('model', '?')} · {s.get('benchmark', '?')} · {s.get('mode', '?')} · schema {schema} · condition {s.get('condition', 'full')}"


@dataclass
class TrainRun:
    name: str
    path: Path
    steps: list[dict[str, Any]] = field(default_factory=list)
    amendments: list[dict[str, Any]] = field(default_factory=list)  # ``train --amend``'s records

    @property
    def training_steps(self) -> list[dict[str, Any]]:
        """The rows of training steps (a run's step-0 row holds only its starting evaluation)."""
        return [s for s in self.steps if any(not k.startswith("eval/") and k != "step" for k in s)]

    def describe(self) -> str:
        """``N training steps`` and how many held-out evaluations (step 0 included)."""
        trained = len(self.training_steps)
        evaluated = sum(isinstance(s.get("eval/official"), (int, float)) for s in self.steps)
        text = f"{trained} training step{'s' * (trained != 1)}" + (f", {evaluated} held-out evaluation{'s' * (evaluated != 1)}" if evaluated else "")
        imitated = [s["step"] for s in self.training_steps if s.get("warmup/demonstrations")]
        if imitated:  # their outcomes and reward are the demonstrations', not the policy's
            text += f"; steps {min(imitated)}–{max(imitated)} imitated demonstrations (warm-up)"
        for amendment in self.amendments:
            changes = ", ".join(f"{path} {c.get('from')} -> {c.get('to')}" for path, c in sorted(amendment.get("changes", {}).items()))
            text += f"; amended after step {amendment.get('from_step')}: {changes}"
        return text


def _unique_names(paths: list[Path]) -> list[str]:
    names = [p.resolve().name or str(p) for p in paths]
    if len(set(names)) == len(names):
        return names
    return [os.path.join(p.resolve().parent.name, p.resolve().name) for p in paths]


def load_eval_run(path: Path, name: str) -> EvalRun:
    run = RunDir(path)
    config = run.read_config()
    records = latest_records(run.iter_records())
    parameters = (config.get("settings") or {}).get("parameters")
    return EvalRun(name, path, config, records, compute_metrics(records, parameters=parameters))


def load_train_run(path: Path, name: str) -> TrainRun:
    """Per-step telemetry, one JSON object a line with at least ``step``; a torn last line
    is skipped, and the lines of one step (its training row, then its held-out
    evaluation's) are one row."""
    by_step: dict[float, dict[str, Any]] = {}
    lines = (path / TELEMETRY_FILE).read_text(encoding="utf-8").splitlines(keepends=True)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines) and not line.endswith("\n"):
                break  # the trainer was writing this line when it stopped
            raise DataError(f"{path / TELEMETRY_FILE}:{number}: not JSON") from None
        if not isinstance(row, dict) or not isinstance(row.get("step"), (int, float)):
            raise DataError(f"{path / TELEMETRY_FILE}:{number}: a telemetry line needs a numeric 'step'")
        by_step.setdefault(row["step"], {}).update(row)
    steps = [by_step[step] for step in sorted(by_step)]
    amended = path / "amendments.jsonl"
    amendments = [json.loads(line) for line in amended.read_text(encoding="utf-8").splitlines() if line.strip()] if amended.is_file() else []
    return TrainRun(name, path, steps, amendments)


def load_paths(paths: list[Path]) -> tuple[list[EvalRun], list[TrainRun]]:
    """Load every directory, telling training runs from evaluation runs by their files."""
    evals: list[EvalRun] = []
    trains: list[TrainRun] = []
    for path, name in zip(paths, _unique_names(paths)):
        if not path.is_dir():
            raise DataError(f"{path} is not a directory; pass a run directory from `sqlscout eval --out` or `sqlscout train --out`")
        if (path / TELEMETRY_FILE).is_file():
            trains.append(load_train_run(path, name))
        elif RunDir(path).exists():
            evals.append(load_eval_run(path, name))
        else:
            raise DataError(f"{path} holds neither config.json (an eval run) nor {TELEMETRY_FILE} (a training run)")
    return evals, trains


def fmt(value: Any, kind: str = "share") -> str:
    """A number as the reports print it: shares as percentages, big counts with units."""
    if value is None:
        return "–"
    if kind == "share":
        return f"{value * 100:.1f}%"
    if kind == "int":
        return f"{value:,}"
    if kind == "small":  # e.g. a KL of 0.0050
        return f"{value:.4f}"
    if kind == "seconds":
        return f"{value:.2f} s" if value < 100 else f"{value:,.0f} s"
    if kind == "flops":
        for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9)):
            if value >= scale:
                return f"{value / scale:.2f} {unit}"
        return f"{value:,.0f} FLOP"
    return f"{value:.2f}"


def _pass_at(run: EvalRun) -> str | None:
    m = run.metrics
    if not m.pass_at:
        return None
    return ", ".join(f"@{k} {v * 100:.1f}%" for k, v in m.pass_at.items())


def _timed(run: EvalRun) -> list[Any]:
    """Results whose backend reported where its time went (older runs and some backends did not)."""
    return [r.result for r in run.records if r.result.prompt_evaluated + r.result.prompt_reused > 0]


def _timed_mean(attribute: str) -> Callable[[EvalRun], float | None]:
    def mean(run: EvalRun) -> float | None:
        results = _timed(run)
        return sum(getattr(r, attribute) for r in results) / len(results) if results else None

    return mean


def _cache_hit_rate(run: EvalRun) -> float | None:
    results = _timed(run)
    read = sum(r.prompt_evaluated + r.prompt_reused for r in results)
    return sum(r.prompt_reused for r in results) / read if read else None


# (metric id, label, how to read it from a run, how to print it)
SUMMARY_ROWS: list[tuple[str, str, Callable[[EvalRun], Any], str]] = [
    ("questions", "questions", lambda r: r.metrics.n_questions, "int"),
    ("episodes", "episodes", lambda r: r.metrics.n_episodes, "int"),
    ("accuracy-official", "execution accuracy (official)", lambda r: r.metrics.accuracy.official, "share"),
    ("accuracy-strict", "execution accuracy (strict)", lambda r: r.metrics.accuracy.strict, "share"),
    ("pass-at-k", "pass@k (official)", _pass_at, "text"),
    ("majority", "majority vote (official)", lambda r: r.metrics.majority_official, "share"),
    ("submit-rate", "submit rate", lambda r: r.metrics.submit_rate, "share"),
    ("executes", "answer executes", lambda r: r.metrics.executes_rate, "share"),
    ("rounds", "rounds per episode", lambda r: r.metrics.rounds_mean, "number"),
    ("tool-calls", "tool calls per episode", lambda r: r.metrics.tool_calls_mean, "number"),
    ("calls-per-round", "tool calls per tool round", lambda r: r.metrics.calls_per_round, "number"),
    ("distinct-calls", "distinct calls per episode", lambda r: r.metrics.distinct_calls_mean, "number"),
    ("coverage", "gold-table coverage", lambda r: r.metrics.gold_table_coverage, "share"),
    ("literal-recall", "literal recall", lambda r: r.metrics.literal_recall, "share"),
    ("prompt-tokens", "prompt tokens per episode", lambda r: r.metrics.prompt_tokens_mean, "number"),
    ("generated-tokens", "generated tokens per episode", lambda r: r.metrics.generated_tokens_mean, "number"),
    ("compute", "compute per question", lambda r: r.metrics.compute_per_question, "flops"),
    ("wall-episode", "wall time per episode", lambda r: r.metrics.episode_wall_s_mean, "seconds"),
    ("wall-question", "wall time per question (run)", lambda r: r.metrics.wall_s_per_question, "seconds"),
    ("prompt-evaluated", "prompt tokens evaluated per episode", _timed_mean("prompt_evaluated"), "number"),
    ("prompt-reused", "prompt tokens from the cache per episode", _timed_mean("prompt_reused"), "number"),
    ("cache-hit", "prompt cache hit rate", _cache_hit_rate, "share"),
    ("prefill", "prefill time per episode", _timed_mean("prefill_s"), "seconds"),
    ("decode", "decode time per episode", _timed_mean("decode_s"), "seconds"),
    ("backend-errors", "backend errors", lambda r: r.metrics.backend_errors, "int"),
]


def summary_cell(run: EvalRun, getter: Callable[[EvalRun], Any], kind: str) -> str:
    value = getter(run)
    return value if kind == "text" and value is not None else fmt(value, kind)
