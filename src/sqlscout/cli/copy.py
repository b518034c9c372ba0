"""``sqlscout copy``: a SQLite database, or a benchmark's databases, into another engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from sqlscout.cli.common import console, err_console, fail
from sqlscout.errors import SqlscoutError


def copy_command(
    source: Optional[Path] = typer.Argument(None, help="The SQLite file to copy (or use --benchmark)."),
    dest: Optional[str] = typer.Argument(None, help="Where: duckdb:///path.duckdb or postgresql://user@host/db."),
    benchmark: Optional[str] = typer.Option(None, help="Copy every database a benchmark's questions use (spider, spider-dk, bird, jsonl)."),
    data: Optional[Path] = typer.Option(None, help="The benchmark's folder or questions file."),
    split: Optional[str] = typer.Option(None, help="The benchmark's split (default: dev)."),
    to: Optional[str] = typer.Option(None, help="With --benchmark: the URL of each copy, with {db_id} (duckdb:///dir/{db_id}.duckdb, postgresql://user@host/{db_id})."),
    replace: bool = typer.Option(False, help="Drop tables of the same names first."),
    report: Optional[Path] = typer.Option(None, help="With --benchmark: write every gold query's check here (JSON)."),
) -> None:
    """Copy a SQLite database, or a benchmark's, into DuckDB or PostgreSQL, checking each gold query.

    With --benchmark, every database of its questions is copied, and each gold query,
    transpiled, is run on the copy and compared with SQLite's result."""
    from sqlscout.engines.copy import copy_database

    if benchmark is None:
        if source is None or dest is None:
            fail("give SRC.sqlite DEST_URL, or --benchmark NAME --data DIR --to URL_WITH_{db_id}")
        try:
            done = copy_database(source, dest, replace=replace)
        except SqlscoutError as exc:
            fail(str(exc))
        _print_copy(str(source), done)
        return
    if to is None or "{db_id}" not in to:
        fail("--benchmark needs --to, a URL with {db_id} in it (e.g. postgresql://user@localhost/{db_id})")
    _copy_benchmark(benchmark, data, split, to, replace, report)


def _print_copy(name: str, done: object) -> None:
    skipped = getattr(done, "skipped_foreign_keys")
    console.print(
        f"{name}: {getattr(done, 'tables')} tables, {getattr(done, 'rows'):,} rows, "
        f"{getattr(done, 'foreign_keys')} foreign keys" + (f" ({len(skipped)} left out: {', '.join(skipped)})" if skipped else ""),
        markup=False, soft_wrap=True,
    )  # fmt: skip


def _copy_benchmark(benchmark: str, data: Optional[Path], split: Optional[str], to: str, replace: bool, report: Optional[Path]) -> None:
    from sqlscout.data import load_tasks
    from sqlscout.engines import open_database
    from sqlscout.engines.copy import check_golds, copy_database, ensure_database
    from sqlscout.engines.url import DatabaseURL
    from sqlscout.env.sandbox import Database

    try:
        tasks = load_tasks(benchmark, data, split=split, missing_db="skip")
    except SqlscoutError as exc:
        fail(str(exc))
    by_db: dict[str, list] = {}
    for task in tasks:
        by_db.setdefault(str(task.db_id), []).append(task)
    checks = []
    for db_id, group in by_db.items():
        url = to.replace("{db_id}", db_id)
        try:
            ensure_database(DatabaseURL.parse(url))
            _print_copy(db_id, copy_database(group[0].db_path, url, replace=replace))
            with Database(group[0].db_path) as sqlite_db, open_database(url) as other:
                checks += check_golds(
                    ((t.question_id, db_id, t.gold_sql) for t in group if t.gold_sql), sqlite_db, other, other.engine
                )
        except SqlscoutError as exc:
            fail(f"{db_id}: {exc}")
    ok = sum(c.ok for c in checks)
    console.print(f"gold queries: {ok} of {len(checks)} return SQLite's result ({100 * ok / max(1, len(checks)):.1f} %)")
    for c in checks:
        if not c.ok:
            err_console.print(f"  {c.db_id} question {c.question_id}: {c.reason}", markup=False, soft_wrap=True)
    if report is not None:
        report.write_text(json.dumps([c.__dict__ for c in checks], indent=1))
        console.print(f"every check: {report}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("copy")(copy_command)
