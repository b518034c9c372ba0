"""``sqlscout score``: score predictions against a benchmark's gold queries, no model needed.

The command runs on a lean path (:func:`fast`, see :mod:`sqlscout.cli.main`): its
command line is read by :func:`~sqlscout.cli.common.parse_plain` from :data:`FLAGS`,
and its summary table is written directly when it goes to a pipe or a file; typer
(``register``) reads any line the lean path declines, and both call :func:`run`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from sqlscout.cli.common import Flag, fail, os_error_line, plain, plain_float, plain_int, plain_text, run_plain, user_path, write_line
from sqlscout.errors import SqlscoutError
from sqlscout.scoring.compare import Semantics

DEFAULT_CACHE = Path("~/.cache/sqlscout")
_PROGRESS_FROM = 200  # predictions; fewer finish before a bar would help
_PROGRESS_AFTER_S = 0.5  # nor does a bar on a run that ends sooner

# The options of score_command (below), for the lean path; tests/test_startup.py checks
# that they are typer's, name for name and default for default.
FLAGS = (
    Flag("benchmark", ("--benchmark",), plain_text, None),
    Flag("data", ("--data",), Path, None),
    Flag("split", ("--split",), plain_text, None),
    Flag("phrasing", ("--phrasing",), plain_text, None),
    Flag("db_root", ("--db-root",), plain_text, None),
    Flag("missing_db", ("--missing-db",), plain_text, "error"),
    Flag("semantics", ("--semantics",), Semantics, Semantics.OFFICIAL),
    Flag("difficulty", ("--difficulty",), plain_text, None),
    Flag("only_predicted", ("--only-predicted",), None, False, off=("--no-only-predicted",)),
    Flag("workers", ("--workers",), plain_int, None),
    Flag("timeout", ("--timeout",), plain_float, 30.0),
    Flag("timeout_rule", ("--timeout-rule",), plain_text, "query"),
    Flag("cache_dir", ("--cache-dir",), Path, DEFAULT_CACHE),
    Flag("cache", ("--cache",), None, True, off=("--no-cache",)),
    Flag("cache_predictions", ("--cache-predictions",), None, False, off=("--no-cache-predictions",)),
    Flag("as_json", ("--json",), None, False),
    Flag("verdicts", ("--verdicts",), Path, None),
    Flag("immutable", ("--immutable",), None, False),
    Flag("query_memory", ("--query-memory",), plain_int, 0),
)
ARGUMENTS = (("predictions", Path),)


def fast(argv: Sequence[str]) -> bool:
    """Run ``sqlscout score ARGV`` without typer; False (nothing run) when typer must read it."""
    return run_plain(argv, ARGUMENTS, FLAGS, run)


def run(
    predictions: Path,
    benchmark: Optional[str] = None,
    data: Optional[Path] = None,
    split: Optional[str] = None,
    phrasing: Optional[str] = None,
    db_root: Optional[str] = None,
    missing_db: str = "error",
    semantics: Semantics = Semantics.OFFICIAL,
    difficulty: Optional[str] = None,
    only_predicted: bool = False,
    workers: Optional[int] = None,
    timeout: float = 30.0,
    timeout_rule: str = "query",
    cache_dir: Path = DEFAULT_CACHE,
    cache: bool = True,
    cache_predictions: bool = False,
    as_json: bool = False,
    verdicts: Optional[Path] = None,
    immutable: bool = False,
    query_memory: int = 0,
) -> None:
    """The command itself, whichever path read its line."""
    from sqlscout.data.loader import LEVELS
    from sqlscout.evaluation.predictions import read_predictions
    from sqlscout.evaluation.batch_score import SMALL_RESULT_CELLS, ScoreConfig, score_predictions

    # Paths a user typed: '~' expanded and resolved here, or one line saying why not.
    predictions, cache_dir = user_path(predictions, "predictions"), user_path(cache_dir, "cache folder")
    data = user_path(data, "benchmark") if data is not None else None
    # A URL with {db_id} (postgresql://user@host/{db_id}) scores on the benchmark's copies there.
    on_engine = db_root if db_root is not None and "://" in db_root else None
    db_path = user_path(Path(db_root), "database root") if db_root is not None and on_engine is None else None
    if timeout_rule not in ("query", "pair"):
        fail(f"--timeout-rule takes query or pair, got '{timeout_rule}'")
    # The benchmark's files are read once into the cache folder (unless --no-cache).
    files_cache = cache_dir if cache else None
    # BIRD's rule needs each gold query's running time, which the cache does not keep.
    cache = cache and timeout_rule == "query"
    try:
        config = ScoreConfig(
            semantics=semantics, workers=workers, timeout_s=timeout,
            cache_dir=cache_dir if cache else None, cache_predictions=cache_predictions and cache,
            cache_prediction_cells=SMALL_RESULT_CELLS if cache else 0,
            timeout_rule=timeout_rule, immutable=immutable, query_memory_mb=query_memory,
        )
        if missing_db not in ("error", "skip"):
            fail(f"--missing-db takes error or skip, got '{missing_db}'")
        if predictions.exists() and (predictions.is_dir() or benchmark is not None):
            _expect_parsing(cache_dir if cache else None)
        # Questions on a missing database are dropped after the predictions are paired:
        # a file keyed by position still names them (BIRD's format), and is no error.
        tasks = _benchmark_tasks(predictions, benchmark, data, split, phrasing, db_path,
                                 "keep" if missing_db == "skip" else missing_db, cache_dir, files_cache)
        read = read_predictions(predictions, tasks, only_predicted=only_predicted)
        if read.source != "run" and read.predictions and all(p.sql is None for p in read.predictions):
            # Scoring every question as unanswered would print 0.0 and exit 0: say what is wrong.
            fail(f"{predictions} holds no prediction for any question; check the file (is it empty, or keyed by other ids?)", 1)
        exists: dict[Any, bool] = {}  # one look per database file, not per question
        present = [p for p in read.predictions if read.source == "run" or _database_exists(p.task, exists)]
        skipped = len(read.predictions) - len(present)
        if on_engine is not None:
            from dataclasses import replace

            from sqlscout.engines.benchmark import tasks_on_engine

            # The predictions are SQLite's (what sqlscout's runs write): transpiled as the golds are.
            written = [p.sql for p in present]
            moved = tasks_on_engine([p.task for p in present], on_engine, predictions=written)
            present = [replace(p, task=task, sql=sql) for p, task, sql in zip(present, moved, written)]
        chosen = [p for p in present if difficulty is None or p.task.difficulty == difficulty]
        if not chosen:
            fail(f"no predictions to score{f' at difficulty {difficulty}' if difficulty else ''}")
        unanswered = sum(1 for p in chosen if p.sql is None) if read.source != "run" else 0
        result = _score_with_progress(score_predictions, chosen, config)
    except SqlscoutError as exc:
        fail(str(exc))
    levels = LEVELS.get("bird" if benchmark == "bird-mini" else benchmark or "", ())
    if not levels:  # a run directory: the levels of whichever benchmark holds them all
        seen = {p.task.difficulty for p in chosen} - {None}
        levels = next((known for known in LEVELS.values() if seen <= set(known)), ())
    summary = result.summary(levels)
    gold_errors = [
        {"question_id": p.task.question_id, "db_id": p.task.db_id, "error": v.gold_error}
        for p, v in zip(result.predictions, result.verdicts)
        if v.gold_error is not None
    ]
    if verdicts is not None:
        try:
            _write_verdicts(user_path(verdicts, "verdicts file"), result)
        except OSError as exc:
            fail(f"cannot write the verdicts to {verdicts}: {os_error_line(exc)}")
    for warning in read.warnings:
        write_line(warning, stderr=True, markup="[yellow]warning:[/] ")
    if as_json:
        payload: dict[str, Any] = {
            **summary.to_dict(),
            "predictions": str(predictions),
            "format": read.source,
            "unanswered": unanswered,
            "skipped_missing_db": skipped,
            "gold_errors": gold_errors,
            "warnings": read.warnings,
            "gold_cache_hits": result.gold_cache_hits,
            "gold_repeats": result.gold_repeats,
            "gold_runs": result.gold_runs,
            "prediction_cache_hits": result.pred_cache_hits,
            "workers": result.workers,
            "elapsed_s": round(result.elapsed_s, 3),
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    _print_table(summary)
    notes = [f"{summary.semantics.value} semantics", ", ".join(f"{k} {v}" for k, v in summary.outcomes.items())]
    if unanswered:
        notes.append(f"{unanswered} questions had no prediction (counted wrong)")
    if skipped:
        notes.append(f"{skipped} questions skipped (database missing)")
    notes.append(f"gold queries: {result.gold_runs} run, {result.gold_cache_hits} from cache, {result.gold_repeats} repeated")
    if result.pred_cache_hits:
        notes.append(f"predictions: {result.pred_cache_hits} results from cache")
    notes.append(f"{result.elapsed_s:.2f} s on {result.workers} process{'es' if result.workers > 1 else ''}")
    write_line("  ".join(notes))
    if gold_errors:
        shown = "; ".join(f"question {e['question_id']} ({e['error']})" for e in gold_errors[:5])
        more = f"; and {len(gold_errors) - 5} more (--json lists all)" if len(gold_errors) > 5 else ""
        count = f"{len(gold_errors)} gold quer{'y' if len(gold_errors) == 1 else 'ies'} failed"
        write_line(f"{count} (counted wrong): {shown}{more}")


def _expect_parsing(cache_dir: Optional[Path]) -> None:
    """With nothing cached, sqlglot will be asked about the predictions that do not
    run: its helper process imports it now, on another core, while this one loads the
    benchmark (:mod:`sqlscout.scoring.parse_helper`)."""
    if cache_dir is None or not (cache_dir / f"results-py{sys.version_info.major}.{sys.version_info.minor}").is_dir():
        from sqlscout.scoring.parse_helper import start_helper

        start_helper()


def _database_exists(task: Any, known: dict[Any, bool]) -> bool:
    if task.db_path is None:
        return True
    found = known.get(task.db_path)
    if found is None:
        found = known[task.db_path] = isinstance(task.db_path, str) and "://" in task.db_path or Path(task.db_path).is_file()
    return found


def _benchmark_tasks(
    predictions: Path, benchmark: Optional[str], data: Optional[Path], split: Optional[str],
    phrasing: Optional[str], db_root: Optional[Path], missing_db: str, cache_dir: Path, files_cache: Optional[Path],
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
        cache_dir=cache_dir if benchmark == "sqale" else files_cache,  # SQaLe builds its databases there
    )


def _score_with_progress(score_predictions: Any, chosen: list, config: Any) -> Any:
    if len(chosen) < _PROGRESS_FROM or plain(sys.stderr):  # no bar into a pipe or a file
        return score_predictions(chosen, config)
    from sqlscout.cli.common import err_console

    if not err_console.is_terminal:
        return score_predictions(chosen, config)
    import time

    start = time.perf_counter()
    bar: Any = None
    handle: Any = None

    def progress(done: int, total: int, correct: int) -> None:
        nonlocal bar, handle
        if bar is None:
            if time.perf_counter() - start < _PROGRESS_AFTER_S:
                return
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

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
    title = f"Execution accuracy ({summary.semantics.value})"
    columns = [*summary.by_difficulty.items(), ("total", summary.total)]
    rows = [
        ["", *(name for name, _ in columns)],
        ["count", *(str(t.count) for _, t in columns)],
        ["correct", *(str(t.correct) for _, t in columns)],
        ["accuracy", *(f"{100 * t.accuracy:.2f}" for _, t in columns)],
    ]
    text = _table_text(title, rows) if plain(sys.stdout) else None
    if text is not None:
        sys.stdout.write(text)
        return
    from rich.table import Table

    from sqlscout.cli.common import console

    table = Table(title=title, title_justify="left")
    table.add_column("")
    for name in rows[0][1:]:
        table.add_column(name, justify="right")
    for row in rows[1:]:
        table.add_row(*row)
    console.print(table)


def _table_text(title: str, rows: list[list[str]]) -> str | None:
    """The table as rich prints it into a file (box ``HEAVY_HEAD``, one space of padding,
    the first column left-aligned, the others right), or None where rich would do more
    than lay it out (fold a title or cell that does not fit, or text it may restyle)."""
    cells = [cell for row in rows for cell in row] + [title]
    if any(not cell.isascii() or not cell.isprintable() or "[" in cell or ":" in cell for cell in cells):
        return None
    widths = [max(len(row[i]) for row in rows) + 2 for i in range(len(rows[0]))]
    width = sum(widths) + len(widths) + 1
    columns = os.environ.get("COLUMNS", "80")
    if not columns.isdigit() or width > int(columns) or len(title) > width:
        return None

    def line(left: str, fill: str, middle: str, right: str) -> str:
        return left + middle.join(fill * w for w in widths) + right + "\n"

    def cells_of(row: list[str], bar: str) -> str:
        parts = [f" {row[0]:<{widths[0] - 2}} "] + [f" {cell:>{w - 2}} " for cell, w in zip(row[1:], widths[1:])]
        return bar + bar.join(parts) + bar + "\n"

    return "".join([
        f"{title:<{width}}\n",
        line("┏", "━", "┳", "┓"),
        cells_of(rows[0], "┃"),
        line("┡", "━", "╇", "┩"),
        *(cells_of(row, "│") for row in rows[1:]),
        line("└", "─", "┴", "┘"),
    ])


def _write_verdicts(path: Path, run: Any) -> None:
    """One line per prediction, with the SQL as given (not as test-suite rewrites it)."""
    with open(path, "w", encoding="utf-8") as out:
        for prediction, verdict in zip(run.predictions, run.verdicts):
            task = prediction.task
            line = {"question_id": task.question_id, "db_id": task.db_id, "difficulty": task.difficulty,
                    "sql": prediction.sql, "correct": verdict.correct(run.semantics), "verdict": verdict.to_dict()}
            out.write(json.dumps(line, ensure_ascii=False) + "\n")


def register(app: Any) -> None:
    import typer

    def score_command(
        predictions: Path = typer.Argument(..., help="BIRD predictions (.json), JSONL {question_id, sql}, or a run directory."),
        benchmark: Optional[str] = typer.Option(None, help="The benchmark the predictions answer (not needed for a run directory)."),
        data: Optional[Path] = typer.Option(None, help="The benchmark's folder or questions file."),
        split: Optional[str] = typer.Option(None, help="Benchmark split (default: dev; SQaLe: test)."),
        phrasing: Optional[str] = typer.Option(None, help="SQaLe phrasing, or 'all'."),
        db_root: Optional[str] = typer.Option(None, help="Where the databases are, if not in the benchmark's layout; or a URL with {db_id} (duckdb:///copies/{db_id}.duckdb, postgresql://user@host/{db_id}): the benchmark's copies on that engine (sqlscout copy)."),
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
        cache_predictions: bool = typer.Option(False, help="Cache every prediction's result too, however large (by default only those of up to 1,000 cells are kept)."),
        as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
        verdicts: Optional[Path] = typer.Option(None, help="Also write one JSON line per prediction with its verdict."),
        immutable: bool = typer.Option(False, "--immutable", help="The databases do not change while read (read-only media, WAL-mode benchmark copies): open them with SQLite's immutable=1."),
        query_memory: int = typer.Option(0, help="Run each query in a worker process with this many MB, killed at its deadline (untrusted predictions); 0, the default: in this process, ten times faster on Spider."),
    ) -> None:
        """Score predictions by executing them and the gold queries; prints accuracy by difficulty."""
        run(**locals())

    app.command("score")(score_command)
