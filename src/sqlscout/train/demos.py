"""Demonstrations: plain-protocol episodes written from a run's own answers, imitated
before GRPO steps (``warmup`` in the config).

GRPO can only reinforce what its samples do. Run 3 of issue 38 showed a policy that,
given a failing query's error, submits the same query again: of the held-out episodes that
read a failing first query, none ever ran a working one afterwards, so no group held an
episode that fixed one and the gradient towards fixing was zero. A demonstration shows
the habit with the policy's own queries:

- **fix**: for a training question on which the run's episodes gave both a query that
  does not run and a right one, the episode runs the failing query alone, reads the
  environment's error (with its "Did you mean"), runs the right query, reads its rows and
  submits it in a reply of its own;
- **tested**: for a question with a right answer, it runs that answer, reads the rows and
  submits it after.

The queries are the policy's own samples (temperature 1, in training); the gold query only
judges them, as the reward does. Every demonstration is played through the real
environment — the scripted backend replaying its replies, in the policy's own tokens and
chat format when training — and kept only when the failing query really fails there, the
answer is submitted through ``submit_sql`` and it scores equivalent to the gold.

Build a file of them from a run's episode summaries::

    python -m sqlscout.train.demos --config CONFIG.yaml --episodes runs/X/episodes.jsonl --out demos.jsonl

Sampled fixes start from queries the policy wrote at temperature 1; its greedy replies,
which evaluation and the preset use, can fail elsewhere and stay there (run 4 reran the
failing query as written). ``--fixes-from`` takes the failing queries from the episodes of
a greedy evaluation on pool questions instead (an evaluator run's ``episodes.jsonl``;
``--evaluate MODEL --eval-out DIR`` runs one, resumably, on every pool question first):
for each question those episodes got wrong, a fix from each failing query they ran to the
question's right sampled query, and its tested demonstration - the states the greedy
policy reaches, shown what to do next (as DAgger trains on the learner's own states).
With ``--gold-fallback`` a question no sampled episode answered right is fixed towards its
gold query (a training question's: the split keeps evaluation databases out of the pool).

``--repair`` takes the rules as the teacher: every failing query the policy wrote (each
failing ``run_query`` of the ``--fixes-from`` greedy episodes and each failing answer in
``--episodes``) is fixed to the assist layer's repair of it (:func:`sqlscout.assist.hints.chained_repair`,
the hint that joins the table a "no such column" names) where that repair is right, else to the
question's right query. Of the dev-report 200 episodes whose first query failed, the assisted
untrained agent answered 20 of 66 and the trained plain preset 1: a fix that is one edit where the error points
shows the plain agent what the rules do, and only after the error (the failing reply is context).

``--after-rerun`` writes each fix from the state a policy that reruns reaches: its failing
query run twice, the same error twice, then the fix (run 11's warm-up taught its greedy
policy to try again after an error, and in 15 of 37 tuning episodes the next query was the
failing one unchanged, until the failed-query limit ended the episode with no answer). Both
failing replies stay untrained context. ``--demos FILE`` takes the demonstrations of a file
this command wrote instead of episodes (``--after-rerun`` then rewrites them), and checks them
anew. Run 12 trained on such fixes and its greedy policy ran queries until the round limit in
38 of 80 tuning episodes (docs/training.md): kept as a tool, not as a recipe.

``--corrupt`` writes the failing query itself, from a right one, the way a small model gets
names wrong: a qualified column moved to another table of the join that lacks it (``no such
column: T2.name``, the evaluation's most common failure) or an unqualified one with its
number changed (``Names`` for ``Name``). The environment's error names the column meant, so
the fix is the one edit the error asks for: recovery as a pattern, not a rewrite. (A name
prefixed with its table, ``singer_Name``, was tried: the error's close matches then name
other columns, ``singer.Song_Name``, and the fix would be a guess.)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from sqlscout.assist.hints import chained_repair
from sqlscout.backends.scripted import ScriptedBackend, ScriptTurn
from sqlscout.env.chat import ChatFormat
from sqlscout.env.sandbox import Database
from sqlscout.env.task import Task
from sqlscout.env.trace import AnswerSource, EpisodeResult
from sqlscout.errors import ConfigError, QueryError
from sqlscout.runner import Rollout, Runner, RunnerConfig
from sqlscout.scoring import RewardConfig, score_sql
from sqlscout.scoring.gold import GoldResults
from sqlscout.train.config import TrainConfig, load_config
from sqlscout.train.questions import load_questions
from sqlscout.train.pool import greedy_on_pool, outside_pool, read_records, run_command
from sqlscout.train.rollout import Group, score_group
from sqlscout.train.states import untrained_replies

__all__ = ["Demo", "after_rerun", "check", "checked", "from_episodes", "corrupted_fixes", "corruptions", "from_greedy", "failing_queries", "gold_query", "repaired_fixes", "most_frequent_right", "untrained_failures", "load_demos", "require_in_pool", "demonstration_groups", "play", "replies", "warmup_batches", "write_demos"]


@dataclass(frozen=True)
class Demo:
    """A demonstration: ``queries`` are run in order, one reply each, and the last is
    submitted in a reply of its own."""

    question_id: str
    queries: tuple[str, ...]

    @property
    def kind(self) -> str:
        return "fix" if len(self.queries) > 1 else "tested"


def replies(demo: Demo) -> list[str]:
    """The model's replies of ``demo``, as the plain protocol's JSON tool calls."""
    call = lambda tool, sql: json.dumps({"tool": tool, "args": {"sql": sql}}, ensure_ascii=False)  # noqa: E731
    return [call("run_query", q) for q in demo.queries] + [call("submit_sql", demo.queries[-1])]


def from_episodes(records: Iterable[dict[str, Any]], *, fixes_per_question: int = 2) -> list[Demo]:
    """Demonstrations from a run's episode summaries (``episodes.jsonl``): per question
    with a right answer, one tested demonstration of its most frequent right query, and a
    fix from each of up to ``fixes_per_question`` distinct failing queries (the most
    frequent first) to it. Unchecked: :func:`check` plays them."""
    right: dict[str, Counter[str]] = defaultdict(Counter)
    failing: dict[str, Counter[str]] = defaultdict(Counter)
    order: dict[str, None] = {}  # questions in first-seen order
    for record in records:
        qid, sql, outcome = record.get("question_id"), record.get("final_sql"), record.get("outcome")
        if not qid or not sql or record.get("dropped"):
            continue
        order.setdefault(qid)
        if outcome == "equivalent":
            right[qid][sql.strip()] += 1
        elif outcome == "parsable":  # parses, does not run
            failing[qid][sql.strip()] += 1
    demos = []
    for qid in order:
        if not right[qid]:
            continue
        best = right[qid].most_common(1)[0][0]
        demos.append(Demo(qid, (best,)))
        demos += [Demo(qid, (bad, best)) for bad, _ in failing[qid].most_common(fixes_per_question)]
    return demos


def from_greedy(records: Iterable[dict[str, Any]], right: dict[str, str]) -> list[Demo]:
    """Demonstrations from a greedy evaluation's episodes (evaluator records on pool
    questions): for each question answered wrong that has a right query in ``right``, a fix
    from each distinct failing ``run_query`` of its episode (in the order run) to that query,
    and the query's tested demonstration. Unchecked: :func:`check` plays them."""
    demos = []
    for record in records:
        qid = str(record.get("key"))
        if (record.get("verdict") or {}).get("outcome") == "equivalent" or qid not in right:
            continue
        episode = EpisodeResult.from_dict(record["episode"])
        bad = [c.args["sql"].strip() for r in episode.rounds for c in r.calls
               if c.tool == "run_query" and not c.ok and isinstance(c.args.get("sql"), str)]  # fmt: skip
        demos.append(Demo(qid, (right[qid],)))
        demos += [Demo(qid, (q, right[qid])) for q in dict.fromkeys(bad) if q and q != right[qid]]
    return demos


def failing_queries(greedy: Iterable[dict[str, Any]], records: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """Per question, the distinct queries the policy wrote that failed: each failing
    ``run_query`` of the greedy episodes ``greedy`` (evaluator records, in the order run),
    then each failing answer (``parsable``) of the run's episode summaries ``records``."""
    found: dict[str, dict[str, None]] = defaultdict(dict)
    for record in greedy:
        episode = EpisodeResult.from_dict(record["episode"])
        for call in (c for r in episode.rounds for c in r.calls):
            if call.tool == "run_query" and not call.ok and isinstance(call.args.get("sql"), str) and call.args["sql"].strip():
                found[str(record.get("key"))][call.args["sql"].strip()] = None
    for record in records:
        if record.get("outcome") == "parsable" and record.get("final_sql") and not record.get("dropped"):
            found[str(record["question_id"])][record["final_sql"].strip()] = None
    return {qid: list(queries) for qid, queries in found.items()}


def repaired_fixes(failing: dict[str, list[str]], right: dict[str, str], tasks: dict[str, Task], *,
                   per_question: int | None = None) -> tuple[list[Demo], int]:
    """A fix from each of ``failing``'s queries (of pool questions in ``tasks``): to the
    assist layer's repair of it when that repair runs and is right (the gold query judges it,
    as the reward does), else to the question's query in ``right``; none where neither is.
    At most ``per_question`` fixes a question, its repairs first (a database whose questions
    the policy fails often would otherwise fill the warm-up). Also how many of the fixes are
    repairs. Unchecked: :func:`check` plays them."""
    demos: list[Demo] = []
    repairs = 0
    databases: dict[str, Database] = {}
    try:
        for qid, queries in failing.items():
            task = tasks.get(qid)
            if task is None:
                continue
            if task.db_path not in databases:
                databases[task.db_path] = Database(task.db_path)
            db = databases[task.db_path]
            repaired = [(bad, _right_repair(db, task, bad)) for bad in queries]
            repaired.sort(key=lambda pair: pair[1] is None)  # stable: the repairs first, each in its order
            fixes = [(bad, fix or right.get(qid), fix is not None) for bad, fix in repaired]
            fixes = [f for f in fixes if f[1] and f[1] != f[0]][:per_question]
            repairs += sum(is_repair for _, _, is_repair in fixes)
            demos += [Demo(qid, (bad, fix)) for bad, fix, _ in fixes]
    finally:
        for db in databases.values():
            db.close()
    return demos, repairs


def after_rerun(demos: Iterable[Demo]) -> list[Demo]:
    """``demos`` with each fix's failing query run twice before its fix (a tested
    demonstration as it is)."""
    return [Demo(d.question_id, (d.queries[0], *d.queries)) if d.kind == "fix" else d for d in demos]


def _right_repair(db: Database, task: Task, sql: str) -> str | None:
    """The assist layer's repair of ``sql``, which fails on ``db``, when it is right for ``task``."""

    def explain(candidate: str) -> str | None:
        try:
            db.compile(candidate)
        except QueryError as error:
            return f"Error: {error}"
        return None

    error = explain(sql)
    found = None if error is None else chained_repair(db.schema, sql, error, explain, task.question)
    if found is None or found.repaired is None:
        return None
    repaired = " ".join(found.repaired.split())
    return repaired if score_sql(db, repaired, task.gold_sql or "").verdict.outcome.value == "equivalent" else None


def most_frequent_right(records: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Per question, its most frequent right query in a run's episode summaries."""
    return {d.question_id: d.queries[0] for d in from_episodes(records, fixes_per_question=0)}


def corruptions(sql: str, columns: dict[str, set[str]]) -> list[str]:
    """Failing variants of ``sql`` (``columns``: each table's column names, lower case), at most
    one of each kind, written into ``sql``'s own text: a qualified column moved to another
    alias of the query whose table lacks it, and an unqualified column of a one-table query
    with its number changed (a final ``s`` added or dropped). A query sqlglot cannot read
    gives none."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except sqlglot.errors.SqlglotError:
        return []
    tables = {t.alias_or_name: t.name.lower() for t in tree.find_all(exp.Table)}
    moved = renamed = None
    for col in tree.find_all(exp.Column):
        name, qualifier = col.name, col.table
        if not name or name == "*":
            continue
        if qualifier and moved is None and qualifier in tables:
            other = next((a for a, t in tables.items() if a != qualifier and name.lower() not in columns.get(t, ())), None)
            written = re.search(rf"\b{re.escape(qualifier)}\.{re.escape(name)}\b", sql)
            if other and written:
                moved = sql[: written.start()] + f"{other}.{name}" + sql[written.end():]
        elif not qualifier and renamed is None and len(tables) == 1:
            table = next(iter(tables.values()))
            written = re.search(rf"(?<![\w.'\"]){re.escape(name)}\b(?!['\"])", sql)
            guess = name[:-1] if name.lower().endswith("s") else name + "s"
            if written and len(guess) > 1 and guess.lower() not in columns.get(table, ()):
                renamed = sql[: written.start()] + written.group(0)[: len(name)].replace(name, guess) + sql[written.end():]
    return [q for q in (moved, renamed) if q and q != sql]


def _moved(demo: Demo) -> bool:
    """Whether ``demo`` is a fix from a column moved to another alias (the failing query
    and the right one differ only in the qualifier before one column)."""
    if demo.kind != "fix":
        return False
    bad, good = demo.queries
    return re.sub(r"\b\w+\.(\w+)", r"\1", bad) == re.sub(r"\b\w+\.(\w+)", r"\1", good) and bad != good


def corrupted_fixes(right: dict[str, str], tasks: dict[str, Task]) -> list[Demo]:
    """For each question with a right query, a fix from each of its :func:`corruptions`."""
    columns_of: dict[str, dict[str, set[str]]] = {}
    demos = []
    for qid, sql in right.items():
        task = tasks.get(qid)
        if task is None:
            continue
        if task.db_path not in columns_of:
            with Database(task.db_path) as db:
                columns_of[task.db_path] = {t.name.lower(): {c.name.lower() for c in t.columns} for t in db.schema.tables}
        demos += [Demo(qid, (bad, sql)) for bad in corruptions(sql, columns_of[task.db_path])]
    return demos


def gold_query(task: Task) -> str:
    """``task``'s gold query as a demonstration writes it: on one line, single-spaced, no final semicolon."""
    return " ".join((task.gold_sql or "").split()).rstrip(";").rstrip()


def play(demos: Sequence[Demo], tasks: Sequence[Task], runner_config: RunnerConfig, *,
         tokenizer: Any | None = None, chat: ChatFormat | None = None) -> tuple[list[Rollout], Runner]:  # fmt: skip
    """Play ``demos`` (``tasks[i]`` is ``demos[i]``'s question) through the environment,
    one episode each, in their order; with ``tokenizer`` (and the sampler's ``chat``) the
    rollouts carry the token ids and segments the trainer's mask reads. The runner is
    returned open (its databases judge the answers); the caller closes it."""
    scripts = [replies(d) for d in demos]

    def script(turn: ScriptTurn) -> str:
        assert turn.episode is not None, "the runner names the episode of every request"
        lines = scripts[turn.episode[0]]
        return lines[min(turn.turn, len(lines) - 1)]

    sampling = dataclasses.replace(runner_config.sampling, logprobs=False)
    runner = Runner(ScriptedBackend(script, tokenizer=tokenizer, chat=chat), dataclasses.replace(runner_config, sampling=sampling))
    rollouts = sorted(runner.run(list(tasks)), key=lambda r: r.index)
    # No sampler drew these tokens: the script's log-probabilities (0, certainty) would
    # turn the update's correction min(pi_old / pi_sampler, cap) into pi_old and weigh
    # every token by how likely the policy already finds it, the unlikely ones, which
    # imitation is for, least. None: no correction.
    return [dataclasses.replace(r, logprobs=[None] * len(r.token_ids)) for r in rollouts], runner


def untrained_failures(demo: Demo, rollout: Rollout) -> Rollout:
    """``rollout`` with the replies that ran ``demo``'s failing queries kept as context, not
    trained: a fix shows what to do after an error, not how to make it. Until run 6 of issue 38
    they were imitated with the rest, so every fix also taught its failing query (run 6's
    written ones, ``Names`` for ``Name``, raised the held-out episodes whose first query
    failed from 11 to 17 of 50)."""
    return untrained_replies(rollout, len(demo.queries) - 1)


def check(demo: Demo, rollout: Rollout, task: Task, db: Database, gold: GoldResults) -> str | None:
    """Why ``rollout`` (``demo`` played on ``task``) is no demonstration, or None when it is:
    every query but the last failed when run, the last ran, it was submitted through
    ``submit_sql`` and it is right."""
    result = rollout.result
    runs = [c for r in result.rounds for c in r.calls if c.tool == "run_query"]
    if len(runs) != len(demo.queries):
        return f"ran {len(runs)} queries, not {len(demo.queries)} (stop: {result.stop_reason.value})"
    if any(c.ok for c in runs[:-1]) or not runs[-1].ok:
        return "the failing query ran, or the right one did not"
    if result.answer_source is not AnswerSource.SUBMIT_SQL or (result.final_sql or "").strip() != demo.queries[-1]:
        return f"not submitted through submit_sql (stop: {result.stop_reason.value})"
    expected = gold.get(db, task.gold_sql or "")[0]
    outcome = score_sql(db, result.final_sql, task.gold_sql or "", gold=expected).verdict.outcome.value
    return None if outcome == "equivalent" else f"scored {outcome}"


def require_in_pool(demos: Sequence[Demo], ids: Iterable[str]) -> None:
    """Refuse demonstrations of questions outside the training pool (question ids ``ids``)."""
    missing = outside_pool((d.question_id for d in demos), ids)
    if missing:
        raise ConfigError(f"{len(missing)} demonstrations name questions the training pool lacks (first: {missing[0]}): "
                          "build them from a run on this config's pool")  # fmt: skip


def _play_checked(demos: Sequence[Demo], tasks: dict[str, Task], runner_config: RunnerConfig, gold: GoldResults, *,
                  tokenizer: Any | None, chat: ChatFormat | None) -> tuple[list[tuple[Demo, Rollout]], Counter[str], Runner]:  # fmt: skip
    """Play ``demos`` and sort them by :func:`check`: the kept ones with their rollouts, why
    the others were left out, and the runner, open (the caller closes it)."""
    questions = [tasks[d.question_id] for d in demos]
    rollouts, runner = play(demos, questions, runner_config, tokenizer=tokenizer, chat=chat)
    kept, dropped = [], Counter[str]()
    try:
        for demo, rollout, task in zip(demos, rollouts, questions):
            why = check(demo, rollout, task, runner.database(task.db_path), gold)
            if why is None:
                kept.append((demo, rollout))
            else:
                dropped[f"{demo.kind}: {why}"] += 1
    except BaseException:
        runner.close()
        raise
    return kept, dropped, runner


def checked(demos: Sequence[Demo], tasks: dict[str, Task], runner_config: RunnerConfig, *,
            tokenizer: Any | None = None, chat: ChatFormat | None = None) -> tuple[list[tuple[Demo, Rollout]], Counter[str]]:  # fmt: skip
    """Play ``demos`` and keep the ones :func:`check` accepts, with why the others were not."""
    require_in_pool(demos, tasks)
    kept, dropped, runner = _play_checked(demos, tasks, runner_config, GoldResults(), tokenizer=tokenizer, chat=chat)
    runner.close()
    return kept, dropped


def warmup_batches(demos: Sequence[Demo], steps: int, seed: int) -> list[list[Demo]]:
    """``demos`` split into ``steps`` batches of about equal size, a question's
    demonstrations in one batch (they share its prompt), questions in an order drawn
    with ``seed`` (so no step holds one source's questions only)."""
    by_question: dict[str, list[Demo]] = {}
    for d in demos:
        by_question.setdefault(d.question_id, []).append(d)
    questions = list(by_question.values())
    random.Random(seed).shuffle(questions)
    size = -(-len(demos) // max(steps, 1))
    batches: list[list[Demo]] = [[]]
    for group in questions:
        if len(batches[-1]) >= size and len(batches) < steps:
            batches.append([])
        batches[-1] += group
    return batches


def demonstration_groups(batch: Sequence[Demo], tasks: dict[str, Task], pool_index: dict[str, int],
                         runner_config: RunnerConfig, reward: RewardConfig, gold: GoldResults, *,
                         tokenizer: Any, chat: ChatFormat | None) -> tuple[list[Group], Counter[str]]:  # fmt: skip
    """``batch`` played in the policy's tokens as groups (one per question) to imitate:
    the ones :func:`check` accepts, with advantage 1; the reasons the others were left out."""
    kept, dropped, runner = _play_checked(batch, tasks, runner_config, gold, tokenizer=tokenizer, chat=chat)
    try:
        by_question: dict[str, list[Rollout]] = {}
        for demo, rollout in kept:
            by_question.setdefault(demo.question_id, []).append(untrained_failures(demo, rollout))
        groups = []
        for qid, played in by_question.items():
            scored, rewards = score_group(runner, tasks[qid], played, reward, gold)
            groups.append(Group(tasks[qid], pool_index[qid], played, scored, rewards, [1.0] * len(played), demonstration=True))
    finally:
        runner.close()
    return groups, dropped


def write_demos(path: Path, demos: Sequence[Demo], tasks: dict[str, Task]) -> None:
    with path.open("w") as f:
        for d in demos:
            task = tasks[d.question_id]
            row = {"question_id": d.question_id, "kind": d.kind, "db_id": task.db_id, "question": task.question,
                   "queries": list(d.queries)}  # fmt: skip
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def load_demos(path: str | Path) -> list[Demo]:
    """The demonstrations of a file :func:`write_demos` wrote."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no demonstrations file at {path}: build one with `python -m sqlscout.train.demos`")
    demos = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            demos.append(Demo(str(row["question_id"]), tuple(row["queries"])))
        except (ValueError, KeyError, TypeError) as e:
            raise ConfigError(f"{path}:{n}: not a demonstration ({e}): rebuild the file with `python -m sqlscout.train.demos`") from e
    if not demos:
        raise ConfigError(f"{path} holds no demonstrations")
    return demos


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sqlscout.train.demos", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, help="the training config whose pool the episodes' questions are in")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--episodes", nargs="+", help="episode summaries (episodes.jsonl[.gz]) of runs on that pool")
    source.add_argument("--demos", metavar="FILE", help="a demonstrations file this command wrote: its demonstrations again (with --after-rerun, rewritten), checked anew")
    parser.add_argument("--out", required=True, help="the demonstrations file to write (JSON lines)")
    parser.add_argument("--fixes-per-question", type=int, default=2, help="at most this many fixes a question (its most frequent failing queries; with --repair, its repairs first)")
    parser.add_argument("--fixes-from", nargs="+", default=None,
                        help="a greedy evaluation's episodes.jsonl on pool questions: fixes from its failing queries instead")
    parser.add_argument("--evaluate", metavar="MODEL", default=None,
                        help="first run MODEL (e.g. a checkpoint shipped as a preset) greedily on every pool question into --eval-out, and take fixes from it")
    parser.add_argument("--eval-out", metavar="DIR", default=None, help="with --evaluate: its run directory (resumed when run again)")
    parser.add_argument("--corrupt", action="store_true",
                        help="fixes from failing queries written from the right ones (a column moved to the wrong table, a name guessed), with their tested demonstrations")
    parser.add_argument("--repair", action="store_true",
                        help="fixes from every failing query of --fixes-from and --episodes, each to the assist layer's repair of it where that is right, else to the question's right query (fixes only)")
    parser.add_argument("--after-rerun", action="store_true",
                        help="each fix runs its failing query twice before the fix (the state a policy that reruns a failing query reaches)")
    parser.add_argument("--max-questions", type=int, default=None,
                        help="with --corrupt: at most this many questions, those with a join's fix first")
    parser.add_argument("--gold-fallback", action="store_true",
                        help="with --fixes-from or --corrupt: where no sampled answer was right, the question's gold query is the right one")
    return run_command(_build, parser.parse_args(argv))


def _build(args: argparse.Namespace) -> int:
    """The command's work: the demonstrations of ``args.episodes`` checked and written."""
    if args.evaluate and not args.eval_out:
        raise ConfigError("--evaluate needs --eval-out, the directory its episodes go to")
    config = load_config(args.config)
    tasks = {t.question_id: t for t in load_questions(config.data)}
    if args.demos:
        demos = load_demos(args.demos)
        require_in_pool(demos, tasks)  # the others are built from the pool's questions
        return _write(args, config, tasks, demos)
    records = [r for p in args.episodes for r in read_records(Path(p))]
    if args.evaluate:
        args.fixes_from = [*(args.fixes_from or []), str(greedy_on_pool(config, args.evaluate, args.eval_out))]
    right = most_frequent_right(records)
    if args.gold_fallback:
        right = {**{q: gold_query(t) for q, t in tasks.items() if t.gold_sql}, **right}
    if args.corrupt:
        demos = [Demo(q, (sql,)) for q, sql in right.items() if q in tasks] + corrupted_fixes(right, tasks)
        by_question: dict[str, list[Demo]] = {}
        for d in demos:
            by_question.setdefault(d.question_id, []).append(d)
        fixed = [ds for ds in by_question.values() if len(ds) > 1]  # questions with a fix
        if args.max_questions is not None and len(fixed) > args.max_questions:
            # a fix of a join first (the held-out failures are joins), then a random draw
            random.Random(config.seed).shuffle(fixed)
            fixed.sort(key=lambda ds: not any(_moved(d) for d in ds))
            fixed = fixed[: args.max_questions]
        demos = [d for ds in fixed for d in ds]
    elif args.repair:
        greedy = [r for p in args.fixes_from or [] for r in read_records(Path(p))]
        demos, repairs = repaired_fixes(failing_queries(greedy, records), right, tasks, per_question=args.fixes_per_question)
        print(f"{repairs} of {len(demos)} fixes are the rules' repairs")
    elif args.fixes_from:
        greedy = [r for p in args.fixes_from for r in read_records(Path(p))]
        demos = [d for d in from_greedy(greedy, right) if d.question_id in tasks]
    else:
        demos = [d for d in from_episodes(records, fixes_per_question=args.fixes_per_question) if d.question_id in tasks]
    return _write(args, config, tasks, demos)


def _write(args: argparse.Namespace, config: TrainConfig, tasks: dict[str, Task], demos: list[Demo]) -> int:
    """``demos`` (rewritten after a rerun with ``--after-rerun``) checked in the environment and written."""
    if args.after_rerun:
        demos = after_rerun(demos)
    kept, dropped = checked(demos, tasks, config.rollout.runner_config(config.seed))
    write_demos(Path(args.out), [d for d, _ in kept], tasks)
    kinds = Counter(d.kind for d, _ in kept)
    print(f"{len(kept)} of {len(demos)} demonstrations kept ({kinds['fix']} fix, {kinds['tested']} tested) -> {args.out}")
    for why, n in dropped.most_common():
        print(f"  dropped {n}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
