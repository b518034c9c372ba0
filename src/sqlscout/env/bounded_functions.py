"""SQLite's built-in functions whose one call can outrun any deadline, made bounded.

SQLite checks a statement's deadline between VM instructions (the progress handler),
never inside one function call. For most functions the call's work is linear in its
arguments, which ``SQLITE_LIMIT_LENGTH`` bounds. A few are not:

* ``instr(h, n)`` and ``replace(s, p, r)`` compare at every position (``len(h) *
  len(n)`` bytes: over 2 minutes on two hex strings of a few MB);
* ``trim/ltrim/rtrim(s, chars)`` test every character against every one of ``chars``;
* ``printf/format('%.*c', n, 'x')`` loops ``n`` times whatever the length limit.

Here each is replaced, on sandbox connections only, by a Python function with the same
result that checks the deadline first and refuses arguments whose work would be
excessive. Text and blob arguments of the common shapes are computed in Python (linear
searches); anything else is delegated to the real built-in on a private in-memory
connection, so results are SQLite's own.

``LIKE`` and ``GLOB`` cost at most ``SQLITE_LIMIT_LIKE_PATTERN_LENGTH`` times the length
limit a call (at the defaults, 64-byte patterns and 1 MB values, about 0.18 s for the
worst pattern over the longest value), but a row may make many calls with no check
between them: 40 in one row ran 40 s past a 1 s deadline. Overriding them everywhere
would turn off the LIKE optimisation (an index on the column) and cost a Python call a
row, so a statement that can make at most one call a row keeps the built-ins, and one
that can make more (:func:`pattern_calls` counts the ``LIKE``/``GLOB`` words SQLite would
read, and those of the database's views) runs on a connection whose ``like``/``glob``
check the deadline before each call (``patterns=True``) and delegate to the built-ins.

>>> import sqlite3
>>> conn = sqlite3.connect(":memory:")
>>> guard = BoundedFunctions(conn, max_value_bytes=1_000_000)
>>> conn.execute("SELECT instr('héllo', 'llo'), replace('aaa', 'a', 'bb'), trim('xxhixx', 'x')").fetchone()
(3, 'bbbbbb', 'hi')
>>> guard.deadline = 0.0  # a deadline in the past: the next bounded call stops the statement
>>> conn.execute("SELECT instr('a', 'a')").fetchone()
Traceback (most recent call last):
...
sqlite3.OperationalError: user-defined function raised exception
>>> guard.failure
'interrupted'
"""

from __future__ import annotations

import re
import sqlite3
import time
from typing import Any, Callable

__all__ = ["BoundedFunctions", "WORK_PER_CALL", "pattern_calls", "several_pattern_calls"]

# Byte comparisons one call may do when its arguments are delegated to the built-in
# (~10 ms at memcmp speed); Python's own searches are linear and need no such cap.
WORK_PER_CALL = 50_000_000

# printf conversions: flags, width, precision, length modifier, conversion letter.
_PRINTF_SPEC = re.compile(r"%([-+ #!0,_]*)(\*|\d*)(?:\.(\*|\d*))?(l{0,2})(.)", re.S)


class _Refused(Exception):
    """Raised inside a bounded function; its message is kept in ``failure``."""


class BoundedFunctions:
    """Installs the bounded functions on ``conn`` and holds the running statement's deadline.

    ``deadline`` is a ``time.monotonic()`` value (``None``: no deadline). After SQLite
    reports "user-defined function raised exception", ``failure`` says why: the text
    ``'interrupted'`` when the deadline had passed, else a message fit for a model.
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        max_value_bytes: int,
        patterns: bool = False,
        max_pattern_bytes: int = 50_000,
    ) -> None:
        self.deadline: float | None = None
        self.failure: str | None = None
        self.max_value_bytes = max_value_bytes
        self._builtin = sqlite3.connect(":memory:", check_same_thread=False)
        self._builtin.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)
        self._builtin.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, max_pattern_bytes)
        functions: dict[tuple[str, int], Callable[..., Any]] = {
            ("instr", 2): self._instr,
            ("replace", 3): self._replace,
            ("trim", 2): self._trim("trim"),
            ("ltrim", 2): self._trim("ltrim"),
            ("rtrim", 2): self._trim("rtrim"),
            ("printf", -1): self._printf("printf"),
            ("format", -1): self._printf("format"),
        }
        if patterns:
            functions |= {("like", 2): self._pattern("like"), ("like", 3): self._pattern("like"),
                          ("glob", 2): self._pattern("glob")}  # fmt: skip
        for (name, n_args), function in functions.items():
            conn.create_function(name, n_args, self._guarded(function), deterministic=True)

    def close(self) -> None:
        self._builtin.close()

    def _guarded(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            if self.deadline is not None and time.monotonic() > self.deadline:
                self.failure = "interrupted"
                raise _Refused("interrupted")
            try:
                return function(*args)
            except _Refused as exc:
                self.failure = str(exc)
                raise

        return call

    def _delegate(self, name: str, args: tuple[Any, ...], work: int) -> Any:
        if work > WORK_PER_CALL:
            raise _Refused(
                f"{name}() on arguments this long ({work:,} byte comparisons) would outrun the "
                "time limit; use shorter values"
            )
        marks = ", ".join("?" * len(args))
        try:
            return self._builtin.execute(f"SELECT {name}({marks})", args).fetchone()[0]
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise _Refused(f"{name}(): {exc}") from None

    def _instr(self, haystack: Any, needle: Any) -> Any:
        if haystack is None or needle is None:
            return None
        kind = type(haystack)
        if kind is type(needle) and kind in (str, bytes):
            return haystack.find(needle) + 1  # positions in characters for text, bytes for blobs
        return self._delegate("instr", (haystack, needle), _size(haystack) * _size(needle))

    def _replace(self, text: Any, pattern: Any, replacement: Any) -> Any:
        if type(text) is str and type(pattern) is str and type(replacement) is str:
            if not pattern:
                return text
            count = text.count(pattern)
            if count and len(replacement) > len(pattern):
                grown = len(text.encode()) + count * (len(replacement.encode()) - len(pattern.encode()))
                if grown > self.max_value_bytes:
                    raise _Refused("replace(): string or blob too big")
            return text.replace(pattern, replacement)
        args = (text, pattern, replacement)
        return self._delegate("replace", args, _size(text) * max(1, _size(pattern)))

    def _trim(self, name: str) -> Callable[[Any, Any], Any]:
        strip = {"trim": str.strip, "ltrim": str.lstrip, "rtrim": str.rstrip}[name]

        def trim(text: Any, chars: Any) -> Any:
            if type(text) is str and type(chars) is str:
                if len(chars) <= 64:
                    return strip(text, chars)
                return _strip_set(text, frozenset(chars), left=name != "rtrim", right=name != "ltrim")
            return self._delegate(name, (text, chars), _size(text) * _size(chars))

        return trim

    def _pattern(self, name: str) -> Callable[..., Any]:
        statement = f"SELECT {name}(?, ?)"  # the built-in, on the private connection
        with_escape = f"SELECT {name}(?, ?, ?)"

        def match(*args: Any) -> Any:
            try:
                return self._builtin.execute(statement if len(args) == 2 else with_escape, args).fetchone()[0]
            except sqlite3.Error as exc:
                raise _Refused(str(exc)) from None  # SQLite's own words ("LIKE or GLOB pattern too complex")

        return match

    def _printf(self, name: str) -> Callable[..., Any]:
        def printf(*args: Any) -> Any:
            if args and isinstance(args[0], (str, bytes)):
                fmt = args[0] if isinstance(args[0], str) else args[0].decode("utf-8", "replace")  # a blob format too
                self._check_printf(name, fmt, args[1:])
            return self._delegate(name, args, 0)

        return printf

    def _check_printf(self, name: str, fmt: str, args: tuple[Any, ...]) -> None:
        """Refuse a format whose widths and ``%c`` repeat counts add up past the length
        limit: SQLite pads and repeats that many times even after the result is too big,
        without a deadline check. Counts are read as SQLite reads them (``'2147483647x'``
        is 2147483647), and summed over the whole format (63 conversions just under the
        limit are 63 times over it)."""
        position = 0
        total = 0
        for match in _PRINTF_SPEC.finditer(fmt.replace("%%", "")):
            _flags, width, precision, _size_mod, conversion = match.groups()
            if width == "*":
                total += _as_count(args[position]) if position < len(args) else 0
                position += 1
            elif width:
                total += int(width)
            if precision == "*":
                repeats = _as_count(args[position]) if position < len(args) else 0
                position += 1
            else:
                repeats = int(precision) if precision else 0
            if conversion == "c" or conversion in "dDiuxXo":  # %c repeats; integers zero-pad to the precision
                total += repeats
            if total > self.max_value_bytes:
                what = f"%c repeated {repeats:,} times" if conversion == "c" and repeats > self.max_value_bytes else (
                    f"widths and repeats adding up to {total:,} characters")  # fmt: skip
                raise _Refused(f"{name}(): {what} is too big")
            if conversion not in "%n":
                position += 1


# What SQLite's tokenizer reads as one token, for counting the words LIKE and GLOB: string
# literals, quoted names and comments are skipped whole; an unterminated one only makes the
# count larger, which is the safe side.
_TOKENS = re.compile(
    r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|`(?:[^`]|``)*`|\[[^\]]*\]|--[^\n]*|/\*.*?(?:\*/|$)|([A-Za-z_][A-Za-z_0-9$]*)""",
    re.S,
)


def pattern_calls(sql: str) -> int:
    """How many ``LIKE``/``GLOB`` operators and ``like()``/``glob()`` calls ``sql`` holds:
    the most calls one row of it can make with no deadline check between them.

    >>> pattern_calls("SELECT * FROM t WHERE name LIKE 'a%' OR name NOT GLOB '*like*' -- glob")
    2
    >>> pattern_calls("SELECT [like], `glob` FROM t WHERE like('%x', name)")
    1
    """
    return sum(1 for m in _TOKENS.finditer(sql) if m.group(1) and m.group(1).lower() in ("like", "glob"))


def several_pattern_calls(sql: str, in_views: int = 0) -> bool:
    """Whether one row of ``sql`` may call LIKE or GLOB more than once, ``in_views`` being
    the calls the views it may read hold: each call may take ~0.2 s with no deadline check
    between them.

    >>> several_pattern_calls("SELECT * FROM t WHERE a LIKE 'x%'"), several_pattern_calls("SELECT 1", 2)
    (False, True)
    """
    lowered = sql.lower()
    if lowered.count("like") + lowered.count("glob") + in_views <= 1:
        return False  # no word to count (the common case: about 1 us against 20 to tokenize)
    return pattern_calls(sql) + in_views > 1


def _size(value: Any) -> int:
    if isinstance(value, (str, bytes)):
        return len(value)
    return 0 if value is None else 32  # a number's text form


# The numeric prefix SQLite reads from text ('2147483647x' is 2147483647, ' 1e9 ' is 1e9).
_NUMERIC_PREFIX = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _as_count(value: Any) -> int:
    """A repeat count as SQLite would take it from ``value``: numbers as themselves, text
    and blobs by their leading number, anything else 0; capped, never an error."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        match = _NUMERIC_PREFIX.match(value)
        value = match.group(0) if match else 0
    try:
        return min(abs(int(float(value))), 1 << 62)
    except (TypeError, ValueError, OverflowError):
        return 1 << 62 if isinstance(value, (int, float)) else 0


def _strip_set(text: str, chars: frozenset[str], *, left: bool, right: bool) -> str:
    start, end = 0, len(text)
    if left:
        while start < end and text[start] in chars:
            start += 1
    if right:
        while end > start and text[end - 1] in chars:
            end -= 1
    return text[start:end]
