"""``sqlscout questions``: questions for gold SQL that has none, written by a model and
checked by execution (:mod:`sqlscout.data.synthesize`)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from sqlscout.cli.common import console, err_console, fail
from sqlscout.errors import SqlscoutError


def questions_command(
    gold: Path = typer.Argument(..., help="Gold SQL file, one 'SQL<TAB>db_id' per line (Spider's train_gold.sql)."),
    db_root: Path = typer.Option(..., help="Folder holding <db_id>/<db_id>.sqlite (or <db_id>.sqlite)."),
    out: Path = typer.Option(..., help="JSONL written as it goes: question_id, db_id, question, query, checked."),
    model: str = typer.Option("qwen2.5-coder-1.5b", help="Model that writes the questions and answers them back."),
    limit: Optional[int] = typer.Option(None, min=1, help="Draw this many gold queries (with --seed) instead of all."),
    seed: int = typer.Option(0, help="Seeds the draw."),
    batch: int = typer.Option(8, min=1, help="Questions written and answered together."),
    threads: Optional[int] = typer.Option(None, help="CPU threads for llama-cpp (default: the cores idle at start)."),
) -> None:
    """Write a question for each gold query with a model; keep those it answers back right."""
    from sqlscout.cli.settings import resolve_settings
    from sqlscout.data.databases import find_database
    from sqlscout.data.splits import SPIDER_DEV_DATABASES
    from sqlscout.data.synthesize import present_items, read_gold_sql, sample_items, synthesize
    from sqlscout.models import open_backend
    from sqlscout.runner import RunMode, Runner, RunnerConfig

    def where(db_id: str) -> Path:
        return find_database(db_id, [db_root], flat=True)

    try:
        items, missing = present_items(sample_items(read_gold_sql(gold), limit, seed, exclude_db_ids=SPIDER_DEV_DATABASES), where)
        if missing and not items:
            fail(f"no database of these gold queries is under {db_root} ({', '.join(sorted(missing))}); pass --db-root the folder holding <db_id>/<db_id>.sqlite")
        if missing:
            listing = ", ".join(f"{db} ({n})" for db, n in sorted(missing.items()))
            err_console.print(f"skipped {sum(missing.values())} gold queries whose databases are not under {db_root}: {listing}", highlight=False)
        settings = resolve_settings(model)
        backend = open_backend(model, None, episodes=batch, token_budget=settings.episode.token_budget, threads=threads)
    except SqlscoutError as exc:
        fail(str(exc))
    config = RunnerConfig(
        episode=settings.episode, assist=settings.assist, sampling=settings.sampling.with_(temperature=0.0),
        mode=RunMode.SINGLE_SHOT, max_batch=batch, tool_workers=2,
    )  # fmt: skip
    kept = seen = 0
    with backend, Runner(backend, config) as runner:
        try:
            for record in synthesize(items, where, runner, out, batch=batch):
                seen += 1
                kept += record["checked"]
                if seen % 10 == 0:
                    err_console.print(f"{seen} written, {kept} checked", highlight=False)
        except SqlscoutError as exc:
            fail(str(exc))
    console.print(f"{out}: {kept} of {seen} new questions checked by execution (the rest kept with checked=false)", markup=False)


def register(app: typer.Typer) -> None:
    app.command("questions")(questions_command)
