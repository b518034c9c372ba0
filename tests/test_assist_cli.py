"""The help on the command line: ``--assist``, ``--assist-set``, ``--set``, ``sqlscout rules``,
and the version a run records, derived from the profile, refusing a resume under other help."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import REPO, SPIDER
from sqlscout.assist import PROFILES, RULES, Profile, get_profile, load_profile
from sqlscout.cli.main import app
from sqlscout.errors import ConfigError


def eval_args(model: Path, out: Path, *extra: str) -> list[str]:
    return [
        "eval", "--benchmark", "spider", "--data", str(SPIDER), "--missing-db", "skip",
        "--model", str(model), "--backend", "hf", "--limit", "1", "--select", "first",
        "--set", "max_rounds=1", "--set", "max_turn_tokens=8", "--max-batch", "1",
        "--cache-dir", str(out.parent / "cache"), "--out", str(out), *extra,
    ]  # fmt: skip


def test_rules_lists_every_rule_and_profile_as_a_user_runs_it() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sqlscout.cli.main", "rules", "--json"], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert list(listing["rules"]) == list(RULES)
    assert set(listing["profiles"]) == set(PROFILES)
    assert listing["profiles"]["none"]["rules"] == {} and listing["profiles"]["none"]["version"] == "none"
    assert listing["rules"]["draft"]["params"]["accept"]["default"] == "runs"


def test_eval_lists_at_most_30_options() -> None:
    import typer.main

    from sqlscout.cli.main import load_command

    command = load_command("eval")
    options = [p for p in command.params if p.param_type_name == "option"]
    assert len(options) + 1 <= 30, [p.name for p in options]  # and --help


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--assist", "nosuch"], "unknown assist profile 'nosuch'"),
        (["--assist-set", "nosuch=on"], "unknown assist rule 'nosuch'"),
        (["--assist-set", "draft.nosuch=1"], "rule draft has no parameter"),
        (["--assist-set", "draft.accept=maybe"], "accept must be one of runs, rows"),
        (["--assist-set", "constrain.reasoning_lines=lots"], "constrain.reasoning_lines"),
        (["--assist-set", "repair_hints"], "--assist-set takes RULE=on|off or RULE.PARAM=VALUE"),
        (["--assist-set", "constrain=off"], "needs constrain"),
        (["--set", "max_rounds=0"], "max_rounds must be >= 1"),
        (["--set", "max_rounds=many"], "--set max_rounds"),
        (["--set", "nosuch=1"], "--set takes KEY=VALUE with KEY one of"),
        (["--set", "temperature=-1"], "temperature must be >= 0"),
    ],
)
def test_bad_help_settings_are_one_line_errors(extra: list[str], message: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, eval_args(Path("qwen2.5-coder-0.5b"), tmp_path / "run", "--assist", "guided", *extra)
        if "--assist" not in extra else eval_args(Path("qwen2.5-coder-0.5b"), tmp_path / "run", *extra),
    )
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2 and len(errors) == 1 and message in errors[0], result.output


def test_a_resume_under_other_help_is_refused(tiny_model_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = CliRunner().invoke(app, eval_args(tiny_model_dir, out, "--assist", "constrained"))
    assert first.exit_code == 0, first.output
    stored = json.loads((out / "config.json").read_text())
    version = get_profile("constrained").episode_version("sqlscout-prompt-3")
    assert stored["settings"]["prompt_version"] == version and stored["settings"]["assist"]["name"] == "constrained"
    again = CliRunner().invoke(app, eval_args(tiny_model_dir, out, "--assist", "constrained", "--resume"))
    assert again.exit_code == 0, again.output
    other = CliRunner().invoke(
        app, eval_args(tiny_model_dir, out, "--assist", "constrained", "--assist-set", "constrain.reasoning_lines=1", "--resume")
    )
    assert other.exit_code != 0 and "prompt_version" in other.output, other.output


def test_a_profile_file_starts_from_a_base_and_changes_rules(tmp_path: Path) -> None:
    path = tmp_path / "lean.yaml"
    path.write_text("name: lean\nbase: draft\nrules:\n  end_on_repeat: false\n  constrain: {reasoning_lines: 1}\n")
    lean = load_profile(str(path))
    assert lean.name == "lean" and "end_on_repeat" not in lean.rules and lean.rules["constrain"].reasoning_lines == 1
    assert set(lean.rules) == set(get_profile("draft").rules) - {"end_on_repeat"}
    assert lean.version() != get_profile("draft").version()
    path.write_bytes(b"name: \xff\n")
    with pytest.raises(ConfigError, match="cannot read the assist profile"):
        load_profile(str(path))
    path.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="a profile file holds a mapping"):
        load_profile(str(path))


def test_the_version_follows_the_rules_source_and_parameters() -> None:
    base = Profile.build("p", {"constrain": True, "repair_hints": True})
    assert base.version() == Profile.build("p", {"repair_hints": True, "constrain": True}).version()  # order-free
    assert base.version() != Profile.build("p", {"constrain": {"reasoning_lines": 0}, "repair_hints": True}).version()
    assert base.version(single_shot=True).startswith("constrain@")  # single-shot: only what acts on it
    from sqlscout.assist.profile import _sources

    # repair_hints runs the hint modules: their text is part of its version
    assert any("def chained_repair" in s for s in _sources(RULES["repair_hints"]))
    assert not any("def chained_repair" in s for s in _sources(RULES["submit_hint"]))


def test_a_rule_that_needs_another_is_refused_alone() -> None:
    with pytest.raises(ConfigError, match="rule guided_start needs constrain"):
        Profile.build("p", {"guided_start": True})


def test_a_run_stored_before_the_layer_resumes_only_where_it_ran_no_help(tiny_model_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert CliRunner().invoke(app, eval_args(tiny_model_dir, out, "--assist", "none")).exit_code == 0
    path = out / "config.json"
    stored = json.loads(path.read_text())
    old = dict(stored)
    old["settings"] = {k: v for k, v in stored["settings"].items() if k != "assist"}
    retired = {"constrain": False, "query_hints": False, "fresh_start": False, "reasoning_lines": 3, "example_values": 0}
    old["settings"]["episode"] = {**stored["settings"]["episode"], **retired}
    path.write_text(json.dumps(old))
    again = CliRunner().invoke(app, eval_args(tiny_model_dir, out, "--assist", "none", "--resume"))
    assert again.exit_code == 0, again.output
    old["settings"]["episode"]["constrain"] = True  # it ran with help: not the same run
    path.write_text(json.dumps(old))
    refused = CliRunner().invoke(app, eval_args(tiny_model_dir, out, "--assist", "none", "--resume"))
    assert refused.exit_code != 0 and "constrain" in refused.output, refused.output
