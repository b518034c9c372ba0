"""Benchmarks as tasks: SQaLe, BIRD, Spider, Spider-DK and a generic JSONL format, one
module each, behind one entry point (:func:`load_tasks`); and the schema-size
conditions that rebuild a task's database around its gold tables (:func:`apply_condition`).

The names below are resolved on first use (PEP 562): importing one module of the
package (``sqlscout.data.spider``, say) loads only what that module needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlscout.env.lazy import lazy_names

_WHERE = {
    "BENCHMARKS": "sqlscout.data.loader",
    "Condition": "sqlscout.data.conditions",
    "LEVELS": "sqlscout.data.loader",
    "MissingDb": "sqlscout.data.databases",
    "apply_condition": "sqlscout.data.conditions",
    "load_tasks": "sqlscout.data.loader",
}

__all__ = ["BENCHMARKS", "LEVELS", "Condition", "MissingDb", "apply_condition", "load_tasks"]


__getattr__, __dir__ = lazy_names(globals(), _WHERE)


if TYPE_CHECKING:  # what type checkers and IDEs see
    from sqlscout.data.conditions import Condition, apply_condition
    from sqlscout.data.databases import MissingDb
    from sqlscout.data.loader import BENCHMARKS, LEVELS, load_tasks
