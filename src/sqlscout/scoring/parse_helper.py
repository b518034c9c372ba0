"""sqlglot's answers from a process of its own, while the scorer runs queries.

Importing sqlglot takes a sixth of a second of CPU, more than scoring Spider dev's
predictions, and a scorer needs it only for predictions that do not run (the
*parsable* tier) and nested gold queries' ORDER BY. A :class:`ParseHelper` is a process
that imports sqlglot and answers those questions (:data:`sqlscout.scoring.parsing.ASK`)
on another core while the scorer goes on; it runs the very functions the scorer would
(:func:`sqlscout.scoring.parsing.serve`), and a question it cannot answer (it raised,
it died, it never started) is answered in the scorer, so the answers are always the
same.

The process is the scorer forked where that is safe (no thread runs but the sandbox's
watchdog, which holds no lock the helper takes): it then shares the modules loaded
already and imports only sqlglot's own, a quarter less work than a new interpreter,
which it is otherwise.

>>> helper = ParseHelper()
>>> nested = "SELECT a FROM (SELECT a FROM t) ORDER BY a"
>>> tickets = [helper.ask("p", "SELECT 1"), helper.ask("p", "SELEC 1"), helper.ask("o", nested)]
>>> [helper.answer(t) for t in tickets]
[True, False, True]
>>> helper.close()
"""

from __future__ import annotations

import json
import os
import sys
import threading
import warnings
from typing import TYPE_CHECKING, TextIO, Union

from sqlscout.scoring import parsing
from sqlscout.scoring.parsing import ASK, sqlglot_loaded

if TYPE_CHECKING:
    import subprocess

__all__ = ["ParseHelper", "close_helper", "shared_helper", "start_helper"]

# A helper started as a new interpreter runs parsing.py, loaded by its path (not
# through sqlscout's packages, whose imports it does not need).
_SPAWNED = r"""
import importlib.util, json, os, sys
sys.path[:] = json.loads(sys.argv[2])
sys.setrecursionlimit(int(sys.argv[3]))
spec = importlib.util.spec_from_file_location("_sqlscout_parsing", sys.argv[1])
parsing = importlib.util.module_from_spec(spec)
spec.loader.exec_module(parsing)
parsing.serve(sys.stdin, sys.stdout)
os._exit(0)  # at the end of the questions; unloading sqlglot's modules takes longer
"""

_SEND_EVERY = 16  # questions written to the helper's pipe together
# Questions asked and not yet read back, at most: answers are 2 bytes, so the helper
# never fills the pipe back (64 KiB) while this process is not reading it.
_MAX_UNREAD = 8_192
_ENCODING, _ERRORS = "utf-8", "surrogateescape"
# Threads a forked helper may leave behind: they hold no lock that it takes (it only
# reads its pipe, imports sqlglot and parses), and the watchdog resets its own lock in
# a forked child (sqlscout.env.sandbox).
_FORK_SAFE_THREADS = ("sqlscout-watchdog",)

Child = Union[int, "subprocess.Popen[str]"]  # a forked child's pid, or a new interpreter


class ParseHelper:
    """sqlglot's answers from a process of its own, started by the first question.

    :meth:`ask` sends a question (a kind of :data:`~sqlscout.scoring.parsing.ASK` and
    the SQL) and returns at once; :meth:`answer` waits for it."""

    def __init__(self) -> None:
        self._to: TextIO | None = None  # questions, to the process
        self._from: TextIO | None = None  # answers, from it
        self._child: Child | None = None
        self._pid = os.getpid()
        self._failed = False
        self._questions: list[tuple[str, str]] = []  # every question asked, in order
        self._answers: list[bool] = []  # answers read back, in the same order

    def ask(self, kind: str, sql: str) -> int:
        """Send a question; returns its ticket for :meth:`answer`."""
        ticket = len(self._questions)
        self._questions.append((kind, sql))
        if self._started() and self._to is not None:
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
                self._answers.append(ASK[kind](sql))
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
        with warnings.catch_warnings():
            # Python 3.12+ warns of forking beside other threads: the watchdog is safe (above).
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the helper: never returns, and runs no exit handler of the parent's
            try:
                os.close(questions_out)
                os.close(answers_in)
                with open(questions_in, encoding=_ENCODING, errors=_ERRORS) as questions, \
                        open(answers_out, "w", encoding=_ENCODING, errors=_ERRORS) as answers:
                    parsing.serve(questions, answers)
            finally:
                os._exit(0)
        os.close(questions_in)
        os.close(answers_out)
        self._child = pid
        self._to = open(questions_out, "w", buffering=1 << 16, encoding=_ENCODING, errors=_ERRORS)  # noqa: SIM115
        self._from = open(answers_in, encoding=_ENCODING, errors=_ERRORS)  # noqa: SIM115

    def _spawn(self) -> None:
        import subprocess

        proc = subprocess.Popen(
            [sys.executable, "-S", "-c", _SPAWNED, os.path.abspath(parsing.__file__), json.dumps(sys.path),
             str(sys.getrecursionlimit())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            bufsize=1 << 16, encoding=_ENCODING, errors=_ERRORS,
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
        if not self._started() or self._from is None or len(self._answers) >= len(self._questions):
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
            if to is not None:
                to.close()  # the end of the questions: it ends as it reads that
        except OSError:
            pass
        if not _waited(child, 1.0):  # one still parsing must not hold up the scorer
            _kill(child)
            _waited(child, None)
        if answers is not None:
            answers.close()


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


def _may_fork() -> bool:
    if not hasattr(os, "fork"):
        return False
    main = threading.main_thread()
    return all(t is main or t.name in _FORK_SAFE_THREADS for t in threading.enumerate())


def _kill(child: Child) -> None:
    import signal

    try:
        if isinstance(child, int):
            os.kill(child, signal.SIGKILL)
        else:
            child.kill()
    except OSError:
        pass


def _waited(child: Child, timeout: float | None) -> bool:
    """Whether ``child`` ended within ``timeout`` seconds (None: wait as long as it takes)."""
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
        except ChildProcessError:  # reaped already
            return True
        if pid or ends is None:
            return True
        if time.monotonic() > ends:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.02)
