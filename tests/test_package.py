"""The package's shape: a sorted public API, runnable docstring examples, and an
environment that imports nothing heavy."""

from __future__ import annotations

import doctest
import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CHINOOK, REPO

import sqlscout

# The environment (every module of sqlscout.env), scoring, the exceptions, and the
# driver with its scripted backend: standard library and sqlglot only (SPEC §1, STYLE).
def _modules(package: str) -> list[str]:
    root = importlib.import_module(package)
    return [package, *(m.name for m in pkgutil.walk_packages(root.__path__, package + "."))]


ENVIRONMENT_MODULES = sorted(
    {*_modules("sqlscout.env"), *_modules("sqlscout.scoring"), "sqlscout.errors", "sqlscout.runner", "sqlscout.backends.scripted"}
)
HEAVY = ("torch", "transformers", "vllm", "llama_cpp", "tokenizers", "httpx", "numpy", "pandas", "pyarrow", "trl")


def test_public_api_is_sorted_and_resolves() -> None:
    assert sqlscout.__all__ == sorted(sqlscout.__all__)
    assert len(set(sqlscout.__all__)) == len(sqlscout.__all__)
    for name in sqlscout.__all__:
        assert getattr(sqlscout, name) is not None, name


@pytest.mark.parametrize("module_name", ENVIRONMENT_MODULES)
def test_module_all_resolves(module_name: str) -> None:
    module = importlib.import_module(module_name)
    for name in getattr(module, "__all__", []):
        assert hasattr(module, name), f"{module_name}.__all__ names {name!r}, which it does not define"


@pytest.fixture
def beside_the_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """Docstring examples open files of the checkout (the bundled Chinook, the small Spider
    fixture) by their paths from its root: run them from there."""
    monkeypatch.chdir(REPO)


@pytest.mark.parametrize("module_name", ENVIRONMENT_MODULES)
def test_docstring_examples_run(module_name: str, beside_the_data: None) -> None:
    module = importlib.import_module(module_name)
    results = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert results.failed == 0, f"{results.failed} docstring example(s) failed in {module_name}"


def test_the_docstring_examples_are_many() -> None:
    finder = doctest.DocTestFinder()
    examples = sum(len(t.examples) for name in ENVIRONMENT_MODULES for t in finder.find(importlib.import_module(name)))
    assert examples >= 40


def _loaded_after(imports: str) -> set[str]:
    code = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        f"{imports}\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before})))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, timeout=60)
    return set(json.loads(out.stdout))


def test_importing_the_environment_loads_nothing_heavy() -> None:
    loaded = _loaded_after("import sqlscout, " + ", ".join(ENVIRONMENT_MODULES))
    assert not loaded & set(HEAVY), f"heavy modules imported: {sorted(loaded & set(HEAVY))}"
    third_party = {m for m in loaded if m not in sys.stdlib_module_names and not m.startswith("_")}
    assert third_party <= {"sqlscout", "sqlglot"}, f"the environment imports {sorted(third_party - {'sqlscout', 'sqlglot'})}"


def test_running_an_episode_and_scoring_loads_nothing_heavy() -> None:
    # sqlglot is imported lazily (here by the ORDER BY check); still nothing heavy after a whole episode.
    loaded = _loaded_after(
        "from sqlscout import *\n"
        "from sqlscout.backends.scripted import ScriptedBackend\n"
        f"db = Database({str(CHINOOK)!r})\n"
        "backend = ScriptedBackend(['{\"tool\": \"submit_sql\", \"args\": {\"sql\": \"SELECT COUNT(*) FROM Genre\"}}'])\n"
        "(rollout,) = run_all(backend, [Task('q', 'How many genres?', db.path)])\n"
        "r = rollout.result\n"
        "assert score_sql(db, r.final_sql, 'SELECT COUNT(*) FROM Genre').verdict.official\n"
        # The same rows in another order under a nested ORDER BY: deciding strict
        # semantics' ordering needs the parser.
        "assert score_sql(db, 'SELECT GenreId FROM Genre', 'SELECT * FROM (SELECT GenreId FROM Genre ORDER BY Name)').verdict.official"
    )
    assert not loaded & set(HEAVY), f"heavy modules imported: {sorted(loaded & set(HEAVY))}"
    assert "sqlglot" in loaded


def _requirement_names(requirements: list[str]) -> set[str]:
    import re

    return {re.split(r"[\s\[<>=!~;(]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


def test_the_demo_extra_holds_everything_the_gguf_path_imports() -> None:
    """`make demo` installs only `.[gguf]`: every third-party module that loading the
    llama-cpp backend and reading a GGUF's chat template imports must come from the core
    dependencies, that extra, or what they require (a missing jinja2 once broke it)."""
    import tomllib
    from importlib import metadata

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = _requirement_names(project["dependencies"] + project["optional-dependencies"]["gguf"])
    allowed: set[str] = set()
    while wanted - allowed:  # the declared packages and everything they require
        name = (wanted - allowed).pop()
        allowed.add(name)
        try:
            required = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        wanted |= _requirement_names([r for r in required if "extra ==" not in r])
    probe = (
        "import sys, json; before = set(sys.modules)\n"
        "import sqlscout.backends.llama_server\n"
        "from sqlscout.backends.chat_template import chat_format_from_template\n"
        "chat_format_from_template(\"{% for m in messages %}<|im_start|>{{ m['role'] }}\\n{{ m['content'] }}<|im_end|>\\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\\n{% endif %}\", eos_token='<|im_end|>')\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before})))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout)
    distributions = metadata.packages_distributions()
    third_party = {
        dist.lower().replace("_", "-")
        for module in loaded
        if module not in sys.stdlib_module_names and module != "sqlscout" and not module.startswith("_")
        for dist in distributions.get(module, [module])
    }
    assert "jinja2" in third_party  # the probe reached the template path
    assert third_party <= allowed, f"imported but not installed by .[gguf]: {sorted(third_party - allowed)}"
