"""A package ``__init__``'s public names, imported from their modules on first use (PEP 562).

An ``__init__`` that imported its names eagerly would load every module of the package (and
chromadb, onnxruntime, langchain_core behind them) as soon as any one module of it is imported, and
could close an import cycle. Instead it lists each name's module and hands the list to
:func:`lazy_exports`; it also imports the names under ``if TYPE_CHECKING:`` so type checkers and
readers see where each one lives.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module-level ``__getattr__`` and ``__dir__`` for the names in ``exports``.

    Args:
        package: The package's ``__name__``.
        exports: Each public name and the module defining it: relative to ``package`` with a leading
            dot (``".retriever"``), or absolute (``"langchain_hindsight._script"``).

    Example:
        >>> getattr_, dir_ = lazy_exports("langchain_hindsight", {"MemoryUnit": ".types"})
        >>> getattr_("MemoryUnit").__name__
        'MemoryUnit'
    """

    def module_getattr(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module, package), name)

    def module_dir() -> list[str]:
        return sorted({*vars(importlib.import_module(package)), *exports})

    return module_getattr, module_dir
