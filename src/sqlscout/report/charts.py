"""The report's plots, from loaded runs to SVG text.

Evaluation runs: accuracy by difficulty, by schema condition and by phrasing, the
outcome mix, and histograms of rounds and tool calls per episode — every run a series,
so several runs compare side by side. Training runs: outcome mix, episode shape, submit
rate, reward, KL and step time over steps (the plots of the SQaLe paper), and held-out
accuracy over the evaluated steps.
"""

from __future__ import annotations

from typing import Any

from sqlscout.evaluation.metrics import OUTCOMES, Accuracy
from sqlscout.report.runs import EvalRun, TrainRun
from sqlscout.report.svg import OUTCOME_COLOURS, bar_chart, line_chart, stacked_shares

__all__ = ["eval_charts", "train_charts"]

CALL_BINS = 16  # tool-call histogram: 0..15 and "16+"


def _by(runs: list[EvalRun], attribute: str, title: str) -> str | None:
    groups: list[dict[str, Accuracy]] = [getattr(r.metrics, attribute) for r in runs]
    categories = sorted({name for g in groups for name in g}, key=_level_order)
    if not categories:
        return None
    series = [(r.name, [g[c].official if c in g else None for c in categories]) for r, g in zip(runs, groups)]
    return bar_chart(title, categories, series)


_LEVELS = ("easy", "simple", "medium", "moderate", "hard", "extra", "challenging")


def _level_order(name: str) -> tuple[int, str]:
    return (_LEVELS.index(name) if name in _LEVELS else len(_LEVELS), name)


def _histogram(runs: list[EvalRun], attribute: str, title: str, *, cap: int | None = None) -> str | None:
    hists: list[dict[int, int]] = [getattr(r.metrics, attribute) for r in runs]
    if not any(hists):
        return None
    top = max(k for h in hists for k in h) if any(hists) else 0
    last = min(top, cap) if cap is not None else top
    categories = [str(k) for k in range(0, last + 1)]
    if cap is not None and top > cap:
        categories[-1] = f"{cap}+"
    series = []
    for run, hist in zip(runs, hists):
        total = sum(hist.values()) or 1
        shares = [0.0] * len(categories)
        for value, count in hist.items():
            shares[min(value, last)] += count / total
        series.append((run.name, shares))
    return bar_chart(title, categories, series)


def eval_charts(runs: list[EvalRun]) -> list[tuple[str, str]]:
    """(chart id, svg) for every plot that has data."""
    charts: list[tuple[str, str | None]] = [
        ("accuracy-by-difficulty", _by(runs, "by_difficulty", "Execution accuracy by difficulty")),
        ("accuracy-by-condition", _by(runs, "by_condition", "Execution accuracy by schema condition")),
        ("accuracy-by-phrasing", _by(runs, "by_phrasing", "Execution accuracy by phrasing")),
        (
            "outcome-mix",
            stacked_shares("Outcome mix", [(r.name, r.metrics.outcomes) for r in runs], OUTCOMES, OUTCOME_COLOURS)
            if any(r.metrics.outcomes for r in runs)
            else None,
        ),
        ("rounds-histogram", _histogram(runs, "rounds_hist", "Rounds per episode (share of episodes)")),
        ("calls-histogram", _histogram(runs, "calls_hist", "Tool calls per episode (share of episodes)", cap=CALL_BINS)),
    ]
    return [(name, svg) for name, svg in charts if svg]


def _column(steps: list[dict[str, Any]], key: str) -> list[float | None]:
    return [float(s[key]) if isinstance(s.get(key), (int, float)) else None for s in steps]


def train_charts(run: TrainRun) -> list[tuple[str, str]]:
    """Outcome mix, episode shape, submit rate, reward, KL and seconds per step over the
    training steps; held-out accuracy over the evaluated ones (step 0 included)."""
    steps = run.training_steps
    charts = _step_charts(run.name, steps) if steps else []
    # Periodic held-out evaluation (the trainer logs eval/* on the steps where it ran).
    evaluated = [s for s in run.steps if isinstance(s.get("eval/official"), (int, float))]
    if evaluated:
        eval_xs = [float(s["step"]) for s in evaluated]
        series = [
            ("official", _column(evaluated, "eval/official")), ("strict", _column(evaluated, "eval/strict")),
            ("executes", _column(evaluated, "eval/executable")), ("submitted", _column(evaluated, "eval/submitted")),
        ]  # fmt: skip
        charts.append(("train-eval", line_chart(f"{run.name}: held-out execution accuracy, and answers submitted", eval_xs,
                                                series, percent=True)))
    return charts


def _step_charts(name: str, steps: list[dict[str, Any]]) -> list[tuple[str, str]]:
    xs = [float(s["step"]) for s in steps]
    charts: list[tuple[str, str]] = []
    outcome_series = [(o, _column(steps, f"outcome/{o}")) for o in OUTCOMES]
    if any(v is not None for _, vs in outcome_series for v in vs):
        charts.append(
            (
                "train-outcome-mix",
                line_chart(
                    f"{name}: outcome mix over training", xs, outcome_series, percent=True,
                    colours=[OUTCOME_COLOURS[o] for o in OUTCOMES],
                ),
            )
        )
    shape = [("rounds per episode", _column(steps, "episode/rounds")), ("tool calls per episode", _column(steps, "episode/tool_calls"))]
    if any(v is not None for _, vs in shape for v in vs):
        charts.append(("train-episode-shape", line_chart(f"{name}: episode shape over training", xs, shape)))
    more = [
        ("train-submit", f"{name}: episodes that submitted, answers run before they were given, "
         "answers submitted beside a run of them that failed or after one, failed queries sent again",
         [("submit rate", _column(steps, "episode/submit_rate")), ("tested", _column(steps, "episode/tested_rate")),
          ("unread error", _column(steps, "episode/unread_error_rate")),
          ("known error", _column(steps, "episode/known_error_rate")),
          ("failed query rerun", _column(steps, "episode/rerun_failed_rate"))], True),
        *([("train-states", f"{name}: episodes that started from a failure state, and the share of them answered right",
            [("from a failure state", _column(steps, "episode/from_state")), ("recovered", _column(steps, "state/equivalent"))], True)]
          if any(v for v in _column(steps, "episode/from_state")) else []),
        ("train-reward", f"{name}: mean reward", [("reward mean", _column(steps, "reward/mean"))], False),
        ("train-kl", f"{name}: KL to the starting policy (k3 per token) and its coefficient",
         [("KL", _column(steps, "kl")), ("KL coefficient", _column(steps, "kl_coef"))], False),
        ("train-time", f"{name}: seconds per step",
         [("rollout", _column(steps, "time/rollout_s")), ("update", _column(steps, "time/update_s"))], False),
        ("train-memory", f"{name}: peak resident memory per step (GB)", [("peak", _column(steps, "memory/peak_gb"))], False),
    ]  # fmt: skip
    for chart_id, title, series, percent in more:
        if any(v is not None for _, vs in series for v in vs):
            charts.append((chart_id, line_chart(title, xs, series, percent=percent)))
    return charts
