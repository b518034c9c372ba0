"""Entry point: ``sqlscout <command>``. Each command lives in its own module.

Start-up is kept short: a command's module (and whatever it imports) is loaded only
when that command runs, and ``sqlscout --help`` lists the commands from the table
below without importing any of them (tests/test_startup.py checks that each line
here is the first line of its command's own help). A new command is one line in
:data:`COMMANDS` and a ``register(app)`` function in its module.

Commands that need no model and are run in scripts (``score``, ``tool``) also have a
lean path: their module's ``fast(argv)`` reads a plain command line itself and runs
the command without typer, click, pydantic or rich (about a quarter of a second of
CPU at every start). Anything it does not read exactly as typer would (``--help``,
an unknown or malformed option, a value starting with ``-``...) it leaves to the
typer application, so every flag, message and exit code stays the same
(tests/test_startup.py compares both paths). typer is imported only then: ``app`` is
a stand-in that builds the typer application when first used.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

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
    "copy": ("sqlscout.cli.copy", "Copy a SQLite database, or a benchmark's, into DuckDB or PostgreSQL, checking each gold query."),
    "questions": ("sqlscout.cli.questions", "Write a question for each gold query with a model; keep those it answers back right."),
    "rules": ("sqlscout.cli.rules", "List the rules of help and the profiles that name them, with their parameters."),
}
# Commands whose module has a lean path, ``fast(argv) -> bool`` (False: not handled).
FAST = ("score", "tool")

# Plain click help: typer's rich help imports rich.markdown and markdown_it (~0.2 s of CPU
# with typer 0.29 / rich 15), past the 0.3 s start-up bound of tests/test_startup.py.
_SETTINGS: dict[str, Any] = {"add_completion": False, "pretty_exceptions_enable": False, "rich_markup_mode": None}
_HELP = "Agentic text-to-SQL: explore, evaluate and train small models against real SQLite."


def load_command(name: str) -> Any:
    """The click command ``name``, from its module (imported now)."""
    import typer

    module, _ = COMMANDS[name]
    commands = typer.Typer(**_SETTINGS)
    importlib.import_module(module).register(commands)
    return typer.main.get_group(commands).commands[name]


_typer_app: Any = None


def typer_app() -> Any:
    """The typer application (built, and typer imported, on first use)."""
    global _typer_app
    if _typer_app is None:
        _typer_app = _build()
    return _typer_app


def _build() -> Any:
    import typer
    from typer.core import TyperGroup

    class LazyCommand(typer.core.TyperCommand):
        """A command known by its name and help until it is run (or asked for its help)."""

        def __init__(self, name: str, help: str) -> None:
            super().__init__(name, help=help, short_help=help)

        def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
            # The group invokes the context's command: the real one, loaded here.
            return load_command(self.name).make_context(info_name, args, parent=parent, **extra)  # type: ignore[arg-type]

    class LazyGroup(TyperGroup):
        def list_commands(self, ctx: Any) -> list[str]:
            return list(COMMANDS)

        def get_command(self, ctx: Any, name: str) -> Any:
            entry = COMMANDS.get(name)
            return LazyCommand(name, entry[1]) if entry else None

    class App(typer.Typer):
        """Run as a program, an OS error no command caught (a file that cannot be read
        or written) is one line, not a traceback."""

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return super().__call__(*args, **kwargs)
            except OSError as exc:
                _os_error_exit(exc)

    app = App(name="sqlscout", help=_HELP, no_args_is_help=True, cls=LazyGroup, **_SETTINGS)

    @app.callback()
    def _root() -> None:
        """Agentic text-to-SQL: explore, evaluate and train small models against real SQLite."""

    return app


def _os_error_exit(exc: OSError) -> None:
    from sqlscout.cli.common import os_error_line

    sys.stderr.write(f"error: {os_error_line(exc)}\n")
    raise SystemExit(2) from None


class _Entry:
    """``app``: what the console script calls. Called with no arguments (as the console
    script and ``python -m`` do) it tries the command's lean path first; anything else
    (``CliRunner().invoke(app, ...)``, attributes) is the typer application's."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs and _run_fast(sys.argv[1:]):
            return None
        return typer_app()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(typer_app(), name)


def _run_fast(argv: list[str]) -> bool:
    """Run ``argv`` on its command's lean path; False when that path does not take it
    (nothing has run then, and typer reads ``argv`` instead)."""
    if not argv or argv[0] not in FAST:
        return False
    fast = importlib.import_module(COMMANDS[argv[0]][0]).fast
    try:
        handled = fast(argv[1:])
    except KeyboardInterrupt:
        raise SystemExit(130) from None  # as typer exits on ^C
    except OSError as exc:
        import errno

        if exc.errno == errno.EPIPE:  # the reader went away (| head): as click, quietly
            import os

            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - nothing more reaches the pipe
            raise SystemExit(1) from None
        _os_error_exit(exc)
    if handled:
        raise SystemExit(0)
    return False


app = _Entry()


def main() -> None:  # pragma: no cover - console script shim
    app()


if __name__ == "__main__":  # `python -m sqlscout.cli.main`, e.g. under `accelerate launch -m`
    main()
