"""LoRA adapters written as a GGUF LoRA (sqlscout.train.gguf_lora), and the trainer's
llama-cpp sampler that runs them: the file holds peft's factors under llama.cpp's names,
and llama.cpp with the file decodes what the dequantised policy with the adapters does."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlscout.errors import ConfigError

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")
gguf = pytest.importorskip("gguf")


def _tiny_lora(r: int = 4, alpha: int = 8, seed: int = 0):  # type: ignore[no-untyped-def]
    from peft import LoraConfig, get_peft_model

    from tiny_models import tiny_qwen3

    model, _ = tiny_qwen3(seed=seed)
    model = get_peft_model(model, LoraConfig(r=r, lora_alpha=alpha, target_modules="all-linear"))
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.1)
    return model


def _read(path: Path) -> tuple[dict[str, object], dict[str, object]]:
    reader = gguf.GGUFReader(str(path))
    fields = {}
    for name in ("general.architecture", "general.type", "adapter.type", "adapter.lora.alpha"):
        field = reader.fields[name]
        value = field.parts[field.data[0]]
        fields[name] = bytes(value).decode() if name != "adapter.lora.alpha" else float(value[0])
    return fields, {t.name: t for t in reader.tensors}


def test_the_adapters_are_written_under_llama_cpp_names_with_peft_shapes_and_values(tmp_path: Path) -> None:
    from sqlscout.train.gguf_lora import export_lora_gguf

    model = _tiny_lora()
    path = export_lora_gguf(model, tmp_path / "lora.gguf")
    fields, tensors = _read(path)
    assert fields == {"general.architecture": "qwen3", "general.type": "adapter", "adapter.type": "lora", "adapter.lora.alpha": 8.0}
    layers = model.get_base_model().config.num_hidden_layers
    projections = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
    assert set(tensors) == {f"blk.{i}.{p}.weight.lora_{f}" for i in range(layers) for p in projections for f in "ab"}
    q = model.get_base_model().model.layers[1].self_attn.q_proj
    a, b = tensors["blk.1.attn_q.weight.lora_a"], tensors["blk.1.attn_q.weight.lora_b"]
    # GGUF lists shapes fastest dimension first: (in, r) for A, (r, out) for B
    assert tuple(a.shape) == (q.in_features, 4) and tuple(b.shape) == (4, q.out_features)
    assert torch.equal(torch.from_numpy(a.data.copy()).reshape(4, q.in_features), q.lora_A["default"].weight)
    assert torch.equal(torch.from_numpy(b.data.copy()).reshape(q.out_features, 4), q.lora_B["default"].weight)
    assert not list(tmp_path.glob("*.partial"))


def test_a_saved_checkpoint_writes_the_same_file_without_its_model(tmp_path: Path) -> None:
    from sqlscout.train.gguf_lora import checkpoint_lora_gguf, export_lora_gguf

    model = _tiny_lora(r=2, alpha=5)
    model.save_pretrained(str(tmp_path / "adapters"))
    direct = export_lora_gguf(model, tmp_path / "direct.gguf")
    saved = checkpoint_lora_gguf(tmp_path / "adapters", tmp_path / "saved.gguf", "qwen3")
    (f1, t1), (f2, t2) = _read(direct), _read(saved)
    assert f1 == f2 and set(t1) == set(t2)
    assert all((t1[name].data == t2[name].data).all() for name in t1)


def test_what_llama_cpp_cannot_take_is_one_config_error(tmp_path: Path) -> None:
    from sqlscout.train.gguf_lora import export_lora_gguf, lora_tensor_name, write_lora_gguf

    with pytest.raises(ConfigError, match="decoder layers' linear projections"):
        lora_tensor_name("base_model.model.lm_head")
    with pytest.raises(ConfigError, match="not 'llama'"):
        write_lora_gguf(tmp_path / "x.gguf", "llama", 8.0, [("model.layers.0.mlp.up_proj", torch.zeros(1, 2), torch.zeros(2, 1))])
    with pytest.raises(ConfigError, match="no LoRA adapters"):
        write_lora_gguf(tmp_path / "x.gguf", "qwen2", 8.0, [])
    from peft import LoraConfig, get_peft_model

    from tiny_models import tiny_qwen3

    model, _ = tiny_qwen3()
    with_head = get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj", "lm_head"]))
    with pytest.raises(ConfigError, match="lm_head"):
        export_lora_gguf(with_head, tmp_path / "head.gguf")
    assert not (tmp_path / "head.gguf").exists()


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_a_run_starts_from_written_adapters_with_their_values(tmp_path: Path, dtype: str) -> None:
    """``model.lora.init``: a fresh policy takes a GGUF LoRA's (or a peft folder's) factors,
    so a run can go on from a shipped preset when its checkpoints are gone."""
    from sqlscout.train.gguf_lora import checkpoint_lora_gguf, load_lora_init

    trained = _tiny_lora(r=4, alpha=8, seed=1)
    trained.save_pretrained(str(tmp_path / "adapters"))
    path = checkpoint_lora_gguf(tmp_path / "adapters", tmp_path / "lora.gguf", "qwen3", dtype=dtype)
    for source in (path, tmp_path / "adapters"):
        fresh = _tiny_lora(r=4, alpha=8, seed=1)
        with torch.no_grad():  # a fresh adapter: B zero, A random (other than the trained one's)
            for name, param in fresh.named_parameters():
                if "lora_" in name:
                    param.zero_() if "lora_B" in name else param.normal_(0, 1)
        assert load_lora_init(fresh, source) == 7 * fresh.get_base_model().config.num_hidden_layers
        want = dict(trained.named_parameters())
        tolerance = 1e-3 if dtype == "f16" and source == path else 0.0
        for name, param in fresh.named_parameters():
            if "lora_" in name:
                assert torch.allclose(param, want[name], atol=tolerance, rtol=tolerance), name
    ids = torch.tensor([[1, 5, 9, 3]])
    with torch.no_grad():
        assert torch.allclose(fresh(input_ids=ids).logits, trained(input_ids=ids).logits, atol=1e-2 if dtype == "f16" else 1e-6)


def test_adapters_that_do_not_fit_the_policy_are_one_config_error(tmp_path: Path) -> None:
    from sqlscout.train.gguf_lora import export_lora_gguf, load_lora_init

    path = export_lora_gguf(_tiny_lora(r=4, alpha=8), tmp_path / "lora.gguf")
    with pytest.raises(ConfigError, match="set model.lora.r"):
        load_lora_init(_tiny_lora(r=2, alpha=8), path)  # same alpha, other rank
    with pytest.raises(ConfigError, match="set model.lora.alpha"):
        load_lora_init(_tiny_lora(r=4, alpha=16), path)
    with pytest.raises(ConfigError, match="not found"):
        load_lora_init(_tiny_lora(), tmp_path / "missing.gguf")
    (tmp_path / "not.gguf").write_bytes(b"GGUF" + b"\0" * 60)
    with pytest.raises(ConfigError, match="cannot read|not a GGUF LoRA"):
        load_lora_init(_tiny_lora(), tmp_path / "not.gguf")


@pytest.mark.slow
def test_llama_cpp_with_the_written_adapters_decodes_what_the_policy_does(qwen05_gguf: Path, tmp_path: Path) -> None:
    """The real 0.5B GGUF, dequantised into a LoRA policy whose adapters change its
    replies: llama.cpp on the quantised file with the written adapters gives the policy's
    greedy reply, and without them the base model's."""
    import contextlib

    from sqlscout.backends.base import GenerationRequest, SamplingParams
    from sqlscout.backends.llama_server import LlamaServerBackend, LlamaServerConfig
    from sqlscout.train.config import LoraConfig, ModelConfig
    from sqlscout.train.gguf_lora import export_lora_gguf
    from sqlscout.train.model import build_policy

    policy = build_policy(ModelConfig(name_or_path=str(qwen05_gguf), precision="fp32", gradient_checkpointing=False,
                                      lora=LoraConfig(enabled=True, r=8, alpha=16)), kl_enabled=False, seed=0)  # fmt: skip
    torch.manual_seed(0)
    with torch.no_grad():  # both factors drawn here, in a fixed order (peft's own draw of A follows a set's order)
        for name, param in sorted(policy.model.named_parameters()):
            if "lora_A" in name:
                param.normal_(0, param.shape[1] ** -0.5)
            elif "lora_B" in name:
                param.normal_(0, 0.03)
    ids = policy.tokenizer.encode(
        "<|im_start|>user\nWrite a SQL query counting the rows of table singer.<|im_end|>\n<|im_start|>assistant\n",
        add_special_tokens=False,
    )

    def gaps(reply: list[int], adapters: bool) -> list[float]:
        """Per token of ``reply``: how far below the policy's own greedy choice it is, in nats."""
        with torch.no_grad(), (contextlib.nullcontext() if adapters else policy.adapters_disabled()):
            logp = torch.log_softmax(policy.model(torch.tensor([ids + reply])).logits[0, len(ids) - 1 : -1], -1)
        return (logp.max(-1).values - logp[torch.arange(len(reply)), torch.tensor(reply)]).tolist()

    def llama(lora: Path | None) -> list[int]:
        request = GenerationRequest(params=SamplingParams(temperature=0.0, max_tokens=12, stop=[]), prompt_ids=ids)
        with LlamaServerBackend(qwen05_gguf, LlamaServerConfig(n_ctx=1024, slots=1, n_threads=2, lora=lora)) as backend:
            return list(backend.generate([request])[0].token_ids)

    # llama.cpp's greedy reply with the adapters is the policy's greedy reply, but for the
    # near-ties where 4-bit weights may choose the other token (a gap under 0.2 nats)
    tuned, base = llama(export_lora_gguf(policy.model, tmp_path / "lora.gguf")), llama(None)
    assert tuned != base  # the adapters matter for this prompt
    assert max(gaps(tuned, adapters=True)) < 0.2 and max(gaps(base, adapters=False)) < 0.2
    assert max(gaps(tuned, adapters=False)) > 1.0  # and the tuned reply is not the base model's

    # The trainer's sampler: llama.cpp with the policy's adapters, restarted on new ones by sync().
    from accelerate import Accelerator

    from sqlscout.train.config import RolloutConfig
    from sqlscout.train.logprobs import Truncation, token_logprobs
    import multiprocessing

    from conftest import spin
    from sqlscout.backends.threads import process_cores
    from sqlscout.train.sampler import Sampler

    rollout = RolloutConfig(backend="llama-cpp", max_batch=2)
    # Started while every core is busy (as the policy's threads are right after an update):
    # llama.cpp still gets the process's cores.
    spinners = [multiprocessing.Process(target=spin, args=(60.0,), daemon=True) for _ in range(process_cores())]
    for p in spinners:
        p.start()
    try:
        sampler = Sampler(rollout, policy.model, policy.tokenizer, Accelerator(cpu=True), tmp_path, seed=0, model_path=str(qwen05_gguf))
    finally:
        for p in spinners:
            p.terminate()
            p.join()
    try:
        assert sampler.backend.threads == process_cores()
        params = SamplingParams(temperature=0.6, top_p=0.95, top_k=20, max_tokens=24, seed=3, stop=[])
        drawn = sampler.backend.generate([GenerationRequest(params=params, prompt_ids=ids)])[0]
        # IS weight min(pi_old / pi_sampler, 2) on every token: the trainer's processed log-probability
        # (fp32 dequantised weights + adapters) against llama.cpp's (Q4_K with 8-bit activations)
        sequence = torch.tensor([ids + list(drawn.token_ids)])
        trained = torch.zeros_like(sequence, dtype=torch.bool)
        trained[0, len(ids) :] = True
        with torch.no_grad():
            out = token_logprobs(policy.model, sequence, torch.ones_like(sequence), trained, temperature=0.6,
                                 truncation=Truncation(20, 0.95))  # fmt: skip
        weights = torch.exp(out.logp - out.kept_lognorm - torch.tensor(drawn.logprobs))
        # Measured here: median 1.00, mean |ln w| 0.12 over 18 tokens (1.32 at most above 1, one
        # token 0.49): llama.cpp's 8-bit activations move the probabilities a little at T 0.6,
        # a real mismatch between sampler and policy that the truncated weight corrects.
        shown = " ".join(f"{w:.2f}" for w in weights.tolist())
        assert weights.median().item() == pytest.approx(1.0, abs=0.05), shown
        assert weights.log().abs().mean().item() < 0.2, shown
        with torch.no_grad():
            for name, param in policy.model.named_parameters():
                if "lora_B" in name:
                    param.zero_()
        first = sampler.backend
        sampler.release()  # llama.cpp freed while the policy updates
        assert first._server is None
        sampler.sync()
        assert sampler.backend is not first
        greedy_params = SamplingParams(temperature=0.0, max_tokens=12, stop=[])
        assert list(sampler.backend.generate([GenerationRequest(params=greedy_params, prompt_ids=ids)])[0].token_ids) == base
    finally:
        sampler.close()
    with pytest.raises(ConfigError, match="model.name_or_path to a .gguf file"):
        Sampler(rollout, policy.model, policy.tokenizer, Accelerator(cpu=True), tmp_path, seed=0, model_path="Qwen/Qwen3.5-2B")


def test_a_shipped_checkpoint_is_a_preset_whose_adapter_is_checked(tmp_path: Path) -> None:
    """ship_adapter writes a run's checkpoint as an f16 GGUF LoRA and a manifest; the
    manifest makes a plain-agent preset on the base GGUF with the run's episode settings,
    and its adapter is refused once its bytes change."""
    import json

    import yaml

    from sqlscout.errors import BackendError
    from sqlscout.models.load import verified_adapter
    from sqlscout.models.presets import PRESETS, _shipped
    from sqlscout.train.config import config_to_dict, load_config
    from sqlscout.train.ship import ship_adapter

    from conftest import REPO

    run = tmp_path / "run"
    _tiny_lora(r=2, alpha=4).save_pretrained(str(run / "checkpoints" / "step-000007" / "model"))
    (run / "config.yaml").write_text(yaml.safe_dump(config_to_dict(load_config(REPO / "configs" / "grpo-cpu-qwen2.5-coder-0.5b.yaml"))))
    manifest = ship_adapter(run, 7, "tiny-grpo", base="qwen2.5-coder-0.5b", dest=tmp_path / "adapters", measured={"dev-report": 0.5})
    m = json.loads(manifest.read_text())
    assert m["step"] == 7 and m["measured"] == {"dev-report": 0.5} and "world_1" in m["split"]["train_databases"]
    fields, tensors = _read(tmp_path / "adapters" / "tiny-grpo.gguf")
    assert fields["adapter.lora.alpha"] == 4.0 and all(t.tensor_type == gguf.GGMLQuantizationType.F16 for t in tensors.values())
    (preset,) = _shipped(PRESETS, tmp_path / "adapters")
    assert preset.name == "tiny-grpo" and preset.assist == "none" and preset.gguf == PRESETS["qwen2.5-coder-0.5b"].gguf
    assert preset.episode.max_rounds == 3 and preset.episode.max_turn_tokens == 320 and preset.sampling.temperature == 0.0  # greedy, as evaluated
    assert verified_adapter(preset.lora) == tmp_path / "adapters" / "tiny-grpo.gguf"
    with (tmp_path / "adapters" / "tiny-grpo.gguf").open("r+b") as f:
        f.seek(-1, 2)
        f.write(b"\x01")
    with pytest.raises(BackendError, match="not the one the preset was measured with"):
        verified_adapter(preset.lora)
    # Limits chosen after training (on a tuning set) are the preset's; the trained ones stay recorded.
    chosen = json.loads(ship_adapter(run, 7, "tiny-grpo", base="qwen2.5-coder-0.5b", dest=tmp_path / "adapters",
                                     episode={"max_rounds": 6, "max_failed_queries": 4}).read_text())  # fmt: skip
    assert chosen["episode"]["max_rounds"] == 6 and chosen["episode_trained"]["max_rounds"] == 3
    (preset,) = _shipped(PRESETS, tmp_path / "adapters")
    assert preset.episode.max_rounds == 6 and preset.episode.max_failed_queries == 4 and preset.episode.max_turn_tokens == 320
    with pytest.raises(ConfigError, match="unknown episode setting max_round: use one of"):
        ship_adapter(run, 7, "tiny-grpo", base="qwen2.5-coder-0.5b", dest=tmp_path / "adapters", episode={"max_round": 6})
    with pytest.raises(ConfigError, match="holds no LoRA adapters"):
        ship_adapter(run, 8, "tiny-grpo", base="qwen2.5-coder-0.5b", dest=tmp_path / "adapters")
    # A pool from several sources: each one's databases; one on an evaluation database is refused.
    written = tmp_path / "written.jsonl"
    written.write_text('{"db_id": "farm", "question": "q", "query": "SELECT 1", "checked": true}\n'
                       '{"db_id": "geo", "question": "q", "query": "SELECT 1", "checked": false}\n')  # fmt: skip
    config = config_to_dict(load_config(REPO / "configs" / "grpo-cpu-qwen2.5-coder-0.5b-run3.yaml"))
    config["data"]["also"][0]["path"] = str(written)
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    m = json.loads(ship_adapter(run, 7, "tiny-grpo", base="qwen2.5-coder-0.5b", dest=tmp_path / "adapters").read_text())
    assert m["split"]["train_databases"] == sorted(["farm", "employee_hire_evaluation", "network_1", "poker_player", "tvshow", "world_1"])
    assert m["trained"].endswith("(spider dev-tune + jsonl written.jsonl), from sqlscout-0.5b-grpo.gguf")
    config["data"]["also"].append({"benchmark": "spider", "split": "dev", "db_ids": ["concert_singer"]})
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=r"trained on evaluation databases \(concert_singer\)"):
        ship_adapter(run, 7, "tiny-grpo", base="qwen2.5-coder-0.5b", dest=tmp_path / "adapters")



def test_averaged_adapters_are_the_best_rank_r_cut_of_their_mean_update() -> None:
    """average_lora returns, per module, rank-r factors whose product is the best rank-r
    approximation of the mean of the adapters' updates (not the product of averaged
    factors), and all of it where the mean has rank r; adapters over other modules or
    ranks are refused."""
    from sqlscout.train.gguf_lora import average_lora

    g = torch.Generator().manual_seed(0)
    r, d_in, d_out = 3, 20, 12
    adapters = [[(m, torch.randn(r, d_in, generator=g), torch.randn(d_out, r, generator=g)) for m in ("q", "v")] for _ in range(3)]
    averaged, kept = average_lora(adapters)
    assert [name for name, _, _ in averaged] == ["q", "v"]
    total = cut = 0.0
    for i, (_, a, b) in enumerate(averaged):
        assert a.shape == (r, d_in) and b.shape == (d_out, r)
        mean = sum(ad[i][2].double() @ ad[i][1].double() for ad in adapters) / 3
        u, s, vh = torch.linalg.svd(mean)
        best = (u[:, :r] * s[:r]) @ vh[:r]
        assert torch.allclose((b @ a).double(), best, atol=1e-4)
        naive = (sum(ad[i][2] for ad in adapters) / 3) @ (sum(ad[i][1] for ad in adapters) / 3)
        assert not torch.allclose((b @ a), naive, atol=1e-2)  # averaging factors apart is another update
        total, cut = total + float((s**2).sum()), cut + float((s[:r] ** 2).sum())
    assert 0.3 < kept < 1.0 and kept == pytest.approx(cut / total, rel=1e-6)
    # Checkpoints that share their A (a run's early steps do, nearly): the mean has rank r and is kept whole.
    shared = torch.randn(r, d_in, generator=g)
    same_a = [[("q", shared, torch.randn(d_out, r, generator=g))] for _ in range(2)]
    ((_, a, b),), kept = average_lora(same_a)
    assert kept == pytest.approx(1.0) and torch.allclose(b @ a, (same_a[0][0][2] + same_a[1][0][2]) / 2 @ shared, atol=1e-5)
    with pytest.raises(ConfigError, match="adapt different modules"):
        average_lora([adapters[0], adapters[1][:1]])
    with pytest.raises(ConfigError, match="different ranks at q"):
        average_lora([[("q", torch.randn(2, d_in), torch.randn(d_out, 2))], [("q", torch.randn(3, d_in), torch.randn(d_out, 3))]])


def test_several_steps_ship_their_average(tmp_path: Path) -> None:
    """ship_adapter given several steps writes the average of their updates at the run's
    rank, says so in the manifest, and llama.cpp-ready factors come back from the file."""
    import json

    import yaml

    from sqlscout.train.config import config_to_dict, load_config
    from sqlscout.train.gguf_lora import lora_tensor_name, read_lora_gguf

    from conftest import REPO

    run = tmp_path / "run"
    models = {step: _tiny_lora(r=2, alpha=4, seed=step) for step in (7, 9)}
    for step, model in models.items():
        model.save_pretrained(str(run / "checkpoints" / f"step-{step:06d}" / "model"))
    (run / "config.yaml").write_text(yaml.safe_dump(config_to_dict(load_config(REPO / "configs" / "grpo-cpu-qwen2.5-coder-0.5b.yaml"))))
    from sqlscout.train.ship import ship_adapter

    m = json.loads(ship_adapter(run, [9, 7], "tiny-soup", base="qwen2.5-coder-0.5b", dest=tmp_path / "adapters").read_text())
    assert m["step"] == [7, 9] and 0.5 < m["average_kept"] <= 1.0 and "the average of steps 7, 9 of run" in m["trained"]
    alpha, factors = read_lora_gguf(tmp_path / "adapters" / "tiny-soup.gguf")
    assert alpha == 4.0
    modules = {n: mod for n, mod in models[7].named_modules() if "default" in (getattr(mod, "lora_A", None) or {})}
    name, module = next(iter(sorted(modules.items())))
    a, b = factors[lora_tensor_name(name)]
    mean = sum(models[s].get_submodule(name).lora_B["default"].weight @ models[s].get_submodule(name).lora_A["default"].weight for s in (7, 9)) / 2
    u, s_, vh = torch.linalg.svd(mean.detach().double())
    assert torch.allclose(torch.as_tensor(b).double() @ torch.as_tensor(a).double(), (u[:, :2] * s_[:2]) @ vh[:2], atol=2e-3)  # f16 in the file
    with pytest.raises(ConfigError, match="step-000008/model holds no LoRA adapters"):
        ship_adapter(run, [7, 8], "tiny-soup", base="qwen2.5-coder-0.5b", dest=tmp_path / "adapters")
