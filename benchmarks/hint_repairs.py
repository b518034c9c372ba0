"""How often a query hint's repair returns the gold rows, on Spider dev's gold queries
made to fail the way the small models' queries fail (``query_hints``, sqlscout.assist.hints).

Each gold query is broken by one edit at a time; where the broken query fails, its hint
is asked for (with the question, as the episode asks), and a repaired query, when the
hint shows one, is run and its rows compared with the gold query's (as sets of rows):

- ``select-unqualified``: the aliases of the SELECT list removed (``SELECT name FROM
  Owners AS T1 JOIN Dogs AS T2 ...``; ambiguous column names);
- ``where-before-join``: ``WHERE 1 = 1`` put after the first table, before its joins
  (SQLite: near "JOIN": syntax error);
- ``group-by-dropped``: the GROUP BY clause removed from a query with ``HAVING`` or
  ``ORDER BY COUNT(...)`` on it (misuse of aggregate);
- ``both``: the first and the third edit together, two mistakes in one query: its
  repair is two repairs in a row (``chained_repair``);
- ``group-by-name``: ``GROUP BY T1.id`` made ``GROUP BY T1.name``, a name column of the
  same table: the query runs, and where a few rows share a name the note on grouping by
  a name (``key_grouping_note``) shows the query grouped by the key again.

Last, how many gold queries, which are right as they are, get that note (should be none).

    python benchmarks/hint_repairs.py [--data ../shared/data/spider] [--split train] [--no-chain]

``--split train`` reads Spider's train gold queries (train_gold.sql), which come
without their questions: the repairs that read the question then go without it.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

from sqlscout.assist.clause_repairs import key_grouping_note
from sqlscout.assist.hints import chained_repair
from sqlscout.env.sandbox import Database
from sqlscout.env.schema import Schema, Table, quote_identifier
from sqlscout.env.sqltext import column_of, query_sources
from sqlscout.errors import QueryError

_SELECT_LIST = re.compile(r"(?is)^(\s*SELECT)(.*?)(\bFROM\b)")
_FIRST_TABLE = re.compile(r"(?i)\bFROM\s+\w+(?:\s+AS\s+\w+)?")
_GROUP_BY = re.compile(r"(?is)\s*\bGROUP\s+BY\b.*?(?=\bHAVING\b|\bORDER\s+BY\b|\bLIMIT\b|$)")
_GROUP_BY_COLUMN = re.compile(r"(?i)\bGROUP\s+BY\s+((?:\w+\.)?\w+)\s*(?=\bHAVING\b|\bORDER\b|\bLIMIT\b|$)")
_EDITS = ("select-unqualified", "where-before-join", "group-by-dropped", "both", "group-by-name")


def breakages(gold: str) -> dict[str, str]:
    """Each named edit of ``gold``, where it changes anything."""
    edits = {
        "select-unqualified": _SELECT_LIST.sub(
            lambda m: m.group(1) + re.sub(r"(?i)\bT\d+\.", "", m.group(2)) + m.group(3), gold, count=1
        ),
        "where-before-join": _FIRST_TABLE.sub(lambda m: m.group(0) + " WHERE 1 = 1", gold, count=1)
        if re.search(r"(?i)\bJOIN\b", gold)
        else gold,
        "group-by-dropped": _GROUP_BY.sub(" ", gold, count=1),
    }
    if gold not in (edits["select-unqualified"], edits["group-by-dropped"]):
        edits["both"] = _GROUP_BY.sub(" ", edits["select-unqualified"], count=1)
    return {name: sql for name, sql in edits.items() if sql != gold}


def name_grouped(schema: Schema, gold: str) -> str | None:
    """``gold`` grouped by a name column of the table whose key it groups by, if any."""
    found = _GROUP_BY_COLUMN.search(gold)
    if found is None:
        return None
    qualifier, _, column = found.group(1).rpartition(".")
    sources = query_sources(schema, gold)
    tables = [sources[qualifier.lower()][0]] if qualifier.lower() in sources else []
    tables = tables or [t for t, _ in sources.values() if not qualifier and column_of(t, column)]
    key = tables[0].key if tables else None
    if key is None or key.lower() != column.lower():
        return None
    labels = [c.name for c in tables[0].columns if re.search(r"(?i)name|title", c.name) and c.name != key]
    if not labels:
        return None
    return gold[: found.start(1)] + (f"{qualifier}." if qualifier else "") + labels[0] + gold[found.end(1) :]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "spider")
    parser.add_argument("--split", choices=("dev", "train"), default="dev")
    parser.add_argument("--no-chain", action="store_true", help="one repair per hint, as hints version 8 made")
    args = parser.parse_args()
    if args.split == "dev":
        questions = json.loads((args.data / "dev.json").read_text())
    else:  # "query<TAB>db_id" lines, no questions
        lines = (args.data / "train_gold.sql").read_text().splitlines()
        questions = [
            dict(zip(("query", "db_id"), line.rsplit("\t", 1)), question=None) for line in lines if "\t" in line
        ]
    databases: dict[str, Database] = {}
    tally: Counter[tuple[str, str]] = Counter()
    depth = 1 if args.no_chain else 2
    for q in questions:
        path = args.data / "database" / q["db_id"] / f"{q['db_id']}.sqlite"
        if not path.is_file():
            continue
        db = databases.get(q["db_id"]) or databases.setdefault(q["db_id"], Database(path))

        def explain(sql: str, db: Database = db) -> str | None:
            try:
                db.compile(sql)
            except QueryError as error:
                return f"Error: {error}"
            return None

        def counts(table: Table, column: str, db: Database = db) -> tuple[int, int]:
            q_col, q_table = quote_identifier(column), quote_identifier(table.name)
            rows = db.execute(f"SELECT COUNT({q_col}), COUNT(DISTINCT {q_col}) FROM {q_table}").rows
            return rows[0][0], rows[0][1]

        def compiles(sql: str) -> bool:
            return explain(sql) is None

        try:
            gold_rows = set(map(repr, db.execute(q["query"]).rows))
        except QueryError:
            continue  # a gold query that does not run (a few of Spider's train queries)
        if key_grouping_note(db.schema, q["query"], counts, compiles) is not None:
            tally["gold", "noted"] += 1
        edits = breakages(q["query"])
        grouped = name_grouped(db.schema, q["query"])
        if grouped is not None:
            edits["group-by-name"] = grouped
        for name, broken in edits.items():
            try:
                db.execute(broken)
            except QueryError as error:
                found = chained_repair(db.schema, broken, f"Error: {error}", explain, q["question"], depth=depth)
            else:
                if name != "group-by-name":
                    continue  # the edit did not break it
                found = key_grouping_note(db.schema, broken, counts, compiles)
            if found is None or found.repaired is None:
                tally[name, "no repair"] += 1
                continue
            same = set(map(repr, db.execute(found.repaired).rows)) == gold_rows
            tally[name, "gold rows" if same else "other rows"] += 1
    for db in databases.values():
        db.close()
    print(f"{'edit':<20} {'broken':>7} {'repaired':>9} {'gold rows':>10} {'other rows':>11}")
    for name in _EDITS:
        gold, other, none = (tally[name, k] for k in ("gold rows", "other rows", "no repair"))
        print(f"{name:<20} {gold + other + none:>7} {gold + other:>9} {gold:>10} {other:>11}")
    print(f"gold queries given the note on grouping by a name: {tally['gold', 'noted']}")


if __name__ == "__main__":
    main()
