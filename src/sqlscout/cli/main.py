"""Entry point: ``sqlscout <command>``. Each command lives in its own module."""

from __future__ import annotations

import typer

from sqlscout.cli import ask as ask_cli
from sqlscout.cli import eval as eval_cli
from sqlscout.cli import explore
from sqlscout.cli import mcp as mcp_cli
from sqlscout.cli import report as report_cli
from sqlscout.cli import score as score_cli
from sqlscout.cli import serve as serve_cli
from sqlscout.cli import train as train_cli

app = typer.Typer(
    name="sqlscout",
    help="Agentic text-to-SQL: explore, evaluate and train small models against real SQLite.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
explore.register(app)
eval_cli.register(app)
report_cli.register(app)
score_cli.register(app)
ask_cli.register(app)
train_cli.register(app)
serve_cli.register(app)
mcp_cli.register(app)


def main() -> None:  # pragma: no cover - console script shim
    app()


if __name__ == "__main__":  # `python -m sqlscout.cli.main`, e.g. under `accelerate launch -m`
    main()
