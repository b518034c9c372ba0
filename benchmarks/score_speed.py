"""`sqlscout score` against the official evaluation scripts: whole commands timed as
users run them, and per-question agreement of every sqlscout mode with each script.

The predictions are Spider dev's runnable gold queries, perturbed
(``sqlscout.evaluation.perturb``) so that the verdicts vary; whitespace runs are folded
to one space in predictions and gold queries alike, since both official formats hold
one query per line.

**Timing** (``--bird-script``): each command is a process of its own, started the way a
user starts it, timed from start to exit, median of ``--repeats`` runs after one
warm-up run of each, interleaved:

- BIRD's official ``evaluation_ex.py`` (mini-dev) on the same predictions, with
  ``--num_cpus`` ``--workers`` (it caches nothing);
- ``sqlscout score`` cold (a new, empty cache folder every run);
- ``sqlscout score`` on predictions it has not seen, the gold results cached (by an
  earlier run on another set of predictions for the same questions);
- ``sqlscout score`` with its caches warm (the same predictions scored before: gold
  results, the benchmark's files, sqlglot's verdicts on the predictions that do not
  run, and the predictions' small results, which it keeps by default), and the same
  with ``--cache-predictions`` (their results of any size);
- ``sqlscout --help`` and ``sqlscout tool DB list_tables``.

Bytecode is cached for every process (``PYTHONPYCACHEPREFIX`` in the temporary
folder, ``PYTHONDONTWRITEBYTECODE`` dropped), as it is for an installed package; the
warm-up run compiles it. CPU seconds (the process and its children) are printed
beside wall seconds, with the load average: on a shared machine the wall clock
measures the scheduler as much as the command.

**Fidelity** (``--bird-script`` and/or ``--test-suite-dir``): the official scripts'
per-question verdicts against ``sqlscout score --verdicts`` under each mode. BIRD's
script prints only totals, so a small driver (run as its own process) calls its own
functions (``package_sqls``, ``run_sqls_parallel``, ``sort_results``) and prints each
verdict. taoyds/test-suite-sql-eval's ``evaluation.py --etype exec`` needs nltk's punkt
data to parse the gold queries for its difficulty levels, which plays no part in the
execution verdict; the driver does what it does per question instead: reads the two
files as it reads them, replaces every ``value`` in the prediction with ``1`` (its
``p_str.replace("value", "1")``: aliases, names and strings included), and calls its
``exec_eval.eval_exec_match`` with its defaults (no value plugging, DISTINCT removed).

The official scripts are not on PyPI and are never part of this repository: fetch
them yourself (BIRD mini-dev's ``evaluation/evaluation_ex.py`` with its
``evaluation_utils.py`` beside it; test-suite-sql-eval's ``exec_eval.py`` and
``parse.py``), and give where their own dependencies are installed (``func_timeout``,
``sqlparse``, ``tqdm``, ``pymysql``, ``psycopg2``) with ``--official-path``:

    pip install --target /tmp/official/deps func_timeout sqlparse tqdm pymysql psycopg2-binary
    PYTHONPATH=src python benchmarks/score_speed.py --data ../shared/data \\
        --bird-script /tmp/official/bird/evaluation_ex.py \\
        --test-suite-dir /tmp/official/test-suite-sql-eval --official-path /tmp/official/deps
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODES = [  # (label, extra arguments of sqlscout score)
    ("official", ["--semantics", "official"]),
    ("official, --timeout-rule pair", ["--semantics", "official", "--timeout-rule", "pair"]),
    ("strict", ["--semantics", "strict"]),
    ("spider", ["--semantics", "spider"]),
    ("test-suite", ["--semantics", "test-suite"]),
]
_LEVEL = {"easy": "simple", "medium": "moderate", "hard": "challenging", "extra": "challenging"}

BIRD_DRIVER = """
import json, sys
sys.path.insert(0, sys.argv[1])
import evaluation_ex as ex
from evaluation_utils import package_sqls, sort_results
preds, _ = package_sqls(sys.argv[2], sys.argv[4], mode="pred")
golds, db_paths = package_sqls(sys.argv[3], sys.argv[4], mode="gt")
ex.exec_result = []
ex.run_sqls_parallel(list(zip(preds, golds)), db_places=db_paths, num_cpus=int(sys.argv[5]), meta_time_out=float(sys.argv[6]))
print(json.dumps([r["res"] for r in sort_results(ex.exec_result)]))
"""

TEST_SUITE_DRIVER = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
from exec_eval import eval_exec_match
golds = [l.strip().split("\\t") for l in open(sys.argv[2]) if l.strip()]
preds = [l.strip().split("\\t") for l in open(sys.argv[3]) if l.strip()]
out = []
for p, (g_str, db) in zip(preds, golds):
    p_str = p[0].replace("value", "1")
    path = os.path.join(sys.argv[4], db, db + ".sqlite")
    try:
        out.append(eval_exec_match(path, p_str, g_str, False, False, False))
    except AssertionError:  # the gold query failed: the script stops here
        out.append(None)
print(json.dumps(out))
"""


# Variants that probe what the official scripts rewrite or credit (--edge).
EDGE = [
    ("value", lambda sql: re.sub(r"([=<>]) (\d+) ", r"\1 value ", sql, count=1)),
    ("alias_value", lambda sql: re.sub(r"(?is)^(SELECT .+?) FROM ", r"\1 AS value FROM ", sql, count=1)),
    ("spaced_operators", lambda sql: sql.replace(">=", "> =").replace("<=", "< =").replace("!=", "! =")),
    ("no_distinct", lambda sql: re.sub(r"(?i)\bdistinct\b ?", "", sql)),
    ("count_distinct", lambda sql: re.sub(r"(?i)count\((?!distinct)", "count(DISTINCT ", sql, count=1)),
    ("two_statements", lambda sql: sql + "; SELECT 1"),
    ("no_statement", lambda sql: "-- no answer"),
]


def _fold(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip()


def _predict(sql: str, i: int, round_: int) -> str:
    from sqlscout.evaluation.perturb import perturb

    if round_ < 0:  # the edge round
        return EDGE[i % len(EDGE)][1](_fold(sql))
    return perturb(sql, i + round_)


def _prepare(data: Path, folder: Path, round_: int = 0) -> dict:
    """Write the predictions and gold files of every tool into ``folder``."""
    from sqlscout.data import load_tasks
    from sqlscout.data.spider_hardness import hardness

    folder.mkdir(parents=True, exist_ok=True)
    records = json.loads((data / "spider" / "dev.json").read_text())
    tasks = load_tasks("spider", data / "spider", missing_db="skip")
    preds = [_fold(_predict(t.gold_sql or "", i, round_)) for i, t in enumerate(tasks)]
    golds = [_fold(t.gold_sql or "") for t in tasks]
    # sqlscout reads the questions (and gold queries) from a copy of dev.json whose
    # gold queries are folded the same way, so every tool runs the same text.
    spider = folder / "spider"
    spider.mkdir()
    (spider / "database").symlink_to((data / "spider" / "database").resolve(), target_is_directory=True)
    for record in records:
        record["query"] = _fold(record["query"])
    (spider / "dev.json").write_text(json.dumps(records))
    shutil.copyfile(data / "spider" / "tables.json", spider / "tables.json")
    bird = {str(t.meta["index"]): f"{p}\t----- bird -----\t{t.db_id}" for t, p in zip(tasks, preds)}
    (folder / "pred.json").write_text(json.dumps(bird, indent=1))
    (folder / "gold.sql").write_text("".join(f"{g}\t{t.db_id}\n" for g, t in zip(golds, tasks)))
    (folder / "pred.sql").write_text("".join(f"{p}\n" for p in preds))
    levels = [_LEVEL[hardness(records[t.meta["index"]]["sql"])] for t in tasks]
    (folder / "diff.jsonl").write_text("".join(json.dumps({"difficulty": lv}) + "\n" for lv in levels))
    return {"tasks": tasks, "spider": spider, "db_root": str(spider / "database") + "/", "preds": preds,
            "first_db": tasks[0].db_path}


def _sqlscout() -> list[str]:
    script = Path(sys.executable).parent / "sqlscout"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "sqlscout.cli.main"]


def _env(extra: str | None = None, pycache: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(REPO / "src")] + ([extra] if extra else [])
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    if pycache is not None:  # compiled once (in the warm-up), as an installed package is
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[tuple[float, float], str]:
    """((wall seconds, CPU seconds of the process and its children), stdout)."""
    cpu, start = _children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start, _children_cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def _score_cmd(folder: Path, prep: dict, cache: Path | None, extra: list[str]) -> list[str]:
    cache_args = ["--cache-dir", str(cache)] if cache is not None else ["--no-cache"]
    return [*_sqlscout(), "score", str(folder / "pred.json"), "--benchmark", "spider", "--data", str(prep["spider"]),
            "--missing-db", "skip", *cache_args, *extra]


def timing(args: argparse.Namespace, folder: Path, prep: dict, other: Path) -> None:
    """Whole commands, each a process of its own; ``other`` is a second set of
    predictions on the same questions (another perturbation of each gold query)."""
    pycache = folder / "pycache"  # bytecode is cached, as in any installed copy, but not beside the sources
    bird_env = _env(args.official_path, pycache)
    bird = [sys.executable, str(args.bird_script), "--predicted_sql_path", str(folder / "pred.json"),
            "--ground_truth_path", str(folder / "gold.sql"), "--db_root_path", prep["db_root"],
            "--num_cpus", str(args.workers), "--meta_time_out", "30", "--diff_json_path", str(folder / "diff.jsonl"),
            "--output_log_path", str(folder / "bird.log")]
    mine = _env(None, pycache)
    warm_cache, gold_cache, all_cache = folder / "warm-cache", folder / "gold-cache", folder / "all-cache"

    def cold() -> tuple[float, float]:
        with tempfile.TemporaryDirectory() as empty:
            return _run(_score_cmd(folder, prep, Path(empty), []), mine)[0]

    def new_predictions() -> tuple[float, float]:
        # Gold results cached by scoring ``other``; these predictions never seen before.
        with tempfile.TemporaryDirectory() as scratch:
            cache = Path(scratch) / "cache"
            shutil.copytree(gold_cache, cache)
            return _run(_score_cmd(folder, prep, cache, []), mine)[0]

    _run(_score_cmd(other, prep, gold_cache, []), mine)  # gold results only, from other predictions
    commands = {
        "official": lambda: _run(bird, bird_env, cwd=Path(args.bird_script).parent)[0],
        "cold": cold,
        "new": new_predictions,
        "warm": lambda: _run(_score_cmd(folder, prep, warm_cache, []), mine)[0],
        "all": lambda: _run(_score_cmd(folder, prep, all_cache, ["--cache-predictions"]), mine)[0],
        "help": lambda: _run([*_sqlscout(), "--help"], mine)[0],
        "tool": lambda: _run([*_sqlscout(), "tool", str(prep["first_db"]), "list_tables"], mine)[0],
    }
    for run in commands.values():  # warm-up: the page cache, bytecode, and the caches of "warm" and "all"
        run()
    load_before = os.getloadavg()
    times: dict[str, list[tuple[float, float]]] = {key: [] for key in commands}
    for _ in range(args.repeats):
        for key, run in commands.items():
            times[key].append(run())
    wall = {key: statistics.median(w for w, _ in v) for key, v in times.items()}
    cpu = {key: statistics.median(c for _, c in v) for key, v in times.items()}
    loads = " / ".join(f"{a:.1f}" for a in (*load_before[:1], os.getloadavg()[0]))
    print(f"\nwhole commands, median of {args.repeats} after a warm-up (load average {loads} before / after, "
          f"on {os.cpu_count()} cores); CPU = the process and its children:")
    print(f"  {'':62} {'wall':>8} {'vs BIRD':>8} {'CPU':>8} {'vs BIRD':>8}")
    rows = [
        ("official", f"BIRD evaluation_ex.py --num_cpus {args.workers}", ""),
        ("cold", "sqlscout score (empty cache folder)", "goal >= 3x"),
        ("new", "sqlscout score (gold results cached, new predictions)", ""),
        ("warm", "sqlscout score (caches warm: same predictions again)", "goal >= 5x"),
        ("all", "sqlscout score --cache-predictions (caches warm)", ""),
        ("help", "sqlscout --help", "goal < 0.3 s"),
        ("tool", "sqlscout tool DB list_tables", "goal < 0.3 s"),
    ]
    for key, label, goal in rows:
        print(f"  {label:62} {wall[key]:7.3f}s {wall['official'] / wall[key]:7.1f}x {cpu[key]:7.3f}s "
              f"{cpu['official'] / cpu[key]:7.1f}x  {goal}")
    print("  wall of each run: " + "; ".join(f"{k} " + " ".join(f"{w:.2f}" for w, _ in v) for k, v in times.items()))


def fidelity(args: argparse.Namespace, folder: Path, prep: dict) -> tuple[dict, dict]:
    """Per-question verdicts of the official scripts and of every sqlscout mode."""
    n = len(prep["tasks"])
    official: dict[str, list] = {}
    if args.bird_script:
        _, out = _run([sys.executable, "-c", BIRD_DRIVER, str(Path(args.bird_script).parent), str(folder / "pred.json"),
                       str(folder / "gold.sql"), prep["db_root"], str(args.workers), "30"], _env(args.official_path))
        official["BIRD evaluation_ex.py"] = json.loads(out)
    if args.test_suite_dir:
        _, out = _run([sys.executable, "-c", TEST_SUITE_DRIVER, str(args.test_suite_dir), str(folder / "gold.sql"),
                       str(folder / "pred.sql"), prep["db_root"]], _env(args.official_path))
        official["test-suite exec_eval"] = json.loads(out)
    ours: dict[str, list[bool]] = {}
    for label, extra in MODES:
        path = folder / f"verdicts-{len(ours)}.jsonl"
        _run(_score_cmd(folder, prep, None, [*extra, "--verdicts", str(path)]), _env())
        ours[label] = [json.loads(line)["correct"] for line in path.read_text().splitlines()]
        assert len(ours[label]) == n
    return official, ours


COMPATIBLE = (("official", "BIRD evaluation_ex.py"), ("official, --timeout-rule pair", "BIRD evaluation_ex.py"),
              ("test-suite", "test-suite exec_eval"))


def report(official: dict[str, list], ours: dict[str, list], preds: list[str], where: list[str]) -> int:
    """Print the agreement table; returns the disagreements of the official-compatible
    modes, leaving out predictions with no statement (scored invalid by design)."""
    from sqlscout.scoring import has_statement

    n = len(preds)
    print(f"\nper-question agreement on {n} perturbed Spider dev predictions (accuracy in brackets):")
    header = "".join(f"{name + ' (' + format(100 * sum(bool(v) for v in vs) / n, '.2f') + ')':>34}" for name, vs in official.items())
    print(f"  {'sqlscout score --semantics':34}{'accuracy':>10}{header}")
    for label, verdicts in ours.items():
        cells = [f"{sum(bool(a) == bool(b) for a, b in zip(verdicts, theirs)):>27}/{n} " for theirs in official.values()]
        print(f"  {label:34}{100 * sum(verdicts) / n:9.2f} " + "".join(cells))
    failures = 0
    for label, name in COMPATIBLE:
        if name not in official:
            continue
        differ = [i for i, (a, b) in enumerate(zip(ours[label], official[name])) if bool(a) != bool(b)]
        by_design = [i for i in differ if not has_statement(preds[i])]
        failures += len(differ) - len(by_design)
        if by_design:
            print(f"    {label} vs {name}: {len(by_design)} predictions with no statement, credited by the script "
                  "where the gold result is empty and invalid in sqlscout (by design)")
        for i in [i for i in differ if i not in by_design][:10]:
            print(f"    {label} vs {name}: {where[i]}: sqlscout {ours[label][i]}, official {official[name][i]}: {preds[i][:90]}")
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="--num_cpus of BIRD's script")
    parser.add_argument("--bird-script", type=Path, help="BIRD mini-dev's evaluation/evaluation_ex.py")
    parser.add_argument("--test-suite-dir", type=Path, help="a checkout of taoyds/test-suite-sql-eval")
    parser.add_argument("--official-path", help="where the official scripts' dependencies are installed")
    parser.add_argument("--rounds", type=int, default=1,
                        help="fidelity over this many sets of predictions (set r: variant i + r of question i)")
    parser.add_argument("--edge", action="store_true",
                        help="one more set of predictions probing the scripts' rewrites (value, '> =', DISTINCT, ...)")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--skip-fidelity", action="store_true")
    args = parser.parse_args()
    if not args.bird_script and not args.test_suite_dir:
        parser.error("give --bird-script and/or --test-suite-dir (the official scripts are not part of sqlscout)")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        prep = _prepare(args.data, Path(tmp) / "round0")
        print(f"{len(prep['tasks'])} Spider dev questions, predictions = gold perturbed; files in {tmp}")
        if args.bird_script and not args.skip_timing:
            other = Path(tmp) / "timing-other"
            _prepare(args.data, other, 1)
            timing(args, Path(tmp) / "round0", prep, other)
        if not args.skip_fidelity:
            official: dict[str, list] = {}
            ours: dict[str, list] = {}
            preds: list[str] = []
            where: list[str] = []
            for round_ in [*range(args.rounds), *([-1] if args.edge else [])]:
                folder = Path(tmp) / f"round{round_}"
                if round_ != 0:
                    prep = _prepare(args.data, folder, round_)
                theirs, mine = fidelity(args, folder, prep)
                for into, new in ((official, theirs), (ours, mine)):
                    for key, values in new.items():
                        into.setdefault(key, []).extend(values)
                preds += prep["preds"]
                where += [f"set {round_ if round_ >= 0 else 'edge'} question {t.question_id}" for t in prep["tasks"]]
            failures = report(official, ours, preds, where)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
