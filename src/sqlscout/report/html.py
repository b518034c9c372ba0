"""The HTML report: one self-contained file — summary tables, SVG plots, and a
trajectory viewer in which each episode unfolds round by round beside the gold answer.

Styles, script and data are all inline (no URL is fetched when the page opens). The
episodes travel as JSON in a ``<script type="application/json">`` element that the
viewer script reads; model text is inserted with ``textContent`` only.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from html import escape
from importlib import resources
from typing import Any

from sqlscout.evaluation.record import EpisodeRecord
from sqlscout.report.charts import eval_charts, train_charts
from sqlscout.report.markdown import WINDOW_COLUMNS, train_windows
from sqlscout.report.runs import SUMMARY_ROWS, EvalRun, TrainRun, fmt, summary_cell

__all__ = ["html_report", "viewer_data"]

TEXT_CAP = 4000  # characters of one model turn or tool output kept in the page
OUTPUT_CAP = 2000


def _cap(text: str | None, limit: int) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters)"


def _asset(name: str) -> str:
    return resources.files("sqlscout.report").joinpath("assets", name).read_text(encoding="utf-8")


def _episode(record: EpisodeRecord, run: int) -> dict[str, Any]:
    result = record.result
    user = next((m["content"] for m in result.messages if m.get("role") == "user"), "")
    return {
        "run": run,
        "sample": record.sample,
        "outcome": record.verdict.outcome.value if record.verdict else None,
        "official": record.verdict.official if record.verdict else None,
        "pred_error": _cap(record.verdict.pred_error, OUTPUT_CAP) if record.verdict and record.verdict.pred_error else None,
        "stop": result.stop_reason.value,
        "source": result.answer_source.value,
        "final_sql": result.final_sql,
        "error": result.error,
        "pred": record.pred.to_dict() if record.pred else None,
        "tokens": [result.prompt_tokens, result.generated_tokens, result.total_tokens],
        "wall": result.wall_time_s,
        "user": _cap(user, TEXT_CAP),
        "rounds": [
            {
                "i": r.index,
                "final": r.final,
                "text": _cap(r.model_text, TEXT_CAP),
                "errors": r.parse_errors,
                "calls": [{"tool": c.tool, "args": c.args, "ok": c.ok, "out": _cap(c.output, OUTPUT_CAP)} for c in r.calls],
            }
            for r in result.rounds
        ],
    }


def viewer_data(runs: list[EvalRun], *, max_questions: int | None = None) -> dict[str, Any]:
    """The viewer's JSON: runs, and questions (merged across runs by benchmark, id and
    text) each with its episodes per run. ``max_questions`` keeps the first N."""
    questions: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r, run in enumerate(runs):
        for record in run.records:
            task = record.task
            merge = (task.benchmark, record.key, task.question)
            if merge not in questions:
                if max_questions is not None and len(questions) >= max_questions:
                    continue
                questions[merge] = {
                    "key": record.key,
                    "question": task.question,
                    "evidence": task.evidence,
                    "difficulty": task.difficulty,
                    "phrasing": task.phrasing,
                    "condition": task.condition,
                    "db_id": task.db_id,
                    "gold_sql": task.gold_sql,
                    "gold": record.gold.to_dict() if record.gold else None,
                    "episodes": [[] for _ in runs],
                }
            entry = questions[merge]
            if entry["gold"] is None and record.gold is not None:
                entry["gold"] = record.gold.to_dict()
            entry["episodes"][r].append(_episode(record, r))
    return {
        "runs": [{"name": run.name, "describe": run.describe()} for run in runs],
        "questions": list(questions.values()),
    }


def _json_script(data: Any) -> str:
    text = json.dumps(data, ensure_ascii=False, default=str)
    # Nothing inside may close the script element or open an HTML comment.
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def _summary_table(runs: list[EvalRun]) -> str:
    head = "".join(f"<th>{escape(r.name)}</th>" for r in runs)
    rows = []
    for metric, label, get, kind in SUMMARY_ROWS:
        cells = "".join(
            f'<td data-metric="{metric}" data-run="{i}">{escape(summary_cell(r, get, kind))}</td>' for i, r in enumerate(runs)
        )
        rows.append(f"<tr><td>{escape(label)}</td>{cells}</tr>")
    return f'<table class="summary" id="summary-table"><thead><tr><th>metric</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _runs_list(runs: list[EvalRun]) -> str:
    items = []
    for r in runs:
        sessions = r.config.get("sessions") or [{}]
        first = sessions[0]
        commit = first.get("git_commit") or "no git commit"
        items.append(
            f"<li><b>{escape(r.name)}</b>: {escape(r.describe())} "
            f'<span class="muted">— {escape(str(r.path))}, sqlscout {escape(str(first.get("sqlscout_version", "?")))}, '
            f"{escape(commit)}, {len(sessions)} session(s), prompt {escape(str(r.settings.get('prompt_version', '?')))}</span></li>"
        )
    return "<ul>" + "".join(items) + "</ul>"


def _figures(charts: list[tuple[str, str]]) -> str:
    return '<div class="charts">' + "".join(f'<figure id="{name}">{svg}</figure>' for name, svg in charts) + "</div>"


def _train_section(run: TrainRun) -> str:
    windows = train_windows(run)
    table = ""
    if windows:
        head = "".join(f"<th>{escape(header)}</th>" for header, _, _ in WINDOW_COLUMNS)
        rows = "".join(
            f"<tr><td>{escape(name)}</td>" + "".join(f"<td>{fmt(w[key], kind)}</td>" for _, key, kind in WINDOW_COLUMNS) + "</tr>"
            for name, w in windows
        )
        table = f'<table class="summary train-windows"><thead><tr><th>window</th>{head}</tr></thead><tbody>{rows}</tbody></table>'
    return (
        f'<section class="training"><h2>Training: {escape(run.name)}</h2>'
        f'<p class="muted">{escape(str(run.path))} — {escape(run.describe())}</p>'
        f"{table}{_figures(train_charts(run))}</section>"
    )


def _viewer(runs: list[EvalRun], data: dict[str, Any]) -> str:
    difficulties = sorted({q["difficulty"] for q in data["questions"] if q["difficulty"]})
    options = "".join(f'<option value="{escape(d)}">{escape(d)}</option>' for d in difficulties)
    run_heads = "".join(f"<th>{escape(r.name)}</th>" for r in runs)
    return f"""<section id="episodes"><h2>Episodes</h2>
<p class="muted">Click a question to replay its episodes round by round, every run side by side with the gold answer.</p>
<div class="filters">
<input type="search" id="filter-text" placeholder="search question, id, SQL, database">
<select id="filter-outcome"><option value="">any outcome</option><option>equivalent</option><option>executable</option><option>parsable</option><option>invalid</option></select>
<select id="filter-difficulty"><option value="">any difficulty</option>{options}</select>
<span id="episode-count" class="muted"></span></div>
<table id="episode-list"><thead><tr><th>id</th><th>question</th><th>difficulty</th>{run_heads}</tr></thead><tbody></tbody></table>
<button type="button" id="show-more" hidden>show more</button>
<div id="episode-detail"></div>
<script type="application/json" id="report-data">{_json_script(data)}</script>
</section>"""


def html_report(evals: list[EvalRun], trains: list[TrainRun], *, max_questions: int | None = None) -> str:
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body: list[str] = [
        f'<header><h1>sqlscout report</h1><p class="muted">generated {generated}</p><div id="js-errors"></div></header>'
    ]
    if evals:
        body.append(f'<section id="runs"><h2>Runs</h2>{_runs_list(evals)}</section>')
        body.append(f'<section id="summary"><h2>Summary</h2>{_summary_table(evals)}</section>')
        body.append(f'<section id="plots"><h2>Plots</h2>{_figures(eval_charts(evals))}</section>')
    for run in trains:
        body.append(_train_section(run))
    if evals:
        body.append(_viewer(evals, viewer_data(evals, max_questions=max_questions)))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sqlscout report</title>
<style>{_asset("report.css")}</style>
</head><body>
{"".join(body)}
<script>{_asset("report.js")}</script>
</body></html>
"""
