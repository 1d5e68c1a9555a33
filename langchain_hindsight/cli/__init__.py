"""The ``hindsight`` command line: one module per group of commands.

:mod:`~langchain_hindsight.cli.main` parses the arguments and maps errors to the exit codes named here.
Its entry point is ``langchain_hindsight.cli.main:main`` (``python -m langchain_hindsight.cli``); it is
not named here, where ``main`` is the module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_hindsight._lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_hindsight.cli.main import EXIT_DENIED, EXIT_ERROR, EXIT_LOCKED, EXIT_NOT_FOUND, EXIT_OK, EXIT_USAGE

_EXPORTS: dict[str, str] = {
    "EXIT_DENIED": ".main",
    "EXIT_ERROR": ".main",
    "EXIT_LOCKED": ".main",
    "EXIT_NOT_FOUND": ".main",
    "EXIT_OK": ".main",
    "EXIT_USAGE": ".main",
}
"""Each public name and the module defining it (imported on first use)."""

__all__ = [
    "EXIT_DENIED",
    "EXIT_ERROR",
    "EXIT_LOCKED",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_USAGE",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
