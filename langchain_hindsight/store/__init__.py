"""Storage layer: memory units and run records in a backend (Chroma, Postgres, memory), a collection set per namespace.

The rooms and who owns what: docs/DESIGN.md, "The store". How a write is decided (the rules, the planner and the
judges) is :mod:`langchain_hindsight.writes`, one floor down; the store reads what a write is decided on and applies
the plan. Public here: :class:`MemoryStore`, the write judges, :class:`ConfidencePolicy` (of
:mod:`langchain_hindsight.confidence`), :func:`holds_store` and :func:`unit_to_metadata` (for loaders that write
records themselves). Names are imported on first use, so a command that needs one small module does not import the
store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_hindsight._lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_hindsight.confidence import ConfidencePolicy
    from langchain_hindsight.store._codec import unit_to_metadata
    from langchain_hindsight.store._directory import DATA_FILE, holds_store
    from langchain_hindsight.store.memory_store import MemoryStore
    from langchain_hindsight.writes import LLMWriteJudge, RuleWriteJudge, WriteJudge, WriteResult

_EXPORTS: dict[str, str] = {
    "DATA_FILE": "._directory",
    "ConfidencePolicy": "langchain_hindsight.confidence",
    "LLMWriteJudge": "langchain_hindsight.writes",
    "MemoryStore": ".memory_store",
    "RuleWriteJudge": "langchain_hindsight.writes",
    "WriteJudge": "langchain_hindsight.writes",
    "WriteResult": "langchain_hindsight.writes",
    "holds_store": "._directory",
    "unit_to_metadata": "._codec",
}
"""Each public name and the module defining it (imported on first use)."""

__all__ = [
    "DATA_FILE",
    "ConfidencePolicy",
    "LLMWriteJudge",
    "MemoryStore",
    "RuleWriteJudge",
    "WriteJudge",
    "WriteResult",
    "holds_store",
    "unit_to_metadata",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
