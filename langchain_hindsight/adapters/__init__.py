"""Adapters: create_agent middleware, LangGraph nodes and wrapper, classic memory, a LangGraph store.

* :mod:`~langchain_hindsight.adapters.middleware`: :class:`HindsightMiddleware` for ``create_agent``;
* :mod:`~langchain_hindsight.adapters.graph`: :func:`recall_node`, :func:`reflect_node` and
  :func:`with_hindsight` (which returns a :class:`HindsightGraph`) for any LangGraph graph;
* :mod:`~langchain_hindsight.adapters.memory`: :class:`HindsightMemory`, classic ``BaseMemory``
  (needs the ``classic`` extra);
* :mod:`~langchain_hindsight.adapters.langgraph_store`: :class:`HindsightStore`, LangGraph's
  ``BaseStore`` over a :class:`~langchain_hindsight.store.MemoryStore`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_hindsight._lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_hindsight.adapters._wrapper import HindsightGraph
    from langchain_hindsight.adapters.graph import recall_node, reflect_node, with_hindsight
    from langchain_hindsight.adapters.langgraph_store import HindsightStore
    from langchain_hindsight.adapters.memory import HindsightMemory
    from langchain_hindsight.adapters.middleware import HindsightMiddleware

_EXPORTS: dict[str, str] = {
    "HindsightGraph": "._wrapper",
    "HindsightMemory": ".memory",
    "HindsightMiddleware": ".middleware",
    "HindsightStore": ".langgraph_store",
    "recall_node": ".graph",
    "reflect_node": ".graph",
    "with_hindsight": ".graph",
}
"""Each public name and the module defining it (imported on first use)."""

__all__ = [
    "HindsightGraph",
    "HindsightMemory",
    "HindsightMiddleware",
    "HindsightStore",
    "recall_node",
    "reflect_node",
    "with_hindsight",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
