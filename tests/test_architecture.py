"""The package's layering: no import cycles anywhere, and the environment readable alone.

Every import counts — at module level, inside a function (a lazy import), or under
``TYPE_CHECKING`` — because each says that one module needs another: a lazy import
only hides a cycle from the interpreter, not from the reader.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "src" / "sqlscout"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the sqlscout modules it names in an import statement."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: resolve against this module's package
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                # `from pkg import mod` names the submodule when there is one.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            for target in targets:
                while target and target not in files:
                    target = target.rpartition(".")[0]
                if target.startswith("sqlscout") and target != name:
                    graph[name].add(target)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_import_cycles() -> None:
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_hidden_cycle() -> None:
    # The shape the environment had: sandbox imports schema lazily, schema imports
    # sandbox for type checking only. Both edges count.
    graph = {"a.sandbox": {"a.schema"}, "a.schema": {"a.sandbox", "a.errors"}, "a.errors": set()}
    assert find_cycles(graph) == [["a.sandbox", "a.schema"]]


def test_the_environment_imports_only_itself_and_the_exceptions() -> None:
    graph = import_graph()
    env = {m for m in graph if m == "sqlscout.env" or m.startswith("sqlscout.env.")}
    outside = {(m, t) for m in env for t in graph[m] if t not in env}
    assert outside <= {(m, "sqlscout.errors") for m in env}, sorted(outside)


def test_the_environment_imports_nothing_of_the_help() -> None:
    graph = import_graph()
    env = {m for m in graph if m == "sqlscout.env" or m.startswith("sqlscout.env.")}
    assert env and not {(m, t) for m in env for t in graph[m] if t.startswith("sqlscout.assist")}


def test_no_rule_is_named_in_the_episode_state_machine_or_the_runner() -> None:
    import re

    from sqlscout.assist import RULES

    files = [PACKAGE / "env" / f for f in ("episode.py", "episode_base.py", "single_shot.py", "config.py", "hooks.py")]
    files.append(PACKAGE / "runner.py")
    for path in files:
        text = path.read_text()
        named = [name for name in RULES if re.search(rf"\b{name}\b", text)]
        assert not named, f"{path.name} names the rules {named}"
