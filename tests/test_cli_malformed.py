"""A generated corpus of malformed commands (issue 40, item 3): every command, every option
given a value of the wrong shape for its type, each on a base command line that would
otherwise fail fast (a missing model, a missing benchmark, a server that may not bind).
None may end in a traceback: each is a clean exit with at most a one-line error.

The corpus is built from the commands' own declarations (click's parameter types), so a
new option is in it the day it is added.
"""

from __future__ import annotations

import enum
import json
import typing
from pathlib import Path
from typing import Any, Iterator

from typer.testing import CliRunner

from conftest import CHINOOK
from sqlscout.cli.main import COMMANDS, load_command, typer_app

# Values of the wrong shape, by the option's type.
BAD = {
    "int": ["-1", "0", "99999999999999999999999999", "abc", "1e3", "", "9" * 5000],
    "float": ["nan", "inf", "-inf", "-1", "0", "x", "1e999", ""],
    "path": ["/nonexistent/x", "/proc/self/status", "/", "~nouser_sqlscout/x", "", "{missing}", "{empty}", "{folder}"],
    "choice": ["bogus", ""],
    "text": ["", "x" * 5000, "{", "🙂", "=", "a=b=c", "../../etc/passwd"],
}


def _kind(param: Any) -> str | None:
    """The shape of an option's values, from the annotation typer read it with."""
    annotation = param.type_descriptor.annotation
    for inner in typing.get_args(annotation) or (annotation,):  # Optional[X], List[X]
        if inner is type(None):
            continue
        if isinstance(inner, type) and issubclass(inner, enum.Enum):
            return "choice"
        if inner is bool:
            return None
        return {int: "int", float: "float", Path: "path", str: "text"}.get(inner)
    return None


def _bases(tmp: Path) -> dict[str, list[str]]:
    """A command line per command that fails fast once its options are read."""
    predictions = tmp / "predictions.jsonl"
    predictions.write_text(json.dumps({"question_id": "0", "sql": "SELECT 1"}) + "\n")
    gone = str(tmp / "missing.gguf")
    return {
        "tool": [str(CHINOOK), "list_tables"],
        "play": [str(CHINOOK), "How many genres?"],
        "eval": ["--benchmark", "spider", "--data", str(tmp / "no-spider"), "--out", str(tmp / "run"), "--model", gone],
        "report": [str(tmp / "no-run")],
        "score": [str(predictions), "--benchmark", "spider", "--data", str(tmp / "no-spider")],
        "ask": [str(CHINOOK), "How many genres?", "--model", gone],
        "demo": ["--model", gone],
        "train": ["--config", str(tmp / "missing.yaml"), "--out", str(tmp / "train")],
        # refused without a token; with one (a --token value) the database is missing
        "serve": [str(tmp / "missing.sqlite"), "--host", "0.0.0.0", "--port", "0"],
        "mcp": [str(tmp / "missing.sqlite"), "--http", "--host", "0.0.0.0", "--port", "0"],
        "copy": [str(CHINOOK), "nosuchengine://x/y"],
        "questions": [str(tmp / "no-gold.sql"), "--db-root", str(tmp / "no-dbs"), "--out", str(tmp / "q.jsonl"), "--model", gone],
        "rules": [],
    }


def _corpus(tmp: Path) -> Iterator[tuple[str, list[str]]]:
    (tmp / "empty").write_text("")
    (tmp / "folder").mkdir()
    fill = {"{missing}": str(tmp / "nothing-here"), "{empty}": str(tmp / "empty"), "{folder}": str(tmp / "folder")}
    for name, base in _bases(tmp).items():
        command = load_command(name)  # the real command (the group lists lazy stand-ins)
        arguments = [p for p in command.params if p.param_type_name == "argument"]
        for param in command.params:
            if param.param_type_name != "option" or param.is_flag or param.name == "help":
                continue
            kind = _kind(param)
            if kind is None:
                continue
            flag = max(param.opts, key=len)
            for value in BAD[kind]:
                yield name, [name, *base, flag, fill.get(value, value)]
        for position, _argument in enumerate(arguments):
            for value in ("", "/proc/self/status", fill["{empty}"], fill["{folder}"], "x" * 5000):
                args = list(base)
                if position < len(args) and not args[position].startswith("--"):
                    args[position] = value
                    yield name, [name, *args]


def test_no_malformed_command_ends_in_a_traceback(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("SQLSCOUT_TOKEN", raising=False)
    monkeypatch.setenv("SQLSCOUT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a name that looks like a hub id fails at once
    runner = CliRunner()
    corpus = list(_corpus(tmp_path))
    assert len(corpus) >= 500, len(corpus)
    assert set(_bases(tmp_path)) == set(COMMANDS)  # every command has a base line
    assert {name for name, _ in corpus} >= set(COMMANDS) - {"rules"}
    broken = []
    for name, argv in corpus:
        result = runner.invoke(typer_app(), argv, input="")
        # An OSError reaching the top is one line from the console script (its App wrapper,
        # which CliRunner bypasses; tests/test_cli_errors.py checks that line).
        crashed = result.exception is not None and not isinstance(result.exception, (SystemExit, OSError))
        if crashed or "Traceback" in result.output:
            shown = [a if len(a) < 40 else a[:20] + "..." for a in argv]
            broken.append(f"{' '.join(shown)}: {type(result.exception).__name__}: {str(result.exception)[:120]}")
    assert not broken, f"{len(broken)} of {len(corpus)}:\n" + "\n".join(broken[:60])
