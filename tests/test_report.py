"""sqlscout report: Markdown, the self-contained HTML page in a real browser, training dirs."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from browser import Browser, find_chromium
from sqlscout.cli.main import app
from sqlscout.backends.scripted import ScriptTurn
from sqlscout.evaluation import EvalConfig, Job, compute_metrics, run_eval, scripted_source
from sqlscout.report import write_report
from test_eval_run import explorer, spider_tasks

HOSTILE = '</script><script>document.title="pwned"</script><img src="http://example.invalid/x.png" onerror="window.pwned=1">'


def hostile(job: Job, turn: ScriptTurn) -> str:
    """Writes markup into its reasoning and its SQL, then submits the gold query."""
    if turn.turn == 0:
        return f"{HOSTILE}\n" + json.dumps({"tool": "run_query", "args": {"sql": f"SELECT '{HOSTILE}'"}})
    return json.dumps({"tool": "submit_sql", "args": {"sql": job.task.gold_sql}})


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    levels = ["easy", "medium", "hard"]
    tasks = [replace(t, difficulty=levels[i % 3]) for i, t in enumerate(spider_tasks(9))]
    config = EvalConfig("spider", "scripted-explorer", samples=2)
    run_eval(tasks, config, scripted_source(explorer), root / "explorer")
    run_eval(tasks[:4], EvalConfig("spider", "scripted-hostile"), scripted_source(hostile), root / "hostile")
    return root / "explorer", root / "hostile", root


@pytest.fixture(scope="module")
def browser():
    executable = find_chromium()
    if executable is None:
        pytest.skip("chromium is not installed and could not be (make test installs it with apt-get install -y chromium)")
    with Browser(executable) as b:
        yield b


def test_markdown_summary_holds_the_metrics(runs: tuple[Path, Path, Path]) -> None:
    explorer_dir, hostile_dir, root = runs
    md_path, html_path = write_report([explorer_dir, hostile_dir], root / "both")
    text = md_path.read_text()
    from sqlscout.evaluation import RunDir

    metrics = compute_metrics(RunDir(explorer_dir).read_records())
    assert f"| execution accuracy (official) | {metrics.accuracy.official * 100:.1f}% | 100.0% |" in text
    assert "## Execution accuracy by difficulty" in text and "| easy |" in text
    assert "| pass@k (official) | @1 " in text
    assert "scripted-hostile" in text and html_path.name == "report.html"


def test_html_is_one_self_contained_file(runs: tuple[Path, Path, Path]) -> None:
    explorer_dir, hostile_dir, root = runs
    _, html_path = write_report([explorer_dir, hostile_dir], root / "both")
    page = html_path.read_text()
    # Our markup references nothing outside the file (the hostile text only exists escaped inside data).
    without_data = re.sub(r'<script type="application/json" id="report-data">.*?</script>', "", page, flags=re.S)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)|@import|url\(""", without_data)
    assert "<svg" in page and "<style>" in page
    for chart in ("accuracy-by-difficulty", "outcome-mix", "rounds-histogram", "calls-histogram", "accuracy-by-condition"):
        assert f'id="{chart}"' in page
    # The data block cannot be closed early by what a model wrote.
    data = page.split('id="report-data">', 1)[1].split("</script>", 1)[0]
    assert "pwned" in data and "</script" not in data


def test_the_page_in_a_browser(runs: tuple[Path, Path, Path], browser: Browser) -> None:
    explorer_dir, hostile_dir, root = runs
    _, html_path = write_report([explorer_dir, hostile_dir], root / "both")
    from sqlscout.evaluation import RunDir

    expected = compute_metrics(RunDir(explorer_dir).read_records()).accuracy.official
    browser.open(html_path.as_uri())
    assert browser.text('#summary-table [data-metric="accuracy-official"][data-run="0"]') == f"{expected * 100:.1f}%"
    assert browser.evaluate("document.querySelectorAll('#episode-list tbody tr').length") == 9
    assert browser.evaluate("document.querySelectorAll('#plots svg').length") >= 5
    # Nothing about an episode is on the page until a question is clicked.
    assert "SELECT" not in (browser.text("#episode-detail") or "")
    # Question 2's first sample explores until the round limit (see explorer): 7 rounds.
    browser.click('#episode-list tbody tr[data-q="2"]')
    detail = browser.text("#episode-detail") or ""
    question = spider_tasks(9)[2]
    assert question.question in detail
    assert question.gold_sql is not None and question.gold_sql.split()[0] in detail
    # Each run's pane shows its episode's SQL, highlighted, next to the gold pane.
    assert browser.evaluate("document.querySelectorAll('.gold-pane code.sql .kw').length") >= 2
    assert browser.evaluate("document.querySelectorAll('.run-pane[data-run=\"0\"] code.sql').length") >= 1
    # Rounds unfold one at a time, or all at once.
    rounds = "document.querySelectorAll('.run-pane[data-run=\"0\"] details.round').length"
    assert browser.evaluate(rounds) == 1
    browser.click('.run-pane[data-run="0"] .next-round')
    assert browser.evaluate(rounds) == 2
    browser.click('.run-pane[data-run="0"] .all-rounds')
    assert browser.evaluate(rounds) == 7
    # The second sample of the question is one click away.
    browser.click('.run-pane[data-run="0"] .samples button:nth-child(2)')
    assert "sample 1" in (browser.text('.run-pane[data-run="0"] .samples button.active') or "")
    # Filtering the list.
    browser.evaluate("const f = document.getElementById('filter-difficulty'); f.value = 'hard'; f.dispatchEvent(new Event('input'));")
    assert browser.evaluate("document.querySelectorAll('#episode-list tbody tr').length") == 3
    assert browser.js_errors() == []
    assert browser.evaluate("document.getElementById('js-errors').textContent") == ""


def test_model_text_is_shown_as_text_never_run(runs: tuple[Path, Path, Path], browser: Browser) -> None:
    _, hostile_dir, root = runs
    _, html_path = write_report([hostile_dir], root / "hostile-report")
    browser.open(html_path.as_uri())
    browser.click('#episode-list tbody tr[data-q="0"]')
    browser.click('.run-pane[data-run="0"] .all-rounds')
    assert HOSTILE in (browser.text("#episode-detail") or "")
    assert browser.evaluate("document.title") == "sqlscout report"
    assert browser.evaluate("window.pwned === undefined && document.querySelectorAll('#episode-detail img').length === 0")
    assert [u for u in browser.requested_urls() if not u.startswith("file:")] == []
    assert browser.js_errors() == []


def write_telemetry(path: Path, steps: int, torn: bool = False) -> None:
    path.mkdir(parents=True, exist_ok=True)
    # step 0: the trainer's starting evaluation, alone on its row
    lines = [json.dumps({"step": 0, "eval/official": 0.2, "eval/strict": 0.2, "eval/executable": 0.5, "eval/submitted": 0.3})]
    for step in range(1, steps + 1):
        t = step / steps
        lines.append(json.dumps({
            "step": step,
            "outcome/equivalent": 0.1 + 0.4 * t, "outcome/executable": 0.3, "outcome/parsable": 0.1,
            "outcome/invalid": 0.5 - 0.4 * t, "episode/rounds": 3 + 3 * t, "episode/tool_calls": 5 + 10 * t,
            "episode/submit_rate": 0.4 + 0.5 * t, "reward/mean": 0.5 + t, "kl": 0.001, "kl_coef": 0.01,
            "time/rollout_s": 300.0, "time/update_s": 200.0, "memory/peak_gb": 12.0 + step / 10,
        }))
        if step % 10 == 0:  # the held-out evaluation: a second row of its step, as the trainer writes it
            lines.append(json.dumps({"step": step, "eval/official": 0.2 + 0.3 * t, "eval/strict": 0.2 + 0.2 * t, "eval/executable": 0.6,
                                     "eval/submitted": 0.3 + 0.6 * t}))
    text = "\n".join(lines) + "\n"
    (path / "telemetry.jsonl").write_text(text + ('{"step": ' if torn else ""))


def test_training_dir_report(tmp_path: Path, browser: Browser) -> None:
    write_telemetry(tmp_path / "train", 40, torn=True)
    md_path, html_path = write_report([tmp_path / "train"], tmp_path / "train")
    text = md_path.read_text()
    assert "## Training: train" in text and "40 training steps, 5 held-out evaluations" in text
    # First window: steps 1-10 (a quarter of 40; the step-0 evaluation is no training
    # step); equivalent share rises from ~0.155 to ~0.455.
    first, last = [line for line in text.splitlines() if line.startswith("| steps ")]
    assert first.startswith("| steps 1–10 | 15.5% |") and last.startswith("| steps 31–40 | 45.5% |")
    # the held-out curve as a table: step 0 and every tenth step, each step's two rows read as one
    held_out = [line for line in text.splitlines() if line.startswith("| ") and line.split("|")[1].strip() in {"0", "10", "20", "30", "40"}]
    assert held_out[0].startswith("| 0 | 20.0% | 20.0% | 50.0% | 30.0% |")
    assert held_out[-1].startswith("| 40 | 50.0% | 40.0% | 60.0% | 90.0% |")
    assert len(held_out) == 5
    page = html_path.read_text()
    for chart in ("train-outcome-mix", "train-episode-shape", "train-submit", "train-reward", "train-kl", "train-time", "train-memory", "train-eval"):
        assert f'id="{chart}"' in page
    browser.open(html_path.as_uri())
    # Four outcome lines, rounds and calls, submit rate, reward, KL and its coefficient,
    # rollout and update seconds, peak memory, and held-out accuracy (official, strict, executes)
    # with the held-out answers submitted.
    assert browser.evaluate("document.querySelectorAll('.training svg polyline').length") == 4 + 2 + 1 + 1 + 2 + 2 + 1 + 4
    assert browser.js_errors() == []


def test_cli_report(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    explorer_dir, hostile_dir, _ = runs
    cli = CliRunner()
    refused = cli.invoke(app, ["report", str(explorer_dir), str(hostile_dir)])
    assert refused.exit_code == 2 and "--out" in refused.output
    done = cli.invoke(app, ["report", str(explorer_dir), str(hostile_dir), "--out", str(tmp_path / "cmp")])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "cmp" / "report.html").is_file()
    missing = cli.invoke(app, ["report", str(tmp_path / "nothing-here")])
    assert missing.exit_code == 2 and "is not a directory" in missing.output
    empty = tmp_path / "empty"
    empty.mkdir()
    neither = cli.invoke(app, ["report", str(empty)])
    assert neither.exit_code == 2 and "neither config.json" in neither.output


def test_reads_what_the_trainer_writes(tmp_path: Path) -> None:
    from sqlscout.train.telemetry import Telemetry

    telemetry = Telemetry(tmp_path / "train", start_step=0, tensorboard=False, wandb="off", wandb_project="-", config={})
    for step in (1, 2, 3):
        telemetry.log({
            "step": step, "outcome/equivalent": 0.25 * step / 3, "outcome/executable": 0.5, "outcome/parsable": 0.0,
            "outcome/invalid": 0.5 - 0.25 * step / 3, "episode/rounds": 4.0, "episode/tool_calls": 6.0 + step, "reward/mean": 0.3,
            **({"eval/official": 0.4, "eval/strict": 0.35} if step == 3 else {}),
        })
    telemetry.close()
    md_path, html_path = write_report([tmp_path / "train"], tmp_path / "out")
    assert "3 training steps, 1 held-out evaluation" in md_path.read_text()
    page = html_path.read_text()
    assert all(f'id="{c}"' in page for c in ("train-outcome-mix", "train-episode-shape", "train-reward", "train-eval"))


TIMING_KEYS = ("prompt_evaluated", "prompt_reused", "prefill_s", "decode_s")


def test_where_the_time_went(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """Per-episode prompt-cache and prefill/decode figures reach the summary; a run
    whose backend reported none (or an older run) shows a dash, not zeros."""
    import shutil

    explorer_dir, _, _ = runs
    timed = tmp_path / "timed"
    shutil.copytree(explorer_dir, timed)
    rows = [json.loads(line) for line in (timed / "episodes.jsonl").read_text().splitlines()]
    for row in rows:
        episode = row["episode"]
        episode.update(prompt_evaluated=100, prompt_reused=300, prefill_s=2.0, decode_s=3.0)
        for index, round_ in enumerate(episode["rounds"]):
            round_.update(prompt_evaluated=100 if index == 0 else 0, prompt_reused=300 if index == 0 else 0)
    (timed / "episodes.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    md_path, _ = write_report([explorer_dir, timed], tmp_path / "out")
    text = md_path.read_text()
    assert "| prompt cache hit rate | – | 75.0% |" in text
    assert "| prompt tokens evaluated per episode | – | 100.00 |" in text
    assert "| prefill time per episode | – | 2.00 s |" in text and "| decode time per episode | – | 3.00 s |" in text


def test_episodes_written_before_the_timing_fields_still_load(runs: tuple[Path, Path, Path]) -> None:
    from sqlscout.env.trace import EpisodeResult

    explorer_dir, _, _ = runs
    episode = json.loads((explorer_dir / "episodes.jsonl").read_text().splitlines()[0])["episode"]
    for key in TIMING_KEYS:
        episode.pop(key)
        for round_ in episode["rounds"]:
            round_.pop(key)
    result = EpisodeResult.from_dict(episode)
    assert (result.prompt_evaluated, result.decode_s, result.rounds[0].prefill_s) == (0, 0.0, 0.0)
    assert EpisodeResult.from_dict(result.to_dict()) == result
