"""Benchmarks as tasks: SQaLe, BIRD, Spider, Spider-DK and a generic JSONL format, one
module each, behind one entry point (:func:`load_tasks`); and the schema-size
conditions that rebuild a task's database around its gold tables (:func:`apply_condition`)."""

from sqlscout.data.conditions import Condition, apply_condition
from sqlscout.data.databases import MissingDb
from sqlscout.data.loader import BENCHMARKS, LEVELS, load_tasks

__all__ = ["BENCHMARKS", "LEVELS", "Condition", "MissingDb", "apply_condition", "load_tasks"]
