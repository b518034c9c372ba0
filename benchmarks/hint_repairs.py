"""How often a query hint's repair returns the gold rows, on Spider dev's gold queries
made to fail the way the small models' queries fail (``query_hints``, sqlscout.env.hints).

Each gold query is broken by one edit at a time; where the broken query fails, its hint
is asked for (with the question, as the episode asks), and a repaired query, when the
hint shows one, is run and its rows compared with the gold query's (as sets of rows):

- ``select-unqualified``: the aliases of the SELECT list removed (``SELECT name FROM
  Owners AS T1 JOIN Dogs AS T2 ...``; ambiguous column names);
- ``where-before-join``: ``WHERE 1 = 1`` put after the first table, before its joins
  (SQLite: near "JOIN": syntax error);
- ``group-by-dropped``: the GROUP BY clause removed from a query with ``HAVING`` or
  ``ORDER BY COUNT(...)`` on it (misuse of aggregate).

    python benchmarks/hint_repairs.py [--data ../shared/data/spider]
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

from sqlscout.env.hints import repair_hint
from sqlscout.env.sandbox import Database
from sqlscout.errors import QueryError

_SELECT_LIST = re.compile(r"(?is)^(\s*SELECT)(.*?)(\bFROM\b)")
_FIRST_TABLE = re.compile(r"(?i)\bFROM\s+\w+(?:\s+AS\s+\w+)?")
_GROUP_BY = re.compile(r"(?is)\s*\bGROUP\s+BY\b.*?(?=\bHAVING\b|\bORDER\s+BY\b|\bLIMIT\b|$)")


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
    return {name: sql for name, sql in edits.items() if sql != gold}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "spider")
    args = parser.parse_args()
    questions = json.loads((args.data / "dev.json").read_text())
    databases: dict[str, Database] = {}
    tally: Counter[tuple[str, str]] = Counter()
    for q in questions:
        path = args.data / "database" / q["db_id"] / f"{q['db_id']}.sqlite"
        if not path.is_file():
            continue
        db = databases.get(q["db_id"]) or databases.setdefault(q["db_id"], Database(path))

        def compiles(sql: str, db: Database = db) -> bool:
            try:
                db.compile(sql)
            except QueryError:
                return False
            return True

        for name, broken in breakages(q["query"]).items():
            try:
                db.execute(broken)
                continue  # the edit did not break it
            except QueryError as error:
                found = repair_hint(db.schema, broken, str(error), compiles, q["question"])
            if found is None or found.repaired is None:
                tally[name, "no repair"] += 1
                continue
            same = set(map(repr, db.execute(found.repaired).rows)) == set(map(repr, db.execute(q["query"]).rows))
            tally[name, "gold rows" if same else "other rows"] += 1
    for db in databases.values():
        db.close()
    print(f"{'edit':<20} {'broken':>7} {'repaired':>9} {'gold rows':>10} {'other rows':>11}")
    for name in ("select-unqualified", "where-before-join", "group-by-dropped"):
        gold, other, none = (tally[name, k] for k in ("gold rows", "other rows", "no repair"))
        print(f"{name:<20} {gold + other + none:>7} {gold + other:>9} {gold:>10} {other:>11}")


if __name__ == "__main__":
    main()
