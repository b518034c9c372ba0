"""A profile: which rules of help are on, with their parameters, and the version they make.

A model preset names a profile; ``--assist NAME`` (or a YAML file) chooses another and
``--assist-set RULE=off`` / ``--assist-set RULE.PARAM=VALUE`` changes one rule. A run
records the profile and its version, derived from the rules' names, their parameters and
the source text of the modules that implement them, so a resume under changed help is
refused without anyone writing a version by hand.

>>> p = get_profile("none")
>>> p.rules, p.hooks() is None, p.version()
({}, True, 'none')
>>> q = get_profile("guided").with_settings(["repair_hints=off", "constrain.reasoning_lines=2"])
>>> "repair_hints" in q.rules, q.rules["constrain"].reasoning_lines
(False, 2)
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from sqlscout.assist import rules as _rules  # noqa: F401  (registers every rule)
from sqlscout.assist.layer import AssistHooks
from sqlscout.assist.rule import RULES, Rule
from sqlscout.errors import ConfigError

__all__ = ["PROFILES", "Profile", "get_profile", "load_profile"]


@dataclass(frozen=True)
class Profile:
    """Named rules with checked parameters (build one with :meth:`build`).

    Attributes:
        name: what ``--assist`` and a preset call it.
        rules: rule name -> its parameters (an instance of the rule's ``Params``).
    """

    name: str
    rules: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def build(cls, name: str, rules: Mapping[str, Mapping[str, Any] | bool | None]) -> Profile:
        """A profile from rule names to parameter values (``True``/``{}``: the defaults;
        ``False``/``None``: off), checked: unknown rules or parameters, wrong types and a
        rule without the rules it needs are refused with a one-line error."""
        checked: dict[str, Any] = {}
        for rule_name, values in rules.items():
            if values is False or values is None:
                continue
            rule = _rule(rule_name)
            checked[rule_name] = _params(rule, {} if values is True else dict(values))
        for rule_name in checked:
            missing = [n for n in RULES[rule_name].needs if n not in checked]
            if missing:
                raise ConfigError(f"rule {rule_name} needs {', '.join(missing)}; turn it on too (--assist-set {missing[0]}=on)")
        return cls(name, {n: checked[n] for n in RULES if n in checked})

    def hooks(self, *, single_shot: bool = False) -> AssistHooks | None:
        """The hooks of one new episode under this profile (None when no rule acts on it)."""
        hooks = AssistHooks(self.name, dict(self.rules), single_shot=single_shot)
        return hooks if hooks.rules else None

    @property
    def rewrites_transcript(self) -> bool:
        """Whether a rule may begin the transcript again (a trainer cannot use it)."""
        return any(RULES[n].rewrites_transcript for n in self.rules)

    def version(self, *, single_shot: bool = False) -> str:
        """``name@digest`` of the rules that act (only those that act on single-shot
        episodes, for those): their names, parameters and the source they run; ``none``
        when no rule acts."""
        active = {n: p for n, p in self.rules.items() if RULES[n].single_shot or not single_shot}
        if not active:
            return "none"
        digest = hashlib.sha256(json.dumps({n: asdict(p) for n, p in active.items()}, sort_keys=True).encode())
        for source in sorted({s for n in active for s in _sources(RULES[n])}):
            digest.update(source.encode())
        label = "+".join(active) if single_shot else self.name
        return f"{label}@{digest.hexdigest()[:12]}"

    def episode_version(self, base: str, *, single_shot: bool = False) -> str:
        """The version an episode records: the protocol's prompts, then this help's."""
        version = self.version(single_shot=single_shot)
        return base if version == "none" else f"{base}+assist:{version}"

    def with_settings(self, settings: list[str]) -> Profile:
        """This profile with ``RULE=on|off`` and ``RULE.PARAM=VALUE`` settings applied."""
        values: dict[str, Any] = {n: asdict(p) for n, p in self.rules.items()}
        for setting in settings:
            key, sep, value = setting.partition("=")
            key, value = key.strip(), value.strip()
            if not sep or not key:
                raise ConfigError(f"--assist-set takes RULE=on|off or RULE.PARAM=VALUE, got {setting!r}")
            rule_name, _, param = key.partition(".")
            _rule(rule_name)
            if not param:
                if value.lower() not in ("on", "off", "true", "false"):
                    raise ConfigError(f"--assist-set {rule_name}= takes on or off, got {value!r}")
                if value.lower() in ("on", "true"):
                    values.setdefault(rule_name, {})
                else:
                    values.pop(rule_name, None)
            else:
                values.setdefault(rule_name, {})[param] = value
        name = self.name if not settings else f"{self.name}[{','.join(s.strip() for s in settings)}]"
        return Profile.build(name, values)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "rules": {n: asdict(p) for n, p in self.rules.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Profile:
        return cls.build(str(data.get("name", "custom")), dict(data.get("rules") or {}))

    def describe(self) -> str:
        """One line: the rules that are on, by name (``none`` without any)."""
        return ", ".join(self.rules) or "none"


def _rule(name: str) -> type[Rule]:
    if name not in RULES:
        raise ConfigError(f"unknown assist rule {name!r}; rules: {', '.join(RULES)} (sqlscout rules lists them)")
    return RULES[name]


def _params(rule: type[Rule], values: dict[str, Any]) -> Any:
    """``rule``'s parameters, validated by pydantic against its ``Params`` dataclass
    (values already of their fields' types, as the named profiles give them, are built
    directly: pydantic is imported only for what a user wrote)."""
    defaults = {f.name: f.default for f in fields(rule.Params)}
    unknown = sorted(set(values) - set(defaults))
    if unknown:
        raise ConfigError(f"rule {rule.name} has no parameter {unknown[0]!r} (its parameters: {', '.join(defaults) or 'none'})")
    if all(k in defaults and type(v) is type(defaults[k]) for k, v in values.items()):
        try:
            return rule.Params(**values)
        except ValueError as exc:
            raise ConfigError(f"{rule.name}: {exc}") from None
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(rule.Params).validate_python(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "parameters"
        raise ConfigError(f"{rule.name}.{where}: {first.get('msg', 'invalid')}") from None


@lru_cache(maxsize=None)
def _sources(rule: type[Rule]) -> tuple[str, ...]:
    """The text of the rule's module and of every ``sqlscout.assist`` module it imports,
    transitively (the help it runs)."""
    package = Path(__file__).resolve().parent
    seen: dict[str, str] = {}
    todo = [rule.__module__]
    while todo:
        module = todo.pop()
        if module in seen or not module.startswith("sqlscout.assist"):
            continue
        parts = module.split(".")[2:]
        path = package.joinpath(*parts).with_suffix(".py") if parts else package / "__init__.py"
        if not path.is_file():
            path = package.joinpath(*parts, "__init__.py")
        text = path.read_text()
        seen[module] = text
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sqlscout.assist"):
                todo.append(node.module)
    return tuple(seen[m] for m in sorted(seen))


_GUIDED: dict[str, Any] = {
    "constrain": {"reasoning_lines": 0},
    "guided_start": True,
    "submit_tested": True,
    "end_on_repeat": True,
    "submit_hint": True,
    "repair_hints": True,
    "query_after_survey": True,
    "restate_question": True,
    "fresh_start": True,
}

# single-shot's query first; where it fails, an agent held to the protocol by the grammar,
# whose failed queries are repaired: what measured as well as the whole guided set on the
# tuning split (0.5B, dev-tune 100: 56.2 % against 57.3 %, 1 gained, 2 lost) with five
# rules fewer; without repair_hints the repair rarely found a query that ran.
_DRAFT: dict[str, Any] = {
    "constrain": {"reasoning_lines": 0},
    "submit_tested": True,
    "end_on_repeat": True,
    "repair_hints": True,
    "draft": True,
}

# The named profiles. What each measured, where it was not chosen: docs/evaluation.md.
PROFILES: dict[str, Profile] = {
    p.name: p
    for p in [
        Profile.build("none", {}),
        Profile.build("constrained", {"constrain": {"reasoning_lines": 0}}),
        Profile.build("guided", _GUIDED),
        Profile.build("guided-example", {**_GUIDED, "worked_example": True}),
        Profile.build("draft", _DRAFT),
        Profile.build("draft-guided", {**_GUIDED, "draft": True}),
    ]
}


def get_profile(name: str) -> Profile:
    """The named profile; a one-line error listing them otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ConfigError(f"unknown assist profile {name!r}; choose one of {', '.join(PROFILES)}, or give a YAML file") from None


def load_profile(spec: str) -> Profile:
    """A profile by name, or from a YAML (or JSON) file: ``name``, an optional ``base``
    profile, and ``rules`` (rule -> parameters, ``true`` for the defaults, ``false`` off)."""
    if spec in PROFILES or not (spec.endswith((".yaml", ".yml", ".json")) or Path(spec).is_file()):
        return get_profile(spec)
    path = Path(spec).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the assist profile ({exc.__class__.__name__}); give a UTF-8 YAML file") from None
    try:
        if path.suffix == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as exc:  # noqa: BLE001 - any parse error is the user's file
        raise ConfigError(f"{path}: not a valid profile file ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a profile file holds a mapping with 'rules' (and optionally 'name', 'base')")
    base = get_profile(str(data["base"])) if data.get("base") else PROFILES["none"]
    rules: dict[str, Any] = {n: asdict(p) for n, p in base.rules.items()}
    extra = data.get("rules") or {}
    if not isinstance(extra, dict):
        raise ConfigError(f"{path}: 'rules' must map rule names to parameters, true or false")
    rules.update(extra)
    return Profile.build(str(data.get("name") or path.stem), rules)
