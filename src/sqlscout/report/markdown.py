"""The Markdown summary: the same headline numbers as the HTML page, as plain tables."""

from __future__ import annotations

from typing import Any, Sequence

from sqlscout.evaluation.metrics import OUTCOMES, Accuracy
from sqlscout.report.runs import SUMMARY_ROWS, EvalRun, TrainRun, fmt, summary_cell

__all__ = ["HELD_OUT_COLUMNS", "WINDOW_COLUMNS", "markdown_report", "train_windows"]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"

    return [line(header), "|" + "|".join("---" if i == 0 else "--:" for i in range(len(header))) + "|", *map(line, rows)]


def _grouped(runs: list[EvalRun], attribute: str, label: str) -> list[str]:
    groups: list[dict[str, Accuracy]] = [getattr(r.metrics, attribute) for r in runs]
    names = sorted({n for g in groups for n in g})
    if not names:
        return []
    rows = [[name, *[f"{fmt(g[name].official)} (n={g[name].n})" if name in g else "–" for g in groups]] for name in names]
    return ["", f"## Execution accuracy by {label}", "", *_table([label, *[r.name for r in runs]], rows)]


# The columns of a training run's window table: (header, telemetry key, format).
WINDOW_COLUMNS: list[tuple[str, str, str]] = [
    *[(o, f"outcome/{o}", "share") for o in OUTCOMES],
    ("submit", "episode/submit_rate", "share"), ("tested", "episode/tested_rate", "share"),
    ("unread error", "episode/unread_error_rate", "share"), ("known error", "episode/known_error_rate", "share"),
    ("rerun failed", "episode/rerun_failed_rate", "share"), ("from state", "episode/from_state", "share"),
    ("state recovered", "state/equivalent", "share"), ("rounds", "episode/rounds", "number"),
    ("tool calls", "episode/tool_calls", "number"), ("reward", "reward/mean", "number"), ("KL", "kl", "small"),
]  # fmt: skip


# The columns of a training run's held-out table.
HELD_OUT_COLUMNS: list[tuple[str, str, str]] = [
    ("official", "eval/official", "share"), ("strict", "eval/strict", "share"), ("executes", "eval/executable", "share"),
    ("submitted", "eval/submitted", "share"),
    ("rounds", "eval/rounds", "number"), ("tool calls", "eval/tool_calls", "number"),
]  # fmt: skip


def train_windows(run: TrainRun) -> list[tuple[str, dict[str, float | None]]]:
    """Means over the first and the last steps (up to 30 and 200, as the paper quotes them)."""
    steps = run.training_steps
    n = len(steps)
    if n == 0:
        return []
    first = steps[: max(1, min(30, n // 4 or 1))]
    last = steps[-max(1, min(200, n // 4 or 1)) :]
    keys = [key for _, key, _ in WINDOW_COLUMNS]

    def mean(rows: list[dict[str, Any]], key: str) -> float | None:
        values = [float(r[key]) for r in rows if isinstance(r.get(key), (int, float))]
        return sum(values) / len(values) if values else None

    label = lambda rows: f"steps {rows[0]['step']:g}–{rows[-1]['step']:g}"  # noqa: E731
    return [(label(first), {k: mean(first, k) for k in keys}), (label(last), {k: mean(last, k) for k in keys})]


def _train_section(run: TrainRun) -> list[str]:
    lines = ["", f"## Training: {run.name}", "", f"`{run.path}` — {run.describe()}."]
    windows = train_windows(run)
    if windows:
        header = ["window", *[h for h, _, _ in WINDOW_COLUMNS]]
        rows = [[name, *[fmt(w[key], kind) for _, key, kind in WINDOW_COLUMNS]] for name, w in windows]
        lines += ["", *_table(header, rows)]
    evaluated = [s for s in run.steps if isinstance(s.get("eval/official"), (int, float))]
    if evaluated:
        header = ["step", *[h for h, _, _ in HELD_OUT_COLUMNS]]
        rows = [[f"{s['step']:g}", *[fmt(s.get(key), kind) for _, key, kind in HELD_OUT_COLUMNS]] for s in evaluated]
        n = evaluated[-1].get("eval/questions")
        asked = f"{n:g} questions" if isinstance(n, (int, float)) else "the run's `eval` questions"
        lines += ["", f"Held-out evaluation (greedy, {asked}):", "", *_table(header, rows)]
    return lines


def _paired_section(evals: list[EvalRun]) -> list[str]:
    """Each later run against the first, question by question, where they share questions."""
    from sqlscout.evaluation.paired import paired

    rows = []
    for run in evals[1:]:
        p = paired(evals[0].records, run.records)
        if p.n:
            rows.append([run.name, str(p.n), f"{p.difference:+.1f}", str(p.gained), str(p.lost), f"{p.p_value:.3g}"])
    if not rows:
        return []
    header = ["run", "shared questions", f"points vs {evals[0].name}", "gained", "lost", "sign test p"]
    return ["", f"## Paired with {evals[0].name}", "", "First samples, official semantics; gained: right here and wrong there.", "", *_table(header, rows)]


def markdown_report(evals: list[EvalRun], trains: list[TrainRun], *, html_name: str | None = None) -> str:
    lines = ["# sqlscout report"]
    if html_name:
        lines += ["", f"Plots and the trajectory viewer: `{html_name}`."]
    if evals:
        lines += ["", "## Runs", ""]
        lines += [f"- **{r.name}** (`{r.path}`): {r.describe()}" for r in evals]
        lines += ["", "## Summary", ""]
        rows = [[label, *[summary_cell(r, get, kind) for r in evals]] for _, label, get, kind in SUMMARY_ROWS]
        lines += _table(["metric", *[r.name for r in evals]], rows)
        lines += _grouped(evals, "by_difficulty", "difficulty")
        lines += _grouped(evals, "by_condition", "condition")
        lines += _grouped(evals, "by_phrasing", "phrasing")
        lines += ["", "## Outcome mix", ""]
        lines += _table(["outcome", *[r.name for r in evals]], [[o, *[fmt(r.metrics.outcomes.get(o, 0.0)) for r in evals]] for o in OUTCOMES])
        lines += _paired_section(evals)
        reasons = sorted({k for r in evals for k in r.metrics.stop_reasons})
        lines += ["", "## How episodes ended", ""]
        lines += _table(["stop reason", *[r.name for r in evals]], [[k, *[fmt(r.metrics.stop_reasons.get(k, 0.0)) for r in evals]] for k in reasons])
    for run in trains:
        lines += _train_section(run)
    return "\n".join(lines) + "\n"
