"""``sqlscout report``: Markdown and self-contained HTML for eval and training runs."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from sqlscout.cli.common import console, fail
from sqlscout.errors import SqlscoutError


def report_command(
    runs: List[Path] = typer.Argument(..., help="Run directories (sqlscout eval --out) or training directories."),
    out: Optional[Path] = typer.Option(None, help="Where report.md and report.html go (default: the run directory; required for several)."),
    max_questions: Optional[int] = typer.Option(None, help="Keep only the first N questions in the trajectory viewer."),
) -> None:
    """Summarise runs as report.md and one self-contained report.html (plots, trajectories)."""
    from sqlscout.report import write_report

    if out is None:
        if len(runs) > 1:
            fail("several runs: pass --out DIR for the combined report")
        out = runs[0]
    if max_questions is not None and max_questions < 1:
        fail(f"--max-questions must be >= 1, got {max_questions}")
    try:
        md_path, html_path = write_report(list(runs), out, max_questions=max_questions)
    except SqlscoutError as exc:
        fail(str(exc))
    console.print(f"wrote {md_path}\nwrote {html_path}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)
