"""sqlglot's SQLite parser: built once per thread, or asked in a helper process.

``sqlglot.parse(sql, read="sqlite")`` builds a dialect, a tokenizer and a parser on
every call, which costs about as much as parsing a short query. Scoring parses many
(the *parsable* tier of predictions that do not run, the top-level ORDER BY of gold
queries), so each thread keeps one tokenizer and one parser; both reset themselves at
every call, so the trees are the ones ``sqlglot.parse`` gives.

Importing sqlglot takes a sixth of a second of CPU, more than scoring Spider dev's
predictions. A scorer that has not imported it yet can ask a :class:`ParseHelper`
instead: a process of its own that imports sqlglot and answers while the scorer goes
on running queries, on another core. It runs this very file (:func:`statement_parses`,
:func:`order_by_parsed`), so its answers are the ones this process would give.

This module imports only the standard library (sqlglot when a question is asked), so
that the helper starts in a few milliseconds.

>>> [type(tree).__name__ for tree in parse_sqlite("SELECT 1; SELECT 2")]
['Select', 'Select']
"""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
from typing import Any

__all__ = [
    "ORDER_BY",
    "ParseHelper",
    "close_helper",
    "order_by_parsed",
    "parse_sqlite",
    "parser_version",
    "shared_helper",
    "sqlglot_loaded",
    "start_helper",
    "statement_parses",
]

_local = threading.local()


def parse_sqlite(sql: str) -> list[Any]:
    """What ``sqlglot.parse(sql, read="sqlite")`` returns (or raises), with this
    thread's tokenizer and parser."""
    pair = getattr(_local, "pair", None)
    if pair is None:
        from sqlglot.dialects.dialect import Dialect

        dialect = Dialect.get_or_raise("sqlite")
        pair = _local.pair = (dialect.tokenizer(), dialect.parser())
    tokenizer, parser = pair
    return parser.parse(tokenizer.tokenize(sql), sql)


def sqlglot_loaded() -> bool:
    """Whether sqlglot's parser is imported in this process already (asking it here
    then costs only the parse)."""
    return "sqlglot.dialects.dialect" in sys.modules


# sqlglot's classes, looked up once (an import statement costs a microsecond a call).
_PARSE_ERRORS: tuple[type[BaseException], ...] = ()
_BARE: tuple[type, ...] = ()  # expressions that are no statement


def statement_parses(sql: str) -> bool:
    """Whether sqlglot parses ``sql`` (which holds a statement) as SQLite into something
    other than a bare expression: the parsable tier (:func:`sqlscout.scoring.parses`)."""
    global _PARSE_ERRORS, _BARE
    if not _BARE:
        from sqlglot import exp
        from sqlglot.errors import SqlglotError

        _PARSE_ERRORS = (SqlglotError, ValueError, RecursionError)
        _BARE = (exp.Condition, exp.Alias, exp.Identifier, exp.Star)
    try:
        trees = parse_sqlite(sql)
    except _PARSE_ERRORS:
        return False
    return any(t is not None and not isinstance(t, _BARE) for t in trees)


ORDER_BY = re.compile(r"\border\s+by\b", re.I)  # the words, wherever they stand


def order_by_parsed(sql: str) -> bool:
    """Whether sqlglot finds a top-level ORDER BY in ``sql``, or the text outside
    parentheses has one where sqlglot gives no tree
    (:func:`sqlscout.scoring.has_top_level_order_by` for nested queries)."""
    from sqlglot import exp

    # sqlglot.parse_one(sql, read="sqlite"), which raises on no tree and wraps several
    # statements in a Block (which has no ORDER BY).
    try:
        trees = parse_sqlite(sql)
    except Exception:  # noqa: BLE001 - sqlglot raises many types; fall back to text
        return order_by_outside_parens(sql)
    if not trees or trees[0] is None:
        return order_by_outside_parens(sql)
    return len(trees) == 1 and isinstance(trees[0].args.get("order"), exp.Order)


def order_by_outside_parens(sql: str) -> bool:
    depth = 0
    flat = []
    for ch in sql:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            flat.append(ch)
    return bool(ORDER_BY.search("".join(flat)))


@functools.lru_cache(maxsize=1)
def parser_version() -> str | None:
    """The installed sqlglot's version, read from its files without importing it (that
    takes a sixth of a second), or None when it cannot be told. Answers worked out by
    sqlglot are cached under it (:mod:`sqlscout.scoring.result_cache`).

    >>> import sqlglot; parser_version() == sqlglot.__version__
    True
    """
    import importlib.util
    from pathlib import Path

    try:
        spec = importlib.util.find_spec("sqlglot")
        if spec is None or not spec.origin:
            return None
        text = Path(spec.origin).with_name("_version.py").read_text(encoding="utf-8")
    except (OSError, ImportError, ValueError):
        return None
    found = re.search(r"""^__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", text, re.M)
    return found.group(1) if found else None


# -- the helper process ----------------------------------------------------------------


def _serve(questions: Any, answers: Any) -> None:
    """The helper's loop: one line per question (its kind, then the SQL as JSON), one
    line per answer (``1``, ``0``, or ``?`` where answering raised), in order."""
    import json

    ask = {"p": statement_parses, "o": order_by_parsed}
    for line in questions:
        try:
            answer = "1" if ask[line[0]](json.loads(line[1:])) else "0"
        except Exception:  # noqa: BLE001 - the asker answers this one itself
            answer = "?"
        answers.write(answer + "\n")
        answers.flush()


# A helper started as a new interpreter runs this file, loaded by its path (not
# through sqlscout's packages, whose imports it does not need).
_SPAWNED = r"""
import importlib.util, json, os, sys
sys.path[:] = json.loads(sys.argv[2])
sys.setrecursionlimit(int(sys.argv[3]))
spec = importlib.util.spec_from_file_location("_sqlscout_parsing", sys.argv[1])
parsing = importlib.util.module_from_spec(spec)
spec.loader.exec_module(parsing)
parsing._serve(sys.stdin, sys.stdout)
os._exit(0)  # at the end of the questions; unloading sqlglot's modules takes longer
"""

_SEND_EVERY = 16  # questions written to the helper's pipe together
# Questions asked and not yet read back, at most: answers are 2 bytes, so the helper
# never fills the pipe back (64 KiB) while this process is not reading it.
_MAX_UNREAD = 8_192
_TEXT = {"encoding": "utf-8", "errors": "surrogateescape"}


class ParseHelper:
    """sqlglot's answers from a process of its own, started by the first question.

    :meth:`ask` sends a question (``"p"``: :func:`statement_parses`, ``"o"``:
    :func:`order_by_parsed`) and returns at once; :meth:`answer` waits for it. Where the
    process cannot start or dies, the questions it has not answered are answered in
    this process, so the answers are always there and always the same.

    The process is this one, forked, where that is safe (no other thread runs but the
    sandbox's watchdog, which holds no lock the helper takes): it then shares the
    modules loaded here and imports only sqlglot's own, a quarter less work than a new
    interpreter. Otherwise it is a new interpreter.
    """

    def __init__(self) -> None:
        self._to: Any = None  # questions, to the process
        self._from: Any = None  # answers, from it
        self._child: Any = None  # its pid (forked) or its Popen (a new interpreter)
        self._pid = os.getpid()
        self._failed = False
        self._questions: list[tuple[str, str]] = []  # every question asked, in order
        self._answers: list[bool] = []  # answers read back, in the same order

    def ask(self, kind: str, sql: str) -> int:
        """Send a question; returns its ticket for :meth:`answer`."""
        import json

        ticket = len(self._questions)
        self._questions.append((kind, sql))
        if self._started():
            if ticket - len(self._answers) >= _MAX_UNREAD:
                self._send()
                while ticket - len(self._answers) >= _MAX_UNREAD and self._read_one():
                    pass
            try:
                self._to.write(kind + json.dumps(sql) + "\n")
                if ticket % _SEND_EVERY == 0:  # the first at once, then in groups: fewer writes
                    self._to.flush()
            except (OSError, ValueError):
                self._fail()
        return ticket

    def start(self) -> None:
        """Start the process now (it imports sqlglot while this one works)."""
        self._started()

    def answer(self, ticket: int) -> bool:
        """The answer to the question of ``ticket`` (waiting for it if need be)."""
        if len(self._answers) <= ticket:
            self._send()
        while len(self._answers) <= ticket:
            if not self._read_one():
                kind, sql = self._questions[len(self._answers)]
                self._answers.append(_ANSWER_HERE[kind](sql))
        return self._answers[ticket]

    def close(self) -> None:
        """Let the process end (it reads no more questions) and wait for it."""
        if self._child is not None and self._pid == os.getpid():
            self._end(kill=False)

    def _started(self) -> bool:
        """Whether the process runs (started now if it was not)."""
        if self._failed or self._pid != os.getpid():  # a forked child asks sqlglot itself
            return False
        if self._child is None:
            try:
                self._fork() if _may_fork() else self._spawn()
            except (OSError, ValueError):
                self._failed = True
                return False
        return True

    def _fork(self) -> None:
        questions_in, questions_out = os.pipe()
        answers_in, answers_out = os.pipe()
        pid = os.fork()
        if pid == 0:  # the helper: never returns, and runs no exit handler of the parent's
            try:
                os.close(questions_out)
                os.close(answers_in)
                with open(questions_in, **_TEXT) as questions, open(answers_out, "w", **_TEXT) as answers:  # type: ignore[call-overload]
                    _serve(questions, answers)
            finally:
                os._exit(0)
        os.close(questions_in)
        os.close(answers_out)
        self._child = pid
        self._to = open(questions_out, "w", buffering=1 << 16, **_TEXT)  # type: ignore[call-overload]  # noqa: SIM115
        self._from = open(answers_in, **_TEXT)  # type: ignore[call-overload]  # noqa: SIM115

    def _spawn(self) -> None:
        import json
        import subprocess

        proc = subprocess.Popen(
            [sys.executable, "-S", "-c", _SPAWNED, os.path.abspath(__file__), json.dumps(sys.path),
             str(sys.getrecursionlimit())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            bufsize=1 << 16, **_TEXT,
        )
        self._child, self._to, self._from = proc, proc.stdin, proc.stdout

    def _send(self) -> None:
        """Send the questions still buffered here."""
        if self._to is not None:
            try:
                self._to.flush()
            except (OSError, ValueError):
                self._fail()

    def _read_one(self) -> bool:
        """Read the next answer; False when the process gives none (it is then given up)."""
        if not self._started() or len(self._answers) >= len(self._questions):
            return False
        try:
            line = self._from.readline()
        except (OSError, ValueError):
            line = ""
        if line not in ("1\n", "0\n"):  # "?" (it raised), or it is gone
            if line != "?\n":
                self._fail()
            return False
        self._answers.append(line == "1\n")
        return True

    def _fail(self) -> None:
        self._failed = True
        self._end(kill=True)

    def _end(self, *, kill: bool) -> None:
        child, to, answers = self._child, self._to, self._from
        self._child = self._to = self._from = None
        if child is None:
            return
        if kill:
            _kill(child)
        try:
            to.close()  # the end of the questions: it ends as it reads that
        except OSError:
            pass
        if not _waited(child, 1.0):  # one still parsing must not hold up the scorer
            _kill(child)
            _waited(child, None)
        answers.close()


# Threads a forked helper may leave behind: they hold no lock that it takes (it only
# reads its pipe, imports sqlglot and parses), and the watchdog resets its own lock in
# a forked child (sqlscout.env.sandbox).
_FORK_SAFE_THREADS = ("sqlscout-watchdog",)


def _may_fork() -> bool:
    if not hasattr(os, "fork"):
        return False
    main = threading.main_thread()
    return all(t is main or t.name in _FORK_SAFE_THREADS for t in threading.enumerate())


def _kill(child: Any) -> None:
    import signal

    try:
        child.kill() if not isinstance(child, int) else os.kill(child, signal.SIGKILL)
    except OSError:
        pass


def _waited(child: Any, timeout: float | None) -> bool:
    """Whether ``child`` (a pid or a Popen) ended within ``timeout`` seconds (None: wait)."""
    if not isinstance(child, int):
        import subprocess

        try:
            child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    import time

    ends = None if timeout is None else time.monotonic() + timeout
    delay = 0.0005
    while True:
        try:
            pid, _ = os.waitpid(child, 0 if ends is None else os.WNOHANG)
        except ChildProcessError:
            return True
        if pid:
            return True
        if time.monotonic() > ends:  # type: ignore[operator]
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


_ANSWER_HERE = {"p": statement_parses, "o": order_by_parsed}

_shared: ParseHelper | None = None


def shared_helper() -> ParseHelper:
    """This process's helper (its process starts with the first question)."""
    global _shared
    if _shared is None or _shared._pid != os.getpid():
        _shared = ParseHelper()
    return _shared


def start_helper() -> None:
    """Start this process's helper now, unless sqlglot is loaded here already: for a
    caller that expects questions (``sqlscout score`` on an empty cache), so that
    sqlglot is imported while the caller still loads its own modules and data."""
    if not sqlglot_loaded():
        shared_helper().start()


def close_helper() -> None:
    """End this process's helper, if it has one."""
    global _shared
    helper, _shared = _shared, None
    if helper is not None:
        helper.close()
