"""The settings every model-running command shares, declared once.

``--assist PROFILE`` and ``--assist-set RULE=on|off`` / ``RULE.PARAM=VALUE`` choose the
help; ``--set KEY=VALUE`` changes one episode or sampling setting, whose names, types and
help come from the settings models themselves (:class:`~sqlscout.env.config.EpisodeConfig`,
:class:`~sqlscout.backends.base.SamplingParams`), validated by pydantic.
"""

from __future__ import annotations

from dataclasses import asdict, fields, replace
from typing import Any, Optional

import typer

from sqlscout.backends.base import SamplingParams
from sqlscout.env.config import EpisodeConfig
from sqlscout.errors import ConfigError

__all__ = ["ASSIST", "ASSIST_SET", "SET", "Settings", "resolve_settings", "setting_names"]

# Sampling settings a command line may change (the rest are the runner's own business).
_SAMPLING_KEYS = ("temperature", "top_p", "top_k")


def setting_names() -> dict[str, str]:
    """Every ``--set`` key with its help, from the settings models."""
    names = {f.name: f.metadata.get("help", "") for f in fields(EpisodeConfig) if f.name != "schema"}
    names.update({f.name: f.metadata.get("help", "") for f in fields(SamplingParams) if f.name in _SAMPLING_KEYS})
    return names


ASSIST = typer.Option(
    None,
    "--assist",
    help="Help for models not trained on the protocol: a profile (none, constrained, guided, draft, ...) or a YAML file (default: the model's). `sqlscout rules` lists them.",
)
ASSIST_SET = typer.Option(
    None, "--assist-set", help="Change one rule of the profile: RULE=on|off or RULE.PARAM=VALUE (repeatable)."
)
SET = typer.Option(
    None,
    "--set",
    help="Change one episode or sampling setting, KEY=VALUE (repeatable): " + ", ".join(setting_names()) + ".",
)


class Settings:
    """A command's episode, sampling and help settings, resolved."""

    def __init__(self, episode: EpisodeConfig, sampling: SamplingParams, assist: Any) -> None:
        self.episode, self.sampling, self.assist = episode, sampling, assist


def resolve_settings(
    model: str,
    *,
    schema: Any = None,
    assist: Optional[str] = None,
    assist_set: Optional[list[str]] = None,
    sets: Optional[list[str]] = None,
) -> Settings:
    """The model's defaults with the command line's changes applied and validated."""
    from sqlscout.assist import load_profile
    from sqlscout.models import model_defaults

    episode, sampling, profile = model_defaults(model)
    if assist is not None:
        profile = load_profile(assist)
    if assist_set:
        profile = profile.with_settings(list(assist_set))
    changes = _parse(sets or [])
    episode_keys = {f.name for f in fields(EpisodeConfig)}
    ep_changes = {k: v for k, v in changes.items() if k in episode_keys}
    sa_changes = {k: v for k, v in changes.items() if k not in episode_keys}
    if schema is not None:
        ep_changes["schema"] = schema
    episode = _validated(EpisodeConfig, {**episode.to_dict(), **ep_changes}) if ep_changes else episode
    if sa_changes:
        sampling = _validated(SamplingParams, {**asdict(sampling), **sa_changes})
    return Settings(episode, sampling, profile)


def _parse(sets: list[str]) -> dict[str, str]:
    known = setting_names()
    changes: dict[str, str] = {}
    for item in sets:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in known:
            raise ConfigError(f"--set takes KEY=VALUE with KEY one of {', '.join(known)}; got {item!r}")
        changes[key] = value.strip()
    return changes


def _validated(model: type, values: dict[str, Any]) -> Any:
    from pydantic import TypeAdapter, ValidationError

    values = {k: (None if isinstance(v, str) and v.lower() in ("null", "none") else v) for k, v in values.items()}
    try:
        return TypeAdapter(model).validate_python(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or model.__name__
        message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
        raise ConfigError(f"--set {where}: {message}") from None


def with_schema(settings: Settings, schema: Any) -> Settings:
    """``settings`` with the schema regime ``schema`` (when given)."""
    if schema is None:
        return settings
    return Settings(replace(settings.episode, schema=schema), settings.sampling, settings.assist)
