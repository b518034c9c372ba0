"""Public names resolved on first use (PEP 562), for the package ``__init__`` modules.

A package that re-exports many names would otherwise import every module behind them at
start-up; with :func:`lazy_names` importing the package loads nothing until a name is
asked for, and the name is then a plain attribute. It lives in the environment package
because the environment may import nothing of sqlscout outside itself; ``data`` and
``evaluation`` use it too (the top-level package writes it out, so that ``import
sqlscout`` loads no submodule at all).

>>> import types
>>> module = types.ModuleType("demo")
>>> module.__getattr__, module.__dir__ = lazy_names(vars(module), {"dedent": "textwrap"})
>>> module.dedent("  x")
'x'
>>> "dedent" in vars(module), "dedent" in dir(module)
(True, True)
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping

__all__ = ["lazy_names"]


def lazy_names(
    namespace: dict[str, Any], where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for a module whose ``namespace`` (its globals)
    re-exports each name of ``where`` from the module ``where[name]`` names."""
    module_name = namespace.get("__name__", "module")

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # once resolved, a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
