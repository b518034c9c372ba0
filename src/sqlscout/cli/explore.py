"""``sqlscout tool`` and ``sqlscout play``: see exactly what a model sees.

``tool`` has a lean path (:func:`fast`, see :mod:`sqlscout.cli.main`): a plain
command line runs it without typer or rich, loading only the sandbox and the tools.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from sqlscout.cli.common import Flag, fail, os_error_line, plain_text, run_plain, user_path
from sqlscout.errors import SqlscoutError

if TYPE_CHECKING:
    from sqlscout.env.sandbox import Database

# The options and arguments of ``tool`` for the lean path (tests/test_startup.py checks
# them against typer's).
TOOL_FLAGS = (
    Flag("arg", ("--arg", "-a"), plain_text, [], repeat=True),
    Flag("immutable", ("--immutable",), None, False),
)
IMMUTABLE_HELP = "The file does not change while read (read-only media, WAL-mode benchmark copies): open it with SQLite's immutable=1."
TOOL_ARGUMENTS = (("db", plain_text), ("name", plain_text))


def fast(argv: Sequence[str]) -> bool:
    """Run ``sqlscout tool ARGV`` without typer; False (nothing run) when typer must read it."""
    return run_plain(argv, TOOL_ARGUMENTS, TOOL_FLAGS, run_tool)


def open_or_fail(db: str | Path, immutable: bool = False) -> Database:
    """The database ``db`` names: a SQLite file's path, or an engine's URL."""
    from sqlscout.env.sandbox import SandboxConfig

    target: str | Path = str(db)
    if "://" not in str(db):
        target = user_path(Path(db), "database")
    try:
        from sqlscout.engines import open_database

        database = open_database(target, SandboxConfig(immutable=immutable))
    except SqlscoutError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{db}: cannot open ({os_error_line(exc)}); check the database's path")
    return database  # an engine logs what its connection check found unsafe


def run_tool(db: str, name: str, arg: list[str], immutable: bool = False) -> None:
    """``sqlscout tool``, whichever path read its line; exits 0 when the tool succeeded, else 1."""
    from sqlscout.env.tools import TOOLS, call_tool

    if name not in TOOLS:
        fail(f"unknown tool '{name}'; choose one of: {', '.join(TOOLS)}")
    args: dict[str, str] = {}
    for item in arg:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"--arg takes name=value, got '{item}' (e.g. --arg table_name=singer)")
        args[key.strip()] = value
    outcome = call_tool(open_or_fail(db, immutable), name, args)
    sys.stdout.write(outcome.text + "\n")
    raise SystemExit(0 if outcome.ok else 1)


def _read_turn(final: bool) -> str | None:
    """Read one model turn from stdin: lines until an empty line (None at end of input)."""
    from sqlscout.cli.common import console

    label = "final SQL" if final else "model turn"
    console.print(f"[bold cyan]{label}>[/] (finish with an empty line)")
    lines: list[str] = []
    while True:
        line = sys.stdin.readline()
        if line == "":
            return "\n".join(lines) if lines else None
        line = line.rstrip("\n")
        if not line.strip():
            if lines:
                return "\n".join(lines)
            continue
        lines.append(line)


def run_play(
    db: str,
    question: str,
    schema: Any,
    evidence: Optional[str],
    gold: Optional[str],
    max_rounds: int,
    immutable: bool = False,
    assist: Optional[str] = None,
) -> None:
    """``sqlscout play``: the runner drives the episode, with the person as its backend."""
    from rich.markup import escape

    from sqlscout.assist import load_profile
    from sqlscout.backends.person import PersonBackend
    from sqlscout.cli.common import console
    from sqlscout.env.config import EpisodeConfig
    from sqlscout.env.sandbox import SandboxConfig
    from sqlscout.env.task import Task
    from sqlscout.runner import Runner, RunnerConfig, Turn

    database = open_or_fail(db, immutable)
    try:
        config = RunnerConfig(
            episode=EpisodeConfig(max_rounds=max_rounds, schema=schema),
            assist=load_profile(assist or "none"),
            max_batch=1,
            tool_workers=1,
            sandbox=SandboxConfig(immutable=immutable),
        )
    except SqlscoutError as exc:
        fail(str(exc))
    task = Task("play", question, database.path, gold_sql=gold, evidence=evidence)
    shown: list[Any] = []

    def show_prompt(messages: list[Any]) -> None:
        if shown and shown[-1] is messages:
            return
        shown.append(messages)
        for message in messages:
            console.rule(f"[bold]{message['role']}")
            console.print(message["content"], markup=False, soft_wrap=True)

    def on_turn(turn: Turn) -> None:
        if turn.observation is not None:
            console.rule("[bold]observation")
            console.print(turn.observation, markup=False, soft_wrap=True)
        if not turn.episode.done:
            show_prompt(turn.episode.messages)  # a layer of help may have begun again

    def read(final: bool) -> Optional[str]:
        if not shown:
            show_prompt(first.messages)
        return _read_turn(final)

    backend = PersonBackend(read)
    with Runner(backend, config) as runner:
        runner.adopt(database)  # the task names it without credentials; the runner has it open
        try:
            first = runner.episode(task)  # the episode as it opens, to show its prompt first
            rollouts = list(runner.run([task], on_turn=on_turn))
        except SqlscoutError as exc:  # e.g. a schema the database cannot give (a broken view)
            fail(f"{db}: cannot build the prompt ({exc}); try --schema withheld")
    result = rollouts[0].result
    if result.error is not None:
        fail(result.error.rsplit(": ", 1)[-1] if "input ended" in result.error else result.error)
    console.rule("[bold]episode over")
    # soft_wrap: one line per figure, whatever the terminal's width (scripts read these).
    console.print(f"stop reason: {result.stop_reason.value}   answer from: {result.answer_source.value}", soft_wrap=True)
    console.print(f"final SQL: {result.final_sql or '(none)'}", markup=False, soft_wrap=True)
    console.print(
        f"rounds: {result.tool_rounds}   tool calls: {result.tool_calls}   tokens: {result.total_tokens}", soft_wrap=True
    )
    if gold:
        from sqlscout.scoring import REWARD_PRESETS, reward, score_sql

        scored = score_sql(database, result.final_sql, gold)
        v = scored.verdict
        console.print(
            f"outcome: [bold]{v.outcome.value}[/]   official: {v.official}   strict: {v.strict}   "
            f"spider: {v.spider}   reward: {reward(scored, REWARD_PRESETS['sqale-dense'], pred_sql=result.final_sql, gold_sql=gold):.3f}",
            soft_wrap=True,
        )
        if v.gold_error:
            # The error text may hold brackets, which rich would read as markup.
            console.print(f"[yellow]the gold SQL failed: {escape(v.gold_error)}[/]", soft_wrap=True)


def register(app: Any) -> None:
    import typer

    from sqlscout.env.prompts import SchemaMode
    from sqlscout.env.tools import TOOLS

    def tool(
        db: str = typer.Argument(..., help="SQLite file, or a database URL (postgresql://..., duckdb:///...)."),
        name: str = typer.Argument(..., help=f"Tool name: {', '.join(TOOLS)}."),
        arg: list[str] = typer.Option([], "--arg", "-a", help="Tool argument as name=value (repeatable)."),
        immutable: bool = typer.Option(False, "--immutable", help=IMMUTABLE_HELP),
    ) -> None:
        """Print a tool's observation exactly as a model sees it."""
        run_tool(db, name, arg, immutable)

    def play(
        db: str = typer.Argument(..., help="SQLite file, or a database URL (postgresql://..., duckdb:///...)."),
        question: str = typer.Argument(..., help="The question to answer."),
        schema: SchemaMode = typer.Option(SchemaMode.WITHHELD, help="withheld: tools only; full: CREATE TABLEs in the prompt."),
        evidence: Optional[str] = typer.Option(None, help="Evidence note shown with the question."),
        gold: Optional[str] = typer.Option(None, help="Gold SQL: score the answer at the end."),
        max_rounds: int = typer.Option(6, help="Tool rounds before the final turn."),
        immutable: bool = typer.Option(False, "--immutable", help=IMMUTABLE_HELP),
        assist: Optional[str] = typer.Option(None, "--assist", help="Play under a profile of help (default: none, the plain protocol)."),
    ) -> None:
        """Play the model: type its turns and see exactly what a model would see."""
        run_play(db, question, schema, evidence, gold, max_rounds, immutable, assist)

    # Annotations are strings here (PEP 563), which typer resolves in this module's
    # globals; SchemaMode is imported above, not there.
    play.__annotations__["schema"] = SchemaMode
    app.command()(tool)
    app.command()(play)
