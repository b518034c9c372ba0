"""Entry point: ``sqlscout <command>``. Each command lives in its own module.

Start-up is kept short: a command's module (and whatever it imports) is loaded only
when that command runs, and ``sqlscout --help`` lists the commands from the table
below without importing any of them (tests/test_startup.py checks that each line
here is the first line of its command's own help). A new command is one line in
:data:`COMMANDS` and a ``register(app)`` function in its module.
"""

from __future__ import annotations

import importlib
from typing import Any

import typer
from typer.core import TyperGroup

# name -> (module whose register(app) defines it, one-line help shown by --help)
COMMANDS: dict[str, tuple[str, str]] = {
    "tool": ("sqlscout.cli.explore", "Print a tool's observation exactly as a model sees it."),
    "play": ("sqlscout.cli.explore", "Play the model: type its turns and see exactly what a model would see."),
    "eval": ("sqlscout.cli.eval", "Run a model on a benchmark; every episode streams to OUT/episodes.jsonl as it ends."),
    "report": ("sqlscout.cli.report", "Summarise runs as report.md and one self-contained report.html (plots, trajectories)."),
    "score": ("sqlscout.cli.score", "Score predictions by executing them and the gold queries; prints accuracy by difficulty."),
    "ask": ("sqlscout.cli.ask", "Answer one question about a SQLite database and watch the agent work, round by round."),
    "demo": ("sqlscout.cli.ask", "Run the embedded default: a small offline model on Chinook questions with known answers."),
    "train": ("sqlscout.cli.train", "Train a policy with GRPO on multi-turn text-to-SQL episodes (SPEC §8)."),
    "serve": ("sqlscout.cli.serve", "Serve the eight tools (and, with --model, the agent) as an HTTP JSON API; docs at /docs."),
    "mcp": ("sqlscout.cli.mcp", "Serve the eight tools (and, with --model, ask) to an MCP host; stdio unless --http."),
}

_SETTINGS: dict[str, Any] = {"add_completion": False, "pretty_exceptions_enable": False}


def load_command(name: str) -> Any:
    """The click command ``name``, from its module (imported now)."""
    module, _ = COMMANDS[name]
    commands = typer.Typer(**_SETTINGS)
    importlib.import_module(module).register(commands)
    return typer.main.get_group(commands).commands[name]


class _LazyCommand(typer.core.TyperCommand):
    """A command known by its name and help until it is run (or asked for its help)."""

    def __init__(self, name: str, help: str) -> None:
        super().__init__(name, help=help, short_help=help)

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        # The group invokes the context's command: the real one, loaded here.
        return load_command(self.name).make_context(info_name, args, parent=parent, **extra)  # type: ignore[arg-type]


class _LazyGroup(TyperGroup):
    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, name: str) -> Any:
        entry = COMMANDS.get(name)
        return _LazyCommand(name, entry[1]) if entry else None


class _App(typer.Typer):
    """The application; run as a program (the console script, ``python -m``), an OS error
    no command caught (a file that cannot be read or written) is one line, not a
    traceback."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except OSError as exc:
            import sys

            from sqlscout.cli.common import os_error_line

            sys.stderr.write(f"error: {os_error_line(exc)}\n")
            raise SystemExit(2) from None


app = _App(
    name="sqlscout",
    help="Agentic text-to-SQL: explore, evaluate and train small models against real SQLite.",
    no_args_is_help=True,
    cls=_LazyGroup,
    **_SETTINGS,
)


@app.callback()
def _root() -> None:
    """Agentic text-to-SQL: explore, evaluate and train small models against real SQLite."""


def main() -> None:  # pragma: no cover - console script shim
    app()


if __name__ == "__main__":  # `python -m sqlscout.cli.main`, e.g. under `accelerate launch -m`
    main()
