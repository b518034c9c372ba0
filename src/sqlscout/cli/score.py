"""``sqlscout score``: score predictions against a benchmark's gold queries, no model needed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from rich.markup import escape

from sqlscout.cli.common import console, err_console, fail, os_error_line, user_path
from sqlscout.errors import SqlscoutError
from sqlscout.scoring import Semantics

DEFAULT_CACHE = Path("~/.cache/sqlscout")
_PROGRESS_FROM = 200  # predictions; fewer finish before a bar would help


def score_command(
    predictions: Path = typer.Argument(..., help="BIRD predictions (.json), JSONL {question_id, sql}, or a run directory."),
    benchmark: Optional[str] = typer.Option(None, help="The benchmark the predictions answer (not needed for a run directory)."),
    data: Optional[Path] = typer.Option(None, help="The benchmark's folder or questions file."),
    split: Optional[str] = typer.Option(None, help="Benchmark split (default: dev; SQaLe: test)."),
    phrasing: Optional[str] = typer.Option(None, help="SQaLe phrasing, or 'all'."),
    db_root: Optional[Path] = typer.Option(None, help="Where the databases are, if not in the benchmark's layout."),
    missing_db: str = typer.Option("error", help="Questions whose database file is absent: error or skip."),
    semantics: Semantics = typer.Option(
        Semantics.OFFICIAL,
        help="official (BIRD), strict, spider (test-suite's comparison, corrected) or test-suite (its evaluation.py exactly); docs/evaluation.md.",
    ),
    difficulty: Optional[str] = typer.Option(None, help="Score only this difficulty level."),
    only_predicted: bool = typer.Option(False, help="Leave out questions with no prediction (default: they count as wrong)."),
    workers: Optional[int] = typer.Option(
        None, help="Processes (default: this one, then one per core once the work is seen to be long; 1: this one only)."
    ),
    timeout: float = typer.Option(30.0, help="Seconds each query may run."),
    timeout_rule: str = typer.Option(
        "query", help="query: each query gets --timeout; pair: BIRD's rule, the prediction and its gold query together (runs every gold query: the cache keeps no timings)."
    ),
    cache_dir: Path = typer.Option(DEFAULT_CACHE, help="Where gold results (and SQaLe databases) are cached."),
    cache: bool = typer.Option(True, help="Use the gold-result cache."),
    cache_predictions: bool = typer.Option(False, help="Cache the predictions' results too (re-scoring the same file is then instant)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    verdicts: Optional[Path] = typer.Option(None, help="Also write one JSON line per prediction with its verdict."),
) -> None:
    """Score predictions by executing them and the gold queries; prints accuracy by difficulty."""
    from sqlscout.data.loader import LEVELS
    from sqlscout.evaluation.predictions import read_predictions
    from sqlscout.evaluation.batch_score import ScoreConfig, score_predictions

    # Paths a user typed: '~' expanded and resolved here, or one line saying why not.
    predictions, cache_dir = user_path(predictions, "predictions"), user_path(cache_dir, "cache folder")
    data = user_path(data, "benchmark") if data is not None else None
    db_root = user_path(db_root, "database root") if db_root is not None else None
    if timeout_rule not in ("query", "pair"):
        fail(f"--timeout-rule takes query or pair, got '{timeout_rule}'")
    # BIRD's rule needs each gold query's running time, which the cache does not keep.
    cache = cache and timeout_rule == "query"
    try:
        config = ScoreConfig(
            semantics=semantics, workers=workers, timeout_s=timeout,
            cache_dir=cache_dir if cache else None, cache_predictions=cache_predictions and cache,
            timeout_rule=timeout_rule,
        )
        if missing_db not in ("error", "skip"):
            fail(f"--missing-db takes error or skip, got '{missing_db}'")
        # Questions on a missing database are dropped after the predictions are paired:
        # a file keyed by position still names them (BIRD's format), and is no error.
        tasks = _benchmark_tasks(predictions, benchmark, data, split, phrasing, db_root,
                                 "keep" if missing_db == "skip" else missing_db, cache_dir)
        read = read_predictions(predictions, tasks, only_predicted=only_predicted)
        present = [p for p in read.predictions if read.source == "run" or _database_exists(p.task)]
        skipped = len(read.predictions) - len(present)
        chosen = [p for p in present if difficulty is None or p.task.difficulty == difficulty]
        if not chosen:
            fail(f"no predictions to score{f' at difficulty {difficulty}' if difficulty else ''}")
        unanswered = sum(1 for p in chosen if p.sql is None) if read.source != "run" else 0
        run = _score_with_progress(score_predictions, chosen, config)
    except SqlscoutError as exc:
        fail(str(exc))
    levels = LEVELS.get("bird" if benchmark == "bird-mini" else benchmark or "", ())
    if not levels:  # a run directory: the levels of whichever benchmark holds them all
        seen = {p.task.difficulty for p in chosen} - {None}
        levels = next((known for known in LEVELS.values() if seen <= set(known)), ())
    summary = run.summary(levels)
    gold_errors = [
        {"question_id": p.task.question_id, "db_id": p.task.db_id, "error": v.gold_error}
        for p, v in zip(run.predictions, run.verdicts)
        if v.gold_error is not None
    ]
    if verdicts is not None:
        try:
            _write_verdicts(user_path(verdicts, "verdicts file"), run)
        except OSError as exc:
            fail(f"cannot write the verdicts to {verdicts}: {os_error_line(exc)}")
    for warning in read.warnings:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)
    if as_json:
        payload: dict[str, Any] = {
            **summary.to_dict(),
            "predictions": str(predictions),
            "format": read.source,
            "unanswered": unanswered,
            "skipped_missing_db": skipped,
            "gold_errors": gold_errors,
            "warnings": read.warnings,
            "gold_cache_hits": run.gold_cache_hits,
            "gold_repeats": run.gold_repeats,
            "gold_runs": run.gold_runs,
            "prediction_cache_hits": run.pred_cache_hits,
            "workers": run.workers,
            "elapsed_s": round(run.elapsed_s, 3),
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    _print_table(summary)
    notes = [f"{summary.semantics.value} semantics", ", ".join(f"{k} {v}" for k, v in summary.outcomes.items())]
    if unanswered:
        notes.append(f"{unanswered} questions had no prediction (counted wrong)")
    if skipped:
        notes.append(f"{skipped} questions skipped (database missing)")
    notes.append(f"gold queries: {run.gold_runs} run, {run.gold_cache_hits} from cache, {run.gold_repeats} repeated")
    if run.pred_cache_hits:
        notes.append(f"predictions: {run.pred_cache_hits} results from cache")
    notes.append(f"{run.elapsed_s:.2f} s on {run.workers} process{'es' if run.workers > 1 else ''}")
    console.print("  ".join(notes), markup=False, soft_wrap=True)
    if gold_errors:
        shown = "; ".join(f"question {e['question_id']} ({e['error']})" for e in gold_errors[:5])
        more = f"; and {len(gold_errors) - 5} more (--json lists all)" if len(gold_errors) > 5 else ""
        count = f"{len(gold_errors)} gold quer{'y' if len(gold_errors) == 1 else 'ies'} failed"
        console.print(f"{count} (counted wrong): {shown}{more}", markup=False, soft_wrap=True)


def _database_exists(task: Any) -> bool:
    return task.db_path is None or Path(task.db_path).is_file()


def _benchmark_tasks(
    predictions: Path, benchmark: Optional[str], data: Optional[Path], split: Optional[str],
    phrasing: Optional[str], db_root: Optional[Path], missing_db: str, cache_dir: Path,
) -> Optional[list]:
    from sqlscout.data import load_tasks

    if predictions.is_dir():
        if benchmark is not None:
            fail("a run directory carries its own questions; drop --benchmark")
        return None
    if benchmark is None or (data is None and benchmark != "sqale"):
        fail("scoring a predictions file needs --benchmark and --data (the benchmark it answers)")
    return load_tasks(
        benchmark, data, split=split, phrasing=phrasing, db_root=db_root, missing_db=missing_db,
        cache_dir=cache_dir.expanduser(),
    )


def _score_with_progress(score_predictions: Any, chosen: list, config: Any) -> Any:
    if len(chosen) < _PROGRESS_FROM or not err_console.is_terminal:  # no bar into a pipe or a file
        return score_predictions(chosen, config)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar: Optional[Progress] = None
    handle: Any = None

    def progress(done: int, total: int, correct: int) -> None:
        nonlocal bar, handle
        if bar is None:
            # Refreshed here, by the scorer's reports, not by a thread of its own: worker
            # processes can then still be forked (no thread may run while they are).
            bar = Progress(TextColumn("[bold]score"), BarColumn(), MofNCompleteColumn(),
                           TextColumn("acc {task.fields[acc]}"), TimeElapsedColumn(), console=err_console,
                           transient=True, auto_refresh=False)
            bar.start()
            handle = bar.add_task("score", total=total, acc="-")
        bar.update(handle, completed=done, acc=f"{correct / max(done, 1):.3f}")
        bar.refresh()

    try:
        return score_predictions(chosen, config, progress=progress)
    finally:
        if bar is not None:
            bar.stop()


def _print_table(summary: Any) -> None:
    from rich.table import Table

    table = Table(title=f"Execution accuracy ({summary.semantics.value})", title_justify="left")
    table.add_column("")
    columns = [*summary.by_difficulty.items(), ("total", summary.total)]
    for name, _ in columns:
        table.add_column(name, justify="right")
    table.add_row("count", *(str(t.count) for _, t in columns))
    table.add_row("correct", *(str(t.correct) for _, t in columns))
    table.add_row("accuracy", *(f"{100 * t.accuracy:.2f}" for _, t in columns))
    console.print(table)


def _write_verdicts(path: Path, run: Any) -> None:
    """One line per prediction, with the SQL as given (not as test-suite rewrites it)."""
    with open(path, "w", encoding="utf-8") as out:
        for prediction, verdict in zip(run.predictions, run.verdicts):
            task = prediction.task
            line = {"question_id": task.question_id, "db_id": task.db_id, "difficulty": task.difficulty,
                    "sql": prediction.sql, "correct": verdict.correct(run.semantics), "verdict": verdict.to_dict()}
            out.write(json.dumps(line, ensure_ascii=False) + "\n")


def register(app: typer.Typer) -> None:
    app.command("score")(score_command)
