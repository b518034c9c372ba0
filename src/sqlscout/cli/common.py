"""What every command shares: the consoles, the one-line error exit, and user paths."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line error that says what to do, and exit."""
    from rich.markup import escape

    # Escaped: a path or an SQL error may hold brackets, which rich would read as markup.
    err_console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code)


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
