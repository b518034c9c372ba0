"""Scoring one predicted query against the gold query (SPEC §5).

Both run in the sandbox on the same database under the scoring deadline. The verdict
holds the match under every semantics and the outcome tier. The evaluator and the
reward both call :func:`score_sql`, so training and evaluation can never disagree.
"""

from __future__ import annotations

import functools
import time
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any

from sqlscout.errors import REFUSED, QueryError, QueryTimeout, QueryTooLarge
from sqlscout.env.sandbox import Database
from sqlscout.scoring.compare import ComparisonTimeout, Row, Semantics, match_all, test_suite_match
from sqlscout.scoring.parsing import statement_parses

__all__ = ["ExecResult", "Outcome", "Scored", "Verdict", "execute_for_scoring", "has_statement", "parsed_by_engine", "parses", "score_sql"]

SCORING_TIMEOUT_S = 30.0
SCORING_MAX_ROWS = 1_000_000
# "query": each query has the whole timeout; "pair": BIRD's official rule, one timeout
# for the prediction and the gold query together.
TIMEOUT_RULES = ("query", "pair")


class Outcome(str, Enum):
    """Outcome tiers, best first."""

    EQUIVALENT = "equivalent"  # matches the gold result
    EXECUTABLE = "executable"  # runs, wrong result
    PARSABLE = "parsable"  # parses as SQLite, does not run
    INVALID = "invalid"  # does not parse, or no answer

    @property
    def rank(self) -> int:
        return {"equivalent": 3, "executable": 2, "parsable": 1, "invalid": 0}[self.value]


@dataclass(frozen=True)
class ExecResult:
    """A query's full result for scoring, or the error it raised."""

    columns: tuple[str, ...] = ()
    rows: list[Row] | None = None
    error: str | None = None
    timed_out: bool = False
    elapsed_s: float = 0.0
    resource_limit: bool = False  # the error is a cap on result size or memory (never cached: caps are settings)

    @property
    def ok(self) -> bool:
        return self.rows is not None

    @property
    def refused(self) -> bool:
        """The sandbox refused the statement (a write, a state change, several statements)."""
        return self.error is not None and self.error.startswith(REFUSED)


def has_statement(sql: str | None) -> bool:
    """Whether ``sql`` holds anything but whitespace, ``;`` and comments.

    An answer without a statement (``''``, ``;``, ``-- no answer``, ``/* nothing */``)
    is no answer: SQLite runs it and returns no rows, which would match any gold query
    that returns none, so scoring never runs it (it is *invalid* under every semantics).

    >>> has_statement("-- no answer"), has_statement(" ; /* x */"), has_statement("SELECT 1 -- x")
    (False, False, True)
    """
    if not sql:
        return False
    # A scan, not a regular expression: one that splits '----...' into comments in
    # every possible way backtracks exponentially. A block comment left open runs to
    # the end, as in SQLite; a quote or any other character starts a statement.
    at, end = 0, len(sql)
    while at < end:
        char = sql[at]
        if char == ";" or char.isspace():
            at += 1
        elif sql.startswith("--", at):
            newline = sql.find("\n", at)
            at = end if newline < 0 else newline + 1
        elif sql.startswith("/*", at):
            close = sql.find("*/", at + 2)
            at = end if close < 0 else close + 2
        else:
            return True
    return False


NO_STATEMENT = "no SQL statement"


def execute_for_scoring(
    db: Database, sql: str | None, *, timeout_s: float | None = SCORING_TIMEOUT_S, max_rows: int | None = SCORING_MAX_ROWS
) -> ExecResult:
    """Run ``sql`` to completion (up to ``max_rows``); never raises for bad SQL. None
    takes the scoring defaults (never the sandbox's interactive limits: a gold query
    and a prediction are held to the same ones)."""
    timeout_s = SCORING_TIMEOUT_S if timeout_s is None else timeout_s
    max_rows = SCORING_MAX_ROWS if max_rows is None else max_rows
    if not has_statement(sql):
        return ExecResult(error=NO_STATEMENT)
    try:
        result = db.execute(sql, timeout_s=timeout_s, max_rows=max_rows)
    except QueryTimeout as exc:
        return ExecResult(error=str(exc), timed_out=True)
    except QueryTooLarge as exc:
        return ExecResult(error=str(exc), resource_limit=True)
    except QueryError as exc:
        return ExecResult(error=str(exc))
    if result.truncated:
        return ExecResult(error=f"result has more than {max_rows:,} rows", elapsed_s=result.elapsed_s)
    return ExecResult(result.columns, result.rows, elapsed_s=result.elapsed_s)


@functools.lru_cache(maxsize=4096)  # pure; GRPO groups and benchmarks repeat queries
def parses(sql: str | None) -> bool:
    """Whether sqlglot parses ``sql`` as SQLite (the *parsable* tier).

    A bare expression parses too (``Ada``, ``5``, ``x = 1``) but is no statement, so it
    does not count: an answer that is a value or a word is invalid, not parsable.

    >>> parses("SELECT a FROM t WHERE b = 1"), parses("SELEC a FROM"), parses(""), parses("Ada")
    (True, False, False, False)
    """
    if not has_statement(sql):  # sqlglot makes a tree of some comments and a ';'
        return False
    return statement_parses(sql)  # type: ignore[arg-type]


# What SQLite says when its parser rejects a statement (past that point, a failure is about
# names, types or limits, and the statement parsed).
_SYNTAX_ERRORS = ("syntax error", "incomplete input", "unrecognized token", "parser stack overflow", "not valid text")


def parsed_by_engine(pred: ExecResult) -> bool | None:
    """The parsable tier from how the prediction failed, without sqlglot: True when the
    database's parser accepted the statement and it failed after (a missing table or
    column, a misused aggregate, a timeout, a cap), False when there is no statement;
    None when the parser rejected it, which sqlglot then decides (it reads dialects
    SQLite does not), or when nothing failed.

    >>> parsed_by_engine(ExecResult(error="SQL error: no such column: x")), parsed_by_engine(ExecResult(error='SQL error: near "SELEC": syntax error'))
    (True, None)
    >>> parsed_by_engine(ExecResult(error="no SQL statement")), parsed_by_engine(ExecResult(error="Query timed out", timed_out=True))
    (False, True)
    """
    if pred.ok or pred.error is None:
        return None
    if pred.timed_out or pred.resource_limit:
        return True
    if pred.error == NO_STATEMENT:
        return False
    lowered = pred.error.lower()
    if pred.refused or not lowered.startswith("sql error:") or any(e in lowered for e in _SYNTAX_ERRORS):
        return None
    return True


@dataclass(frozen=True)
class Verdict:
    """How a prediction fared: match under each semantics and the outcome tier."""

    outcome: Outcome
    official: bool
    strict: bool
    spider: bool
    pred_error: str | None = None
    gold_error: str | None = None
    pred_rows: int | None = None
    gold_rows: int | None = None
    test_suite: bool | None = None  # decided only when scored under that semantics (None: not asked)
    resource_limit: str | None = None  # "gold" or "prediction": its result passed a size or memory cap

    def correct(self, semantics: Semantics | str = Semantics.OFFICIAL) -> bool:
        return bool(getattr(self, Semantics(semantics).field))

    def to_dict(self) -> dict[str, Any]:
        data = {**asdict(self), "outcome": self.outcome.value}
        if data["resource_limit"] is None:  # records stay as they were where no cap was met
            del data["resource_limit"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        return cls(**{**data, "outcome": Outcome(data["outcome"])})


@dataclass(frozen=True)
class Scored:
    """A verdict together with both results (the reward needs the rows)."""

    verdict: Verdict
    pred: ExecResult
    gold: ExecResult


def score_sql(
    db: Database,
    pred_sql: str | None,
    gold_sql: str,
    *,
    gold: ExecResult | None = None,
    pred: ExecResult | None = None,
    semantics: Semantics = Semantics.OFFICIAL,
    timeout_s: float = SCORING_TIMEOUT_S,
    max_rows: int = SCORING_MAX_ROWS,
    top_level_order: bool | None = None,
    timeout_rule: str = "query",
    parsable: bool | None = None,
) -> Scored:
    """Execute and compare. ``gold`` (and ``pred``) may be passed in when that query's
    result is already known (cached, or run by the caller), and ``top_level_order``
    when whether ``gold_sql`` has a top-level ORDER BY is; ``semantics`` decides which
    match makes the outcome *equivalent*.

    Under ``test-suite`` both queries are first rewritten as the official script
    rewrites them (:func:`~sqlscout.scoring.testsuite.test_suite_sql`; rewriting SQL
    that was rewritten already changes nothing), and results passed in must be those
    of the rewritten queries. ``timeout_rule="pair"`` is BIRD's: the prediction and the
    gold query together must finish within ``timeout_s`` (the prediction runs first),
    else the prediction counts as timed out; the default gives each its own.
    ``parsable`` is :func:`parses` of the prediction (as scored), when already known."""
    semantics = Semantics(semantics)
    if timeout_rule not in TIMEOUT_RULES:
        raise ValueError(f"timeout_rule must be one of {', '.join(TIMEOUT_RULES)}, got {timeout_rule!r}")
    if semantics is Semantics.TEST_SUITE:
        from sqlscout.scoring.testsuite import test_suite_sql

        gold_sql = test_suite_sql(gold_sql, prediction=False)
        pred_sql = test_suite_sql(pred_sql, prediction=True) if pred_sql is not None else None
    deadline = time.monotonic() + timeout_s  # the comparison, too, ends by the scoring deadline
    pred = pred if pred is not None else execute_for_scoring(db, pred_sql, timeout_s=timeout_s, max_rows=max_rows)
    if gold is None:
        left = timeout_s - pred.elapsed_s if timeout_rule == "pair" else timeout_s
        gold = execute_for_scoring(db, gold_sql, timeout_s=max(left, 1e-3), max_rows=max_rows)
    if timeout_rule == "pair" and pred.ok and (gold.timed_out or pred.elapsed_s + gold.elapsed_s > timeout_s):
        pred = ExecResult(error=f"the prediction and the gold query together ran past {timeout_s:g} s (BIRD's rule)",
                          timed_out=True, elapsed_s=pred.elapsed_s)
    official = strict = spider = False
    test_suite: bool | None = None
    if pred.ok and gold.ok:
        assert pred.rows is not None and gold.rows is not None
        official, strict, spider = match_all(
            pred.rows, gold.rows, gold_sql, top_level_order=top_level_order, deadline=deadline
        )
        if semantics is Semantics.TEST_SUITE:
            test_suite = _test_suite_match(pred.rows, gold.rows, gold_sql, deadline)
    elif semantics is Semantics.TEST_SUITE:
        test_suite = False
    if pred.ok:
        chosen = {Semantics.OFFICIAL: official, Semantics.STRICT: strict, Semantics.SPIDER: spider,
                  Semantics.TEST_SUITE: test_suite}[semantics]
        outcome = Outcome.EQUIVALENT if chosen else Outcome.EXECUTABLE
    elif pred.refused:
        # Not an answer the read-only database can run: a write or a state change ranks
        # with no answer at all, never above it (a policy must not learn to try one).
        outcome = Outcome.INVALID
    else:
        if parsable is None:
            parsable = parsed_by_engine(pred)
        outcome = Outcome.PARSABLE if (parses(pred_sql) if parsable is None else parsable) else Outcome.INVALID
    verdict = Verdict(
        outcome=outcome,
        official=official,
        strict=strict,
        spider=spider,
        pred_error=pred.error,
        gold_error=gold.error,
        pred_rows=len(pred.rows) if pred.rows is not None else None,
        gold_rows=len(gold.rows) if gold.rows is not None else None,
        test_suite=test_suite,
        resource_limit="gold" if gold.resource_limit else "prediction" if pred.resource_limit else None,
    )
    return Scored(verdict, pred, gold)


def _test_suite_match(pred: list[Row], gold: list[Row], gold_sql: str, deadline: float) -> bool:
    try:
        return test_suite_match(pred, gold, ordered="order by" in gold_sql.lower(), deadline=deadline)
    except ComparisonTimeout:
        return False
