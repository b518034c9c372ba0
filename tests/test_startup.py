"""Commands start fast (issue 13 item 12): ``import sqlscout`` resolves its names lazily,
and the CLI imports only the command it runs."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest
from conftest import CHINOOK, REPO

HEAVY = ("torch", "transformers", "sqlglot", "pydantic", "httpx", "numpy")


def _imported(*args: str) -> set[str]:
    """Modules a fresh ``python -m sqlscout.cli.main ARGS`` process imports."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sqlscout.cli.main", *args],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


def test_import_sqlscout_loads_nothing_until_a_name_is_used():
    code = (
        "import sys, sqlscout; before = {m for m in sys.modules if m.startswith('sqlscout.')}; "
        "sqlscout.Database; after = {m for m in sys.modules if m.startswith('sqlscout.')}; "
        "print(len(before), 'sqlscout.env.sandbox' in after)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO / "src")}).stdout.split()
    assert out == ["0", "True"]


def test_help_imports_no_command_and_nothing_heavy():
    loaded = _imported("--help")
    assert not {m for m in loaded if m.startswith("sqlscout.") and m not in ("sqlscout.cli", "sqlscout.cli.main")}
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}


def test_tool_imports_only_its_own_command():
    loaded = _imported("tool", str(CHINOOK), "list_tables")
    commands = {m for m in loaded if m.startswith("sqlscout.cli.")}
    assert commands <= {"sqlscout.cli.main", "sqlscout.cli.explore", "sqlscout.cli.common"}, commands
    assert not {m for m in loaded if m.split(".")[0] in ("torch", "transformers", "sqlglot", "httpx", "numpy")}
    assert "sqlscout.scoring" not in loaded


def test_the_help_table_is_each_commands_own_help():
    import typer

    from sqlscout.cli.main import COMMANDS, load_command

    for name, (module, summary) in COMMANDS.items():
        command = load_command(name)
        assert command.name == name
        assert (command.help or "").strip().splitlines()[0] == summary, name
    # Every command a module registers is in the table.
    for module in {m for m, _ in COMMANDS.values()}:
        app = typer.Typer()
        __import__(module, fromlist=["register"]).register(app)
        assert set(typer.main.get_group(app).commands) <= set(COMMANDS), module


def _cpu_of(args: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "sqlscout.cli.main", *args], capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(REPO / "src")}, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@pytest.mark.parametrize("args", [["--help"], ["tool", str(CHINOOK), "list_tables"]], ids=["help", "tool"])
def test_commands_without_a_model_start_in_under_0_3_s_of_cpu(args):
    # CPU time, not wall time: on a shared machine the wall clock measures the scheduler.
    assert min(_cpu_of(args) for _ in range(3)) < 0.3


# -- the lean paths of score and tool ----------------------------------------------------

LEAN_FORBIDDEN = ("typer", "click", "rich", "pydantic", "torch", "transformers", "httpx", "numpy")


@pytest.fixture(scope="module")
def small_score(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Five Spider dev predictions (one that does not run, one that is wrong) and a
    cache folder that has seen them once."""
    import json

    from conftest import SPIDER

    folder = tmp_path_factory.mktemp("lean")
    gold = [line.split("\t")[0] for line in (SPIDER / "dev_gold.sql").read_text().splitlines()[:5]]
    sqls = [gold[0], gold[1], "SELEC name FROM singer", "SELECT count(*) FROM singer WHERE 0", gold[4]]
    predictions = folder / "p.jsonl"
    predictions.write_text("".join(json.dumps({"question_id": str(i), "sql": s}) + "\n" for i, s in enumerate(sqls)))
    cache = folder / "cache"
    base = ["score", str(predictions), "--benchmark", "spider", "--data", str(SPIDER), "--only-predicted", "--missing-db", "skip"]
    subprocess.run([sys.executable, "-m", "sqlscout.cli.main", *base, "--cache-dir", str(cache)], check=True,
                   capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    return {"base": base, "cache": cache, "folder": folder}


def test_score_and_tool_load_no_cli_framework_and_a_warm_score_no_sqlglot(small_score):
    loaded = _imported(*small_score["base"], "--cache-dir", str(small_score["cache"]))
    assert not {m for m in loaded if m.split(".")[0] in (*LEAN_FORBIDDEN, "sqlglot")}, sorted(loaded)
    loaded = _imported("tool", str(CHINOOK), "describe_table", "--arg", "table_name=Album")
    assert not {m for m in loaded if m.split(".")[0] in (*LEAN_FORBIDDEN, "sqlglot")}
    # A line the lean path leaves to typer still works, through typer.
    assert "typer" in _imported("score", "--help")


@pytest.mark.parametrize("args", [["--help"], ["tool", str(CHINOOK), "list_tables"], ["score"]], ids=["help", "tool", "score"])
def test_commands_without_a_model_start_in_under_0_3_s_of_cpu_including_score(args, small_score):
    # score: the whole command on five predictions, gold results and files cached.
    if args == ["score"]:
        args = [*small_score["base"], "--cache-dir", str(small_score["cache"])]
    assert min(_cpu_of(args) for _ in range(3)) < 0.3


def _lean_and_typer(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[object, object]:
    """(exit code, stdout, stderr) of ``argv`` on the lean path (None when it declines
    the line) and through typer."""
    from typer.testing import CliRunner

    from sqlscout.cli.main import _run_fast, app

    capsys.readouterr()
    try:
        handled = _run_fast(argv)
        assert handled is False
        lean = None
    except SystemExit as exc:
        out, err = capsys.readouterr()
        lean = (exc.code, _timeless(out), _timeless(err))
    result = CliRunner().invoke(app, argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return lean, (result.exit_code, _timeless(result.stdout), _timeless(result.stderr))


def _timeless(text: str) -> str:
    import re

    return re.sub(r'\d+\.\d+ s on|"elapsed_s": [0-9.e-]+', "T", text)


def test_the_lean_path_reads_a_line_exactly_as_typer_does(small_score, tmp_path, capsys):
    base, cache = small_score["base"], str(small_score["cache"])
    taken = [
        [*base, "--cache-dir", cache],
        [*base, "--cache-dir", cache, "--json"],
        [*base[:2], "--json", "--cache-dir=" + cache, *base[2:], "--semantics", "strict", "--workers", "1"],
        [*base, "--no-cache", "--timeout", "5", "--timeout=2.5", "--semantics=test-suite", "--json"],
        [*base, "--cache-dir", cache, "--cache", "--no-cache-predictions", "--difficulty", "easy"],
        [*base, "--cache-dir", cache, "--verdicts", str(tmp_path / "v.jsonl"), "--timeout-rule", "pair"],
        [*base, "--cache-dir", cache, "--missing-db", "maybe"],  # the command's own one-line errors
        [*base, "--cache-dir", cache, "--timeout-rule", "both"],
        [*base, "--cache-dir", cache, "--difficulty", "impossible"],
        [*base, "--cache-dir", cache, "--workers", "0"],
        ["score", str(tmp_path / "nothing.json"), "--benchmark", "spider"],
        ["tool", str(CHINOOK), "list_tables"],
        ["tool", "-a", "table_name=Album", str(CHINOOK), "describe_table"],
        ["tool", str(CHINOOK), "describe_table", "--arg", "table_name=Nope"],  # the tool fails: exit 1
        ["tool", str(CHINOOK), "nope"],
        ["tool", str(CHINOOK), "describe_table", "--arg=bad"],
        ["tool", str(tmp_path / "missing.sqlite"), "list_tables"],
    ]
    declined = [
        ["score", "--help"],
        [*base, "--workers", "1.5"],
        [*base, "--workers", "-1"],
        [*base, "--semantics", "Strict"],
        [*base, "--timeout", "1e3"],
        [*base, "--bogus"],
        [*base, "--json=yes"],
        [*base, "--benchmark"],
        [*base, "extra"],
        [*base, "--", "x"],
        ["score"],
        ["tool", str(CHINOOK)],
        ["tool", str(CHINOOK), "describe_table", "-atable_name=Album"],
        ["tool", str(CHINOOK), "describe_table", "-a"],
    ]
    for argv in taken:
        lean, typer_ = _lean_and_typer(argv, capsys)
        assert lean is not None, argv
        assert lean == typer_, argv
    for argv in declined:
        lean, _ = _lean_and_typer(argv, capsys)
        assert lean is None, argv


def test_the_lean_options_are_typers():
    from sqlscout.cli import explore, score
    from sqlscout.cli.main import load_command

    for name, flags, arguments in (("score", score.FLAGS, score.ARGUMENTS), ("tool", explore.TOOL_FLAGS, explore.TOOL_ARGUMENTS)):
        params = load_command(name).params
        options = {p.name: p for p in params if p.param_type_name == "option"}
        assert [p.name for p in params if p.param_type_name == "argument"] == [a for a, _ in arguments]
        assert set(options) == {f.dest for f in flags}, name
        for flag in flags:
            option = options[flag.dest]
            assert set(option.opts) == set(flag.names) and set(option.secondary_opts) == set(flag.off), flag
            assert option.is_flag == (flag.convert is None) and option.multiple == flag.repeat, flag
            assert option.default == flag.default or (flag.repeat and not option.default), flag


def test_the_plain_table_is_richs(monkeypatch):
    import io

    from rich.console import Console
    from rich.table import Table

    from sqlscout.cli.score import _table_text

    shapes = [
        ["easy", "medium", "hard", "extra", "total"], ["simple", "moderate", "challenging", "total"], ["total"],
        ["a-very-long-difficulty-name", "another-long-one", "and-one-more", "total"], ["unknown", "total"],
    ]
    values = [["1034", "12", "7", "0", "100000"], ["5", "0", "1", "2", "3"], ["100.00", "0.00", "65.09", "9.10", "58.64"]]
    checked = 0
    for columns in ("80", "40", "200", "25"):
        monkeypatch.setenv("COLUMNS", columns)
        for names in shapes:
            for semantics in ("official", "test-suite"):
                title = f"Execution accuracy ({semantics})"
                rows = [["", *names], *[[label, *row[: len(names)]] for label, row in zip(("count", "correct", "accuracy"), values)]]
                table = Table(title=title, title_justify="left")
                table.add_column("")
                for name in names:
                    table.add_column(name, justify="right")
                for row in rows[1:]:
                    table.add_row(*row)
                out = io.StringIO()
                Console(file=out, highlight=False).print(table)
                mine = _table_text(title, rows)
                if mine is not None:
                    assert mine == out.getvalue(), (columns, names)
                    checked += 1
    assert checked >= 12


def test_plain_lines_are_richs(monkeypatch):
    import io

    from rich.console import Console
    from rich.markup import escape

    from sqlscout.cli import common

    texts = ["plain", "a [bold]bracket[/] and [x]", "C:\\path\\[y]", "tab\there", "emoji :smile: code", "time 12:30:45",
             "ünïcødé 中文", "ends with \\", "ctl\x07char", "x" * 300, "two\nlines"]
    for text in texts:
        for markup in ("", "[bold red]error:[/] ", "[yellow]warning:[/] "):
            expected = io.StringIO()
            console = Console(file=expected, highlight=False)
            if markup:
                console.print(markup + escape(text), soft_wrap=True)
            else:
                console.print(text, markup=False, soft_wrap=True)
            got = io.StringIO()
            monkeypatch.setattr(common.sys, "stdout", got)
            common.write_line(text, markup=markup)
            if common._RICH_CHANGES.search(text) is None:  # written directly: must be rich's bytes
                assert got.getvalue() == expected.getvalue(), (text, markup)
