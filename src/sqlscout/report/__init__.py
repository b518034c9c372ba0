"""``sqlscout report``: a Markdown summary and one self-contained HTML page for
evaluation runs (side by side) and training runs.

>>> import tempfile
>>> from pathlib import Path
>>> write_report([], Path(tempfile.mkdtemp()))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sqlscout.errors.ConfigError: report needs at least one run directory
"""

from __future__ import annotations

from pathlib import Path

from sqlscout.errors import ConfigError
from sqlscout.report.html import html_report
from sqlscout.report.markdown import markdown_report
from sqlscout.report.runs import EvalRun, TrainRun, load_paths

__all__ = ["EvalRun", "TrainRun", "load_paths", "write_report"]

MARKDOWN_FILE = "report.md"
HTML_FILE = "report.html"


def write_report(paths: list[Path], out: Path, *, max_questions: int | None = None) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.html`` for ``paths`` into ``out``; their paths."""
    if not paths:
        raise ConfigError("report needs at least one run directory")
    evals, trains = load_paths([Path(p) for p in paths])
    out.mkdir(parents=True, exist_ok=True)
    md_path, html_path = out / MARKDOWN_FILE, out / HTML_FILE
    md_path.write_text(markdown_report(evals, trains, html_name=HTML_FILE), encoding="utf-8")
    html_path.write_text(html_report(evals, trains, max_questions=max_questions), encoding="utf-8")
    return md_path, html_path
