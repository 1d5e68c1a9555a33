"""The package's source as syntax trees, parsed once per test process.

Several suite rules read the whole package's source (the layers, the store's rooms, the one module that reads
the environment, the demo nobody imports); parsing it costs most of a second each time. The trees are shared:
a test only reads them.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path


def tree(path: Path) -> ast.Module:
    """``path`` parsed (cached for the process: do not modify the tree)."""
    return _tree(path.resolve())


def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of ``path``'s tree, in :func:`ast.walk` order (cached for the process)."""
    return _nodes(path.resolve())


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(_tree(path)))
