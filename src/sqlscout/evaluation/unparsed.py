"""Comparisons waiting for sqlglot while :mod:`sqlscout.evaluation.batch_score` runs
queries: the parsable tier, and the top-level ORDER BY of nested gold queries."""

from __future__ import annotations

from typing import Callable

from sqlscout.scoring import ExecResult, Verdict, has_top_level_order_by
from sqlscout.scoring.parse_helper import ParseHelper, close_helper, shared_helper
from sqlscout.scoring.parsing import parser_version, sqlglot_loaded
from sqlscout.scoring.result_cache import ResultBundle
from sqlscout.scoring.verdict import has_statement, parses

__all__ = ["MEMO_CELLS", "STAGE_CELLS", "Judged", "Staged", "Unparsed", "result_cells"]

STAGE_CELLS = 1_000_000  # result cells held at once before they are compared
MEMO_CELLS = 20_000  # gold results up to this size are remembered for the rest of their database
_UNPARSED = 512  # predictions that did not run, parsed together

Judged = tuple[int, Verdict, tuple[str, ...]]  # (index, verdict, where the gold result came from)


def result_cells(result: ExecResult) -> int:
    rows = result.rows
    return len(rows) * len(rows[0]) if rows else 0


# (index, predicted SQL, gold SQL, gold result, predicted result, sources, top-level ORDER BY of the gold)
Staged = tuple[int, "str | None", str, ExecResult, ExecResult, tuple[str, ...], "bool | None"]


class Unparsed:
    """Comparisons waiting for sqlglot: predictions that did not run, to be asked
    whether they parse (the parsable tier), and results whose comparison needs to know
    whether a nested gold query has a top-level ORDER BY.

    Where sqlglot is not loaded in this process, each question goes at once to a
    :class:`~sqlscout.scoring.parse_helper.ParseHelper`, a process that imports sqlglot
    and answers while this one goes on running queries; importing it here would hold
    up the scoring for a sixth of a second. Where it is loaded, they are parsed here,
    many at once: sqlglot's parser runs about three times faster while it is hot in
    the CPU's caches than when each parse follows a round of SQLite. Entries hold only
    results small enough to be remembered anyway (``STAGE_CELLS`` cells in all at
    most)."""

    def __init__(self, judge: Callable[[Staged, bool | None], Judged], *, helper: bool = True) -> None:
        self.judge = judge  # the verdict of an entry, given whether its prediction parses
        self.use_helper = helper  # pool workers parse in their own process: their work is long
        # (entry, its database's cached results, "p" (parses) or "o" (ORDER BY), ticket)
        self.waiting: list[tuple[Staged, ResultBundle | None, str, int | None]] = []
        self.cells = 0
        self.helper: ParseHelper | None = None

    def __len__(self) -> int:
        return len(self.waiting)

    def add(self, entry: Staged, bundle: ResultBundle | None, kind: str = "p") -> bool:
        """Keep ``entry`` for later (its answer then goes into ``bundle`` too); False
        when it should be judged now instead."""
        cells = result_cells(entry[3]) + result_cells(entry[4])
        if cells > MEMO_CELLS:
            return False
        sql = entry[1] if kind == "p" else entry[2]
        ticket = None
        if self.use_helper and sql and (kind == "o" or has_statement(sql)) and not sqlglot_loaded():
            if self.helper is None:
                self.helper = shared_helper()
            ticket = self.helper.ask(kind, sql)
        self.waiting.append((entry, bundle, kind, ticket))
        self.cells += cells
        return True

    def full(self) -> bool:
        return len(self.waiting) >= _UNPARSED or self.cells > STAGE_CELLS

    def drain(self) -> list[Judged]:
        waiting, self.waiting, self.cells = self.waiting, [], 0
        out, touched, version = [], {}, parser_version()
        for entry, bundle, kind, ticket in waiting:
            if kind == "o":
                order = self.helper.answer(ticket) if ticket is not None else has_top_level_order_by(entry[2])  # type: ignore[union-attr]
                if bundle is not None:
                    bundle.put_order(entry[2], order)
                    touched[id(bundle)] = bundle
                out.append(self.judge((*entry[:6], order), None))
                continue
            parsable = self.helper.answer(ticket) if ticket is not None else parses(entry[1])  # type: ignore[union-attr]
            if bundle is not None and version is not None and entry[1]:
                bundle.put_parsed(entry[1], version, parsable)
                touched[id(bundle)] = bundle
            out.append(self.judge(entry, parsable))
        for bundle in touched.values():  # its database may be done (and its file written) already
            if not bundle.held():
                bundle.flush()
        return out

    def close(self) -> None:
        if self.use_helper:
            self.helper = None
            close_helper()  # also one started early by a caller, and never asked
