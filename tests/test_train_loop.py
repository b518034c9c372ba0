"""The training loop end to end on real Spider databases: the tiny-cpu preset through
the CLI, exact resume, equal-reward groups resampled."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from sqlscout.backends.offline_tokenizers import qwen3_5_tokenizer
from sqlscout.backends.scripted import ScriptedBackend, ScriptTurn
from sqlscout.cli.main import app
from sqlscout.errors import ConfigError
from sqlscout.train.checkpoint import latest_checkpoint
from sqlscout.train.config import config_from_dict, load_config
from sqlscout.train.loop import train
from sqlscout.train.telemetry import STEP_KEYS

from conftest import SPIDER


pytestmark = pytest.mark.usefixtures("one_torch_thread")

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "configs" / "tiny-cpu.yaml"

# What `sqlscout report` plots and the brief promises, per step.
REQUIRED = {
    "step", "outcome/equivalent", "outcome/executable", "outcome/parsable", "outcome/invalid", "episode/rounds",
    "episode/tool_calls", "episode/calls_per_round", "reward/mean", "reward/std", "kl", "kl_coef", "clip_frac",
    "entropy", "tokens/generated", "curriculum/mean_key", "curriculum/beta", "lr", "throughput/tokens_per_s",
    "time/step_s",
}  # fmt: skip


def tiny_config(tmp_path: Path, **sections) -> dict:
    data = yaml.safe_load(TINY.read_text())
    data["data"]["path"] = str(SPIDER)
    data["out"] = str(tmp_path / "run")
    for key, value in sections.items():
        if isinstance(value, dict):
            data.setdefault(key, {}).update(value)
        else:
            data[key] = value
    return data


def rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "telemetry.jsonl").read_text().splitlines()]


def test_tiny_cpu_preset_two_steps_through_the_cli(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(tiny_config(tmp_path)))
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["train", "--config", str(config), "--max-steps", "2", "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "step 2:" in result.output
    telemetry = rows(out)
    assert [r["step"] for r in telemetry] == [1, 2]
    for row in telemetry:
        assert REQUIRED <= set(row) and set(STEP_KEYS) <= set(row)
        shares = [row[f"outcome/{o}"] for o in ("equivalent", "executable", "parsable", "invalid")]
        assert sum(shares) == pytest.approx(1.0)
        assert row["episodes"] == 8  # 2 questions x a group of 4
        assert row["tokens/generated"] > 0 and row["time/step_s"] > 0
    assert telemetry[0]["curriculum/beta"] == -1.0 and telemetry[1]["curriculum/beta"] == pytest.approx(-0.5)
    assert (out / "telemetry.csv").read_text().count("\n") == 3
    assert any((out / "tensorboard").iterdir())
    recorded = load_config(out / "config.yaml")
    assert recorded.steps == 2 and recorded.rollout.group_size == 4
    checkpoint = latest_checkpoint(out)
    assert checkpoint is not None and checkpoint.name == "step-000002"
    assert (checkpoint / "model" / "config.json").exists() and (checkpoint / "accelerate" / "optimizer.bin").exists()
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 16 and {e["step"] for e in episodes} == {1, 2}


def test_print_config_shows_every_default_and_bad_configs_name_the_field(tmp_path):
    result = CliRunner().invoke(app, ["train", "--print-config"])
    assert result.exit_code == 0
    shown = yaml.safe_load(result.output)
    assert shown["loss"] == {"clip_low": 0.2, "clip_high": 0.28, "is_cap": 2.0, "aggregation": "constant",
                             "normalizer": 1024.0, "advantage_std": False, "temperature": None}  # fmt: skip
    assert shown["rollout"]["group_size"] == 8 and shown["rollout"]["questions_per_step"] == 18
    assert shown["kl"]["mode"] == "adaptive" and shown["kl"]["target"] == 0.005
    bad = tmp_path / "bad.yaml"
    bad.write_text("optim:\n  lr: -1\n")
    result = CliRunner().invoke(app, ["train", "--config", str(bad)])
    assert result.exit_code == 2 and f"{bad}: optim.lr: input should be greater than 0, got -1" in result.output
    bad.write_text("rollout:\n  groups: 8\n")
    result = CliRunner().invoke(app, ["train", "--config", str(bad)])
    assert result.exit_code == 2 and f"{bad}: rollout.groups: unknown field" in result.output
    result = CliRunner().invoke(app, ["train", "--config", str(REPO / "configs" / "tiny-cpu.yaml"), "--amend", "--fresh"])
    assert result.exit_code == 2 and "--amend continues a run and --fresh starts one over" in result.output


def test_presets_load():
    recipe = load_config(REPO / "configs" / "sqale-qwen3.5-2b.yaml")
    assert recipe.rollout.group_size == 8 and recipe.rollout.questions_per_step == 18
    assert (recipe.loss.clip_low, recipe.loss.clip_high, recipe.loss.normalizer) == (0.2, 0.28, 1024.0)
    assert recipe.kl.mode == "adaptive" and recipe.kl.target == 0.005
    assert recipe.optim.lr == 1e-5 and recipe.optim.warmup_ratio == 0.05 and recipe.optim.schedule == "cosine"
    assert recipe.rollout.episode.token_budget == 24_576 and recipe.model.gradient_checkpointing
    assert (recipe.rollout.sampling.temperature, recipe.rollout.sampling.top_p, recipe.rollout.sampling.top_k) == (0.6, 0.95, 20)
    assert set(recipe.data.difficulties) == {"simple", "moderate", "hard"} and recipe.curriculum.strength != 0


# -- exact resume, with a scripted sampler so that every step updates the policy ------


def scripted_backend(tasks_by_question: dict[str, str]) -> ScriptedBackend:
    """Submits the gold SQL, a wrong query or nothing, depending on the episode's seed,
    so groups have different rewards and every step trains."""

    def reply(turn: ScriptTurn) -> str:
        gold = next(sql for q, sql in tasks_by_question.items() if q in turn.prompt)
        choice = (turn.params.seed or 0) % 3
        sql = [gold, "SELECT 1", None][choice]
        return json.dumps({"tool": "submit_sql", "args": {"sql": sql}}) if sql else "I do not know."

    return ScriptedBackend(reply, tokenizer=qwen3_5_tokenizer())


class Interrupted(Exception):
    pass


def _questions(cfg) -> dict[str, str]:
    from sqlscout.train.questions import load_questions

    return {t.question: t.gold_sql for t in load_questions(cfg.data)}


def test_a_pool_from_several_sources_keeps_each_ones_filters_and_ids_apart(tmp_path):
    """``data.also``: Spider's questions and the ones ``sqlscout questions`` wrote (checked
    by execution; the unchecked ones left out) in one training pool."""
    from sqlscout.train.questions import load_questions

    written = tmp_path / "written.jsonl"
    written.write_text(
        json.dumps({"question_id": "0", "db_id": "concert_singer", "question": "How many singers are there?",
                    "query": "SELECT count(*) FROM singer", "checked": True}) + "\n"
        + json.dumps({"question_id": "1", "db_id": "concert_singer", "question": "Which singers?",
                      "query": "SELECT name FROM singer WHERE age > 40", "checked": False}) + "\n"
    )  # fmt: skip
    data = tiny_config(tmp_path)["data"]
    data["also"] = [{"benchmark": "jsonl", "path": str(written), "db_root": str(SPIDER / "database"), "split": None}]
    pool = load_questions(config_from_dict({**tiny_config(tmp_path), "data": data}).data)
    spider = load_questions(config_from_dict(tiny_config(tmp_path)).data)
    assert pool[: len(spider)] == spider and len(pool) == len(spider) + 1
    assert (pool[-1].question_id, pool[-1].gold_sql) == ("1:0", "SELECT count(*) FROM singer")
    assert len({t.question_id for t in pool}) == len(pool)
    with pytest.raises(ConfigError, match=r"data\.also\.0\.benchmark"):
        config_from_dict({**tiny_config(tmp_path), "data": {**data, "also": [{"benchmark": "nope"}]}})


def test_resume_after_a_crash_matches_an_uninterrupted_run(tmp_path):
    base = tiny_config(tmp_path, steps=4, checkpoint={"every": 2, "keep": 2}, telemetry={"tensorboard": False})
    base["rollout"]["episode"].update(max_rounds=1, max_turn_tokens=256)
    base["rollout"]["group_size"] = 3  # room for a scripted submit_sql call
    base["model"]["random_init"].update(num_hidden_layers=2, layer_types=["linear_attention", "full_attention"])
    whole = config_from_dict({**base, "out": str(tmp_path / "whole")})
    backend = scripted_backend(_questions(whole))
    train(whole, backend=backend)

    broken = config_from_dict({**base, "out": str(tmp_path / "broken")})

    def crash_after_two(row: dict) -> None:
        if row["step"] == 3:  # dies during step 3's bookkeeping; step 3's row is on disk, its checkpoint is not
            raise Interrupted

    with pytest.raises(Interrupted):
        train(broken, backend=backend, on_step=crash_after_two)
    assert latest_checkpoint(tmp_path / "broken").name == "step-000002"
    train(broken, backend=backend)  # resumes from step 2

    expected, got = rows(tmp_path / "whole"), rows(tmp_path / "broken")
    assert [r["step"] for r in got] == [1, 2, 3, 4]  # the crashed run's step 3 row was replaced
    episodes = [(tmp_path / d / "episodes.jsonl").read_text() for d in ("whole", "broken")]
    assert episodes[0] == episodes[1]  # step 3's episodes are not there twice
    assert sum(r["tokens/trained"] for r in expected) > 0  # the policy really was updated
    timing = {"time/rollout_s", "time/update_s", "time/step_s", "throughput/tokens_per_s", "memory/peak_gb"}  # the machine's, not the run's
    for a, b in zip(expected, got):
        for key in set(a) - timing:
            assert b[key] == pytest.approx(a[key], rel=1e-6, abs=1e-9), (a["step"], key)


@pytest.mark.parametrize("mode,rounds", [("keep", 1), ("resample", 3)])
def test_equal_reward_groups_are_left_out_or_resampled(tmp_path, mode, rounds):
    cfg = config_from_dict(
        tiny_config(tmp_path, steps=1, rollout={"equal_groups": mode, "max_resample_rounds": 2, "episode": {"max_rounds": 1, "max_turn_tokens": 256}},
                    telemetry={"tensorboard": False}, checkpoint={"every": 0})  # fmt: skip
    )
    questions = _questions(cfg)

    def always_right(turn: ScriptTurn) -> str:
        gold = next(sql for q, sql in questions.items() if q in turn.prompt)
        return json.dumps({"tool": "submit_sql", "args": {"sql": gold}})

    run = train(cfg, backend=ScriptedBackend(always_right, tokenizer=qwen3_5_tokenizer()))
    # Every group is uniform: none is trained; resampling draws two more rounds of questions.
    assert run.last["episodes"] == rounds * 2 * 4
    assert run.last["groups/uniform"] == 1.0 and run.last["tokens/trained"] == 0
    assert run.last["outcome/equivalent"] == 1.0 and run.last["reward/mean"] == 3.0


def test_lora_run_with_periodic_evaluation_on_held_out_questions(tmp_path):
    data = tiny_config(
        tmp_path, steps=2, eval={"every": 2, "held_out": 3, "questions": 3},
        checkpoint={"every": 0}, telemetry={"tensorboard": False},
    )  # fmt: skip
    data["rollout"]["episode"].update(max_rounds=1, max_turn_tokens=256)
    data["rollout"]["group_size"] = 3
    data["model"]["lora"] = {"enabled": True, "r": 4, "alpha": 8}
    data["optim"]["warmup_ratio"] = 0.0  # step 1 must move the adapters for step 2 to see a KL
    cfg = config_from_dict(data)
    run = train(cfg, backend=scripted_backend(_questions(cfg)))
    telemetry = rows(Path(cfg.out))
    # the training row of a step, then its evaluation's (after the checkpoint)
    assert [(r["step"], "eval/official" in r) for r in telemetry] == [(0, True), (1, False), (2, False), (2, True)]
    assert set(telemetry[0]) == {"step"} | {k for k in telemetry[0] if k.startswith("eval/")}  # the starting point
    assert telemetry[0]["eval/questions"] == 3 and 0.0 <= telemetry[0]["eval/submitted"] <= 1.0
    last = {**telemetry[-2], **telemetry[-1]}
    assert last["eval/questions"] == 3 and 0.0 <= last["eval/official"] <= 1.0
    assert last["tokens/trained"] > 0 and last["grad_norm"] > 0  # the adapters train
    assert last["tokens/computed"] >= last["tokens/trained"] and last["update/recomputed"] == 0
    assert 0 < last["memory/peak_gb"] < 64  # the step's own peak, in GB
    assert last["kl"] > 0  # the reference is the same model with its adapters off
    for step in ("step-000000", "step-000002"):
        assert len((Path(cfg.out) / "eval" / step / "episodes.jsonl").read_text().splitlines()) == 3
    model_dir = latest_checkpoint(Path(cfg.out)) / "model"
    assert (model_dir / "adapter_config.json").exists()  # adapters alone
    assert run.last == last


def test_an_evaluation_cut_short_resumes_on_the_checkpoint_it_follows(tmp_path):
    """The held-out evaluation runs after its step's checkpoint: a run stopped during it
    continues it on the same weights, keeping what it finished, and the report reads the
    step's two rows as one."""
    from sqlscout.report.runs import load_train_run

    data = tiny_config(tmp_path, steps=1, eval={"every": 1, "held_out": 3, "questions": 3}, telemetry={"tensorboard": False})
    data["rollout"]["episode"].update(max_rounds=1, max_turn_tokens=256)
    cfg = config_from_dict(data)
    backend = scripted_backend(_questions(cfg))
    train(cfg, backend=backend)
    out = Path(cfg.out)
    episodes = out / "eval" / "step-000001" / "episodes.jsonl"
    finished = episodes.read_text().splitlines()
    assert len(finished) == 3
    # Stopped during step 1's evaluation: its telemetry row and last episode never written.
    telemetry = (out / "telemetry.jsonl").read_text().splitlines()
    (out / "telemetry.jsonl").write_text("".join(line + "\n" for line in telemetry if not ('"step": 1' in line and "eval/" in line)))
    episodes.write_text("".join(line + "\n" for line in finished[:2]))
    train(cfg, backend=backend)
    again = episodes.read_text().splitlines()
    assert again[:2] == finished[:2] and len(again) == 3  # two kept as they were, one run
    assert len(json.loads((out / "eval" / "step-000001" / "config.json").read_text())["sessions"]) == 2
    steps = load_train_run(out, "run").steps
    assert [s["step"] for s in steps] == [0, 1]
    assert steps[1]["eval/questions"] == 3 and "reward/mean" in steps[1]


def test_the_weights_of_an_evaluated_step_outlive_its_pruned_checkpoint(tmp_path):
    """Past ``checkpoint.keep``, a checkpoint goes, but an evaluated step keeps its
    ``model/`` (what shipping needs), without the state a resume would take it for."""
    data = tiny_config(tmp_path, steps=3, eval={"every": 2, "held_out": 2, "questions": 2},
                       checkpoint={"every": 1, "keep": 1}, telemetry={"tensorboard": False})  # fmt: skip
    data["rollout"]["episode"].update(max_rounds=1, max_turn_tokens=256)
    data["model"]["lora"] = {"enabled": True, "r": 4, "alpha": 8}
    cfg = config_from_dict(data)
    train(cfg, backend=scripted_backend(_questions(cfg)))
    root = Path(cfg.out) / "checkpoints"
    assert sorted(p.name for p in root.iterdir()) == ["step-000002", "step-000003"]  # step 1 went whole
    assert [p.name for p in (root / "step-000002").iterdir()] == ["model"]
    assert (root / "step-000002" / "model" / "adapter_config.json").is_file()
    assert latest_checkpoint(Path(cfg.out)).name == "step-000003"
    (root / "step-000003" / "trainer_state.json").unlink()  # an unfinished last checkpoint
    assert latest_checkpoint(Path(cfg.out)) is None  # step 2 is no place to resume from


def test_a_run_starts_from_another_runs_adapters_and_resumes_without_them(tmp_path):
    """``model.lora.init``: a fresh run takes trained adapters (a run's checkpoints can be
    lost with its machine; its shipped adapters are not); a resumed one its checkpoint's."""
    import shutil

    from safetensors.torch import load_file

    from sqlscout.train.model import build_policy

    data = tiny_config(tmp_path, steps=1, checkpoint={"every": 1, "keep": 1}, telemetry={"tensorboard": False})
    data["rollout"]["episode"].update(max_rounds=1, max_turn_tokens=256)
    data["rollout"]["group_size"] = 3
    data["model"]["lora"] = {"enabled": True, "r": 4, "alpha": 8}
    data["optim"]["warmup_ratio"] = 0.0
    first = config_from_dict(data)
    backend = scripted_backend(_questions(first))
    train(first, backend=backend)
    shutil.copytree(latest_checkpoint(Path(first.out)) / "model", tmp_path / "init")
    trained = load_file(str(tmp_path / "init" / "adapter_model.safetensors"))
    assert any(float(w.abs().sum()) > 0 for k, w in trained.items() if "lora_B" in k)  # step 1 moved the adapters

    data["model"]["lora"]["init"] = str(tmp_path / "init")
    second = config_from_dict({**data, "out": str(tmp_path / "second"), "steps": 2})
    policy = build_policy(second.model, kl_enabled=True, seed=second.seed)
    own = {k.replace(".default.", "."): v for k, v in policy.model.state_dict().items() if "lora_" in k}
    assert set(own) == set(trained) and all(torch_equal(own[k], trained[k]) for k in trained)

    def stop_after_one(row: dict) -> None:
        if row["step"] == 1:
            raise Interrupted

    with pytest.raises(Interrupted):
        train(second, backend=backend, on_step=stop_after_one)
    shutil.rmtree(tmp_path / "init")  # a resumed run reads its checkpoint, not the adapters it started from
    train(second, backend=backend)
    assert [r["step"] for r in rows(tmp_path / "second")] == [1, 2]


def torch_equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a, b))


def test_a_steps_peak_memory_is_its_own():
    from sqlscout.train.memory import peak_memory_gb, reset_peak_memory

    reset_peak_memory()
    base = peak_memory_gb()
    held = bytearray(300_000_000)
    assert peak_memory_gb() > base + 0.29
    del held
    reset_peak_memory()  # the next step does not inherit this one's peak (Linux)
    assert peak_memory_gb() < base + 0.1 or not Path("/proc/self/clear_refs").exists()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads resident memory from /proc (Linux)")
def test_memory_torch_freed_goes_back_to_the_system():
    """What an update frees stays in glibc's heap (the 0.5B run kept 14.5 GB resident
    through its rollouts) until the trainer trims it."""
    import gc

    import torch

    from sqlscout.train.memory import trim_heap

    def resident_gb() -> float:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / 1e9
        raise AssertionError("no VmRSS")

    trim_heap()
    before = resident_gb()
    for _ in range(3):  # activations of varied sizes, allocated and freed as an update does
        tensors = [torch.randn(1000 + (i * 37) % 500, 1024) for i in range(150)]
        del tensors
        gc.collect()
    trim_heap()
    assert resident_gb() < before + 0.2


def _one_step_run(tmp_path):
    """A one-step run, trained: (its config as data, its config, its backend)."""
    data = tiny_config(tmp_path, steps=1, telemetry={"tensorboard": False})
    data["rollout"]["episode"].update(max_rounds=1, max_turn_tokens=256)
    cfg = config_from_dict(data)
    backend = scripted_backend(_questions(cfg))
    train(cfg, backend=backend)
    return data, cfg, backend


def test_a_run_is_not_continued_with_other_settings(tmp_path):
    data, cfg, backend = _one_step_run(tmp_path)
    changed = config_from_dict({**data, "steps": 2, "loss": {**data.get("loss", {}), "clip_high": 0.3}})
    with pytest.raises(ConfigError, match=r"other settings \(loss.clip_high\)"):
        train(changed, backend=backend)
    longer = config_from_dict({**data, "steps": 2})  # more steps is fine: it continues
    assert train(longer, backend=backend).steps == 2
    # so is another split of the same work (smaller micro-batches, other tool workers)
    split = config_from_dict({**data, "steps": 3, "optim": {**data.get("optim", {}), "micro_batch_tokens": 1024},
                              "rollout": {**data["rollout"], "tool_workers": 1}, "eval": {**data.get("eval", {}), "every": 5}})  # fmt: skip
    assert train(split, backend=backend).steps == 3
    assert [r["step"] for r in rows(Path(cfg.out))] == [1, 2, 3]


def test_a_run_continues_under_an_amended_recipe_only_when_asked_and_records_it(tmp_path):
    data, cfg, backend = _one_step_run(tmp_path)
    amended = config_from_dict({**data, "steps": 2, "reward": {"preset": "sqale-dense", "overrides": {"unsubmitted": 0.5}}})
    with pytest.raises(ConfigError, match=r"other settings \(reward.overrides.unsubmitted\).*--amend"):
        train(amended, backend=backend)
    assert not (Path(cfg.out) / "amendments.jsonl").exists()
    assert train(amended, backend=backend, amend=True).steps == 2
    [line] = (Path(cfg.out) / "amendments.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert record["from_step"] == 1
    assert record["changes"] == {"reward.overrides.unsubmitted": {"from": None, "to": 0.5}}
    assert load_config(Path(cfg.out) / "config.yaml").reward.overrides == {"unsubmitted": 0.5}  # the run's config now
    from sqlscout.report.runs import load_train_run

    assert load_train_run(Path(cfg.out), "run").describe().endswith(
        "amended after step 1: reward.overrides.unsubmitted None -> 0.5"
    )  # the report says so
    # What the checkpoint holds cannot be amended: the model, the data, the adapters.
    other = config_from_dict({**data, "steps": 3, "reward": amended.reward.model_dump(),
                              "data": {**data["data"], "limit": 3}})  # fmt: skip
    with pytest.raises(ConfigError, match=r"other settings \(data.limit\)"):
        train(other, backend=backend, amend=True)


_FRAGMENTS = """
import ctypes, sys
from pathlib import Path
from sqlscout.train.memory import set_mmap_threshold

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]

def touched(size):
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)
    return block

def resident_mb():
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024

if sys.argv[1] == "fixed":
    assert set_mmap_threshold(1 << 20)
libc.free(touched(30 << 20))  # an update's large block, freed: glibc's moving threshold rises to it
blocks = [touched(4 << 20) for _ in range(50)]  # activations of a few MiB
guard = touched(4 << 20)  # still alive above them, as the next micro-batch's are
before = resident_mb()
for block in blocks:
    libc.free(block)
print(round(before - resident_mb()))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists() or sys.platform != "linux", reason="glibc and /proc (Linux)")
def test_a_fixed_mmap_threshold_gives_freed_activations_back_at_once():
    """Why the update's peak grew step after step in one process (run 7: 11.2, 12.4,
    13.6 GB): after one large block is freed, glibc serves blocks of a few MiB from its
    heap and keeps them when freed, in pieces the next shapes do not fit.
    ``optim.heap_mmap_threshold_mb`` maps each such block on its own instead."""

    def returned_mb(mode: str) -> int:
        done = subprocess.run([sys.executable, "-c", _FRAGMENTS, mode], capture_output=True, text=True, check=True)
        return int(done.stdout.strip())

    assert returned_mb("moving") < 20  # 200 MiB freed, kept by the heap
    assert returned_mb("fixed") > 180  # given back as it is freed
