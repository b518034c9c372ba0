"""What every command shares: the consoles, the one-line error exit, user paths, and
the reader of plain command lines behind the lean paths of ``score`` and ``tool``.

Nothing heavy is imported here: ``console`` and ``err_console`` (rich consoles) are
made when first used, and text bound for a pipe or a file is written directly when
rich would write exactly the same bytes (:func:`plain`), so a command whose output
is read by a script never loads rich.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence, TextIO

__all__ = ["Flag", "console", "err_console", "fail", "os_error_line", "parse_plain", "plain", "run_plain", "user_path", "write_line"]

_consoles: dict[str, Any] = {}


def __getattr__(name: str) -> Any:
    # ``console`` (stdout) and ``err_console`` (stderr), made on first use: rich costs a
    # twentieth of a second to import, and most runs of score and tool never need it.
    if name in ("console", "err_console"):
        if name not in _consoles:
            from rich.console import Console

            _consoles[name] = Console(stderr=name == "err_console", highlight=False)
        return _consoles[name]
    raise AttributeError(f"module 'sqlscout.cli.common' has no attribute {name!r}")


# What rich might change in plain text: tabs (expanded), control characters (dropped),
# ":name:" (maybe an emoji code), backslashes (escaped markup's edge cases).
_RICH_CHANGES = re.compile(r"[\x00-\x09\x0b-\x1f\x7f\\]|:[^\s:]+:")
_RICH_ENV = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS", "JUPYTER_LINES")


def plain(stream: TextIO) -> bool:
    """Whether rich, printing to ``stream``, would treat it as a plain file: no
    terminal, and no environment variable that makes rich style its output anyway."""
    try:
        if stream.isatty():
            return False
    except (AttributeError, ValueError):  # a closed or unusual stream: let rich decide
        return False
    return not any(os.environ.get(name) for name in _RICH_ENV)


def write_line(text: str, *, stderr: bool = False, markup: str = "") -> None:
    """Print one soft-wrapped line as ``console.print(markup + escape(text), soft_wrap=True)``
    would (``err_console`` with ``stderr``): directly when that gives the same bytes, else
    through rich. ``markup`` is a styled prefix such as ``[bold red]error:[/] ``."""
    stream = sys.stderr if stderr else sys.stdout
    if plain(stream) and not _RICH_CHANGES.search(text):
        stream.write(_strip_markup(markup) + text + "\n")
        return
    from rich.markup import escape

    target = __getattr__("err_console" if stderr else "console")
    if markup:
        target.print(markup + escape(text), soft_wrap=True)
    else:
        target.print(text, markup=False, soft_wrap=True)


def _strip_markup(markup: str) -> str:
    return re.sub(r"\[[^\]]*\]", "", markup)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line error that says what to do, and exit."""
    # Escaped (in rich): a path or an SQL error may hold brackets, which rich would read as markup.
    write_line(message, stderr=True, markup="[bold red]error:[/] ")
    # SystemExit, not typer.Exit: the lean paths run without typer, and under click a
    # SystemExit ends the command with the same code and no message.
    raise SystemExit(code)


def user_path(path: Path, what: str = "file") -> Path:
    """``path`` with ``~`` expanded and resolved, or a one-line error for a path that
    cannot name a file (an unknown user's home, a symlink loop, a name too long)."""
    try:
        return path.expanduser().resolve()
    except RuntimeError as exc:  # Python < 3.13: no such user's home, or a symlink loop
        fail(f"{path}: {_reason(exc)}; check the {what}'s path")
    except OSError as exc:
        fail(f"{path}: {_reason(exc)}; check the {what}'s path")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno is not None:
        if exc.errno == errno.ELOOP:
            return "too many levels of symbolic links"
        return os.strerror(exc.errno).lower()
    text = str(exc)
    if "home directory" in text:
        return "cannot expand '~' (no such user)"
    if "Symlink loop" in text:
        return "too many levels of symbolic links"
    return text


def os_error_line(exc: BaseException) -> str:
    """One line for an OS error nothing more specific caught (the console script's
    last resort): what failed and on which file."""
    name = getattr(exc, "filename", None)
    return f"{name}: {_reason(exc)}" if name else _reason(exc)


# -- plain command lines ---------------------------------------------------------------


@dataclass(frozen=True)
class Flag:
    """One option of a lean path, as typer declares it.

    ``names`` are the option's spellings (``--benchmark``); ``off`` the spellings that
    set a boolean flag to False (``--no-cache``); ``convert`` turns the text of a value
    into the value typer would give, or raises ValueError where typer might not read it
    the same (the lean path then declines); None marks a boolean flag; ``repeat`` keeps
    every value, in order (a list), instead of the last.
    """

    dest: str
    names: tuple[str, ...]
    convert: Callable[[str], Any] | None
    default: Any
    off: tuple[str, ...] = ()
    repeat: bool = False


def parse_plain(argv: Sequence[str], arguments: Sequence[tuple[str, Callable[[str], Any]]], flags: Sequence[Flag]) -> dict[str, Any] | None:
    """The parameters of a plain command line, as typer would pass them, or None when
    the line holds anything typer might read differently or answer with a message of
    its own (``--help``, ``--``, an unknown option, a value starting with ``-``, a
    missing or extra argument, a value ``convert`` declines): typer reads it then."""
    by_name: dict[str, tuple[Flag, bool]] = {}
    for flag in flags:
        by_name.update({name: (flag, True) for name in flag.names})
        by_name.update({name: (flag, False) for name in flag.off})
    values: dict[str, Any] = {flag.dest: ([] if flag.repeat else flag.default) for flag in flags}
    positional: list[str] = []
    at = 0
    try:
        while at < len(argv):
            token = argv[at]
            at += 1
            if not token.startswith("-") or token == "-":
                if token == "-":
                    return None
                positional.append(token)
                continue
            name, eq, attached = token.partition("=")
            entry = by_name.get(name)
            if entry is None:
                return None
            flag, on = entry
            if flag.convert is None:
                if eq:
                    return None  # a flag given a value: click's error
                values[flag.dest] = on
                continue
            if not on:
                return None
            if eq:
                text = attached
            elif at < len(argv):
                text, at = argv[at], at + 1
            else:
                return None  # the value is missing: click's error
            if text.startswith("-"):
                return None
            value = flag.convert(text)
            if flag.repeat:
                values[flag.dest].append(value)
            else:
                values[flag.dest] = value
        if len(positional) != len(arguments):
            return None
        for (dest, convert), text in zip(arguments, positional):
            values[dest] = convert(text)
    except ValueError:
        return None
    return values


def run_plain(argv: Sequence[str], arguments: Sequence[tuple[str, Callable[[str], Any]]], flags: Sequence[Flag],
              command: Callable[..., None]) -> bool:
    """Run ``command`` with the parameters of a plain command line; False (nothing run)
    when :func:`parse_plain` leaves the line to typer."""
    params = parse_plain(argv, arguments, flags)
    if params is None:
        return False
    command(**params)
    return True


_INT = re.compile(r"[0-9]+\Z")
_FLOAT = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\Z")


def plain_int(text: str) -> int:
    """An integer written plainly (digits only); anything else is left to typer."""
    if not _INT.match(text):
        raise ValueError(text)
    return int(text)


def plain_float(text: str) -> float:
    """A number written plainly (``30``, ``2.5``); anything else is left to typer."""
    if not _FLOAT.match(text):
        raise ValueError(text)
    return float(text)


def plain_text(text: str) -> str:
    return text
