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
