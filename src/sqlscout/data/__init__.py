"""Benchmarks as tasks: SQaLe, BIRD, Spider, Spider-DK and a generic JSONL format, one
module each, behind one entry point (:func:`load_tasks`); and the schema-size
conditions that rebuild a task's database around its gold tables."""

from sqlscout.data.databases import MissingDb
from sqlscout.data.loader import BENCHMARKS, LEVELS, load_tasks

__all__ = ["BENCHMARKS", "LEVELS", "MissingDb", "load_tasks"]
