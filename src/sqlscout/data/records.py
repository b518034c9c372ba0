"""Reading benchmark files so that every problem names the file, the record and the fault.

Loaders never skip a broken record silently: a missing file, a line that is not JSON,
a record without a required field or with a field of the wrong type raises
:class:`~sqlscout.errors.DataError` with a one-line message.

>>> import json, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "q.jsonl")
>>> with open(path, "w") as f:
...     _ = f.write('{"question": "How many?"}\\n{oops\\n')
>>> list(read_jsonl(path))
Traceback (most recent call last):
...
sqlscout.errors.DataError: ...q.jsonl line 2: not valid JSON (Expecting property name enclosed in double quotes); fix or remove the line.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Iterator

from sqlscout.errors import DataError

__all__ = ["Record", "decode_json", "read_json", "read_json_list", "read_jsonl", "require_file"]

MAX_ID_CHARS = 200


def decode_json(text: str | bytes, *, object_pairs_hook: Any = None) -> Any:
    """``json.loads`` whose every failure is a ValueError with a short reason.

    Besides bad syntax, Python's decoder fails on nesting deeper than the interpreter's
    recursion limit (RecursionError) and on integers of more than 4,300 digits; a line of
    100,000 ``[`` is a malformed file, not a crash.

    >>> decode_json("[" * 100_000)
    Traceback (most recent call last):
    ...
    ValueError: nested too deeply (over ... levels)
    """
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg} at line {exc.lineno}") from None
    except RecursionError:
        raise ValueError(f"nested too deeply (over {sys.getrecursionlimit()} levels)") from None
    except ValueError:  # int() refuses the digits: sys.get_int_max_str_digits()
        raise ValueError(f"a number longer than {sys.get_int_max_str_digits()} digits") from None


def require_file(path: str | os.PathLike[str], what: str) -> Path:
    """``path`` as a Path, or a DataError saying which file of which benchmark is missing."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataError(f"{path}: no such file ({what}); check the path.")
    return path


def read_json(path: str | os.PathLike[str], what: str, *, object_pairs_hook: Any = None) -> Any:
    path = require_file(path, what)
    try:
        with open(path, encoding="utf-8") as handle:
            return decode_json(handle.read(), object_pairs_hook=object_pairs_hook)
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text; is this the {what}?") from None
    except ValueError as exc:
        raise DataError(f"{path}: not valid JSON ({exc}); is this the {what}?") from None


def read_json_list(path: str | os.PathLike[str], what: str) -> list[Record]:
    """A JSON file holding a list of objects, as :class:`Record` s (``dev.json`` files)."""
    data = read_json(path, what)
    path = Path(path).expanduser()
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of questions, found {type(data).__name__}; is this the {what}?")
    return [Record.of(item, path, f"record {i}") for i, item in enumerate(data)]


def read_jsonl(path: str | os.PathLike[str], what: str = "JSONL questions file") -> Iterator[Record]:
    """One :class:`Record` per non-blank line; blank lines are allowed and ignored."""
    path = require_file(path, what)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"{path} line {number}: not UTF-8 text (byte {exc.start}); fix or remove the line.") from None
            if not line.strip():
                continue
            try:
                item = decode_json(line)
            except ValueError as exc:
                raise DataError(f"{path} line {number}: not valid JSON ({str(exc).split(' at line ')[0]}); fix or remove the line.") from None
            yield Record.of(item, path, f"line {number}")


class Record:
    """One JSON object of a benchmark file, with typed accessors whose errors say where.

    ``where`` is how a person finds the record (``record 12``, ``line 3``).
    """

    __slots__ = ("data", "path", "where")

    def __init__(self, data: dict[str, Any], path: Path, where: str) -> None:
        self.data = data
        self.path = path
        self.where = where

    @classmethod
    def of(cls, item: Any, path: Path, where: str) -> Record:
        if not isinstance(item, dict):
            raise DataError(f"{path} {where}: expected a JSON object, found {type(item).__name__}.")
        return cls(item, path, where)

    def error(self, message: str) -> DataError:
        return DataError(f"{self.path} {self.where}: {message}")

    def text(self, key: str, *, required: bool = True, allow_empty: bool = False) -> str | None:
        """A string field; a missing one is an error when ``required``."""
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.error(f"missing field '{key}'.")
            return None
        if not isinstance(value, str):
            raise self.error(f"field '{key}' must be a string, found {type(value).__name__}.")
        if not allow_empty and not value.strip():
            if required:
                raise self.error(f"field '{key}' is empty.")
            return None
        return value

    def ident(self, key: str, *, required: bool = True) -> str | None:
        """An id field: a string or an integer, returned as a string."""
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.error(f"missing field '{key}'.")
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise self.error(f"field '{key}' must be a string or an integer, found {type(value).__name__}.")
        if isinstance(value, str) and not value.strip():
            raise self.error(f"field '{key}' is empty.")
        text = str(value)
        if len(text) > MAX_ID_CHARS:
            raise self.error(f"field '{key}' is {len(text):,} characters long; ids are at most {MAX_ID_CHARS}.")
        return text

    def choice(self, key: str, allowed: tuple[str, ...], *, required: bool = True) -> str | None:
        value = self.text(key, required=required)
        if value is not None and value not in allowed:
            raise self.error(f"field '{key}' is '{value}'; expected one of {', '.join(allowed)}.")
        return value
