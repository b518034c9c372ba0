"""Questions for gold SQL that has none, written by a model and checked by execution.

Spider's 144 training databases come here with their 8,659 gold queries and no questions.
SQaLe builds its data the same way: a model reads a database's schema and one gold query
and writes the question that query answers; the question is then **checked by
execution**: the same model answers it single-shot from the schema, and the question is
kept only when that answer returns the gold query's result (official semantics). A
question the model cannot answer back from is one whose wording lost what the query
does; what is left is a set of questions each known to be answerable and to mean its
gold query.

Every item is written to the output as it is done (``checked`` true or false, with the
answer that checked it), so a run can be stopped and resumed; the trainer reads the
checked ones as a JSONL benchmark (``db_id``, ``question``, ``query``).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from sqlscout.env.schema_text import schema_text
from sqlscout.env.task import Task
from sqlscout.errors import DataError

__all__ = ["GoldItem", "QUESTION_SYSTEM", "present_items", "question_messages", "read_gold_sql", "synthesize"]

QUESTION_SYSTEM = (
    "You write the question a SQL query answers. Given a database schema and a SQLite query, reply with one "
    "question in plain English that a person would ask to get exactly that query's result: name what is "
    "selected, every filter, the grouping, the order and the number of rows when the query fixes them. Do not "
    "mention SQL, tables, columns or the query. Reply with the question only."
)


@dataclass(frozen=True)
class GoldItem:
    """One gold query of a database, and its id (its line in the gold file)."""

    item_id: str
    db_id: str
    sql: str


def read_gold_sql(path: str | Path) -> list[GoldItem]:
    """A Spider-style gold file (``SQL<TAB>db_id`` per line), one item per distinct query
    of each database (whitespace and case of keywords aside), in file order."""
    items, seen = [], set()
    for number, line in enumerate(Path(path).expanduser().read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        sql, sep, db_id = line.rpartition("\t")
        if not sep or not sql.strip() or not db_id.strip():
            raise DataError(f"{path}:{number}: expected 'SQL<TAB>db_id'")
        key = (db_id.strip(), re.sub(r"\s+", " ", sql.strip()).lower())
        if key in seen:
            continue
        seen.add(key)
        items.append(GoldItem(str(number), db_id.strip(), sql.strip()))
    return items


def question_messages(schema_sql: str, sql: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": QUESTION_SYSTEM},
        {"role": "user", "content": f"Schema:\n{schema_sql}\n\nQuery:\n{sql}\n\nQuestion:"},
    ]


def _clean_question(text: str) -> str:
    text = text.strip().strip("`").strip()
    text = re.sub(r"^(question|q)\s*:\s*", "", text, flags=re.IGNORECASE).strip()
    first = text.splitlines()[0].strip() if text else ""
    return first.strip('"').strip()


def synthesize(
    items: Sequence[GoldItem],
    db_path: Callable[[str], Path],
    runner: Any,
    out: Path,
    *,
    batch: int = 8,
    on_item: Callable[[dict[str, Any]], None] | None = None,
) -> Iterator[dict[str, Any]]:
    """Write and check a question for each item not yet in ``out`` (appended, one JSON
    line each). ``runner`` is a :class:`sqlscout.runner.Runner` in single-shot mode over
    the model that writes and answers; ``db_path(db_id)`` finds each database."""
    from sqlscout.backends.base import GenerationRequest
    from sqlscout.scoring import score_sql

    done = _done(out)
    todo = [i for i in items if i.item_id not in done]
    backend = runner.backend
    params = runner.config.sampling.with_(temperature=0.0, max_tokens=96, stop=tuple(backend.chat.stop))
    with out.open("a", encoding="utf-8") as sink:
        for start in range(0, len(todo), batch):
            group = todo[start : start + batch]
            dbs = [runner.database(db_path(i.db_id)) for i in group]
            prompts = [backend.chat.render(question_messages(schema_text(db), i.sql)) for i, db in zip(group, dbs)]
            written = backend.generate([GenerationRequest(params, prompt=p) for p in prompts])
            stops = tuple(backend.chat.stop)
            questions = [_clean_question(_without(w.text, stops)) for w in written]
            tasks = [
                Task(i.item_id, q or "(none)", db.path, gold_sql=i.sql, db_id=i.db_id, benchmark="synthesized")
                for i, q, db in zip(group, questions, dbs)
            ]
            answers = {r.index: r.result for r in runner.run(tasks)}
            for k, (item, question, db) in enumerate(zip(group, questions, dbs)):
                answer = answers[k].final_sql
                verdict = score_sql(db, answer, item.sql).verdict if question else None
                record = {
                    "question_id": item.item_id,
                    "db_id": item.db_id,
                    "question": question,
                    "query": item.sql,
                    "checked": bool(verdict is not None and verdict.official),
                    "answered_with": answer,
                }
                sink.write(json.dumps(record) + "\n")
                sink.flush()
                if on_item is not None:
                    on_item(record)
                yield record


def _without(text: str, stops: tuple[str, ...]) -> str:
    for stop in stops:
        text = text.replace(stop, "")
    return text


def _done(out: Path) -> set[str]:
    if not out.is_file():
        return set()
    ids = set()
    for line in out.read_text(encoding="utf-8").splitlines():
        try:
            ids.add(str(json.loads(line)["question_id"]))
        except (ValueError, KeyError, TypeError):
            continue  # a torn last line: that item is written again
    return ids


def present_items(items: Sequence[GoldItem], db_path: Callable[[str], Path]) -> tuple[list[GoldItem], dict[str, int]]:
    """(the items whose database file is there, {missing db_id: items left out}).

    Spider's ``train_gold.sql`` names two databases its folder does not hold
    (``baseball_1``, ``soccer_1``); they are left out after the draw, so that the same
    ``--limit``/``--seed`` draws the same items wherever the files are.
    """
    there = {db_id: db_path(db_id).is_file() for db_id in {i.db_id for i in items}}
    missing = Counter(i.db_id for i in items if not there[i.db_id])
    return [i for i in items if there[i.db_id]], dict(missing)


def sample_items(items: Sequence[GoldItem], limit: int | None, seed: int, exclude_db_ids: frozenset[str] = frozenset()) -> list[GoldItem]:
    """``limit`` items drawn with ``seed`` (all when None), none on ``exclude_db_ids``, in file order."""
    pool = [i for i in items if i.db_id not in exclude_db_ids]
    if limit is None or limit >= len(pool):
        return pool
    chosen = sorted(random.Random(seed).sample(range(len(pool)), limit))
    return [pool[i] for i in chosen]
