"""Storage layer: memory units and run records in a backend (Chroma, Postgres, memory), a collection set per namespace.

The rooms (docs/DESIGN.md, "The store", walks through them):

* :mod:`~langchain_hindsight.store.memory_store`: :class:`MemoryStore`, the store's public surface;
* :mod:`~langchain_hindsight.store.writes`: how a write is judged (:class:`WriteResult`, the judges);
* :mod:`~langchain_hindsight.store.statement` and :mod:`~langchain_hindsight.store.evidence`: when two texts
  make one statement, and how far a lesson learned again gains (the write path and the merge pass share both);
* :mod:`~langchain_hindsight.store.run_records`: the run records in each namespace's journal collection
  (``store.run_records``); the run journal that writes them (:class:`~langchain_hindsight.journal.RunJournal`)
  is one floor up and reaches them only through the store's public API;
* :mod:`~langchain_hindsight.store.replica`: where recall reads from — the derived copies of the data and
  the only code that reads or writes their files;
* :mod:`~langchain_hindsight.store.backend`: the backends (the narrow interface, Chroma, in memory);
* ``_directory``: an embedded store's directory (lock, clean-close stamp, intent files); a caller outside
  the store asks :func:`holds_store` whether a directory holds one;
* ``_codec``: how a unit is stored as a record (:func:`unit_to_metadata`, for loaders that write records
  themselves, such as the maintenance benchmark).

Names are imported on first use, so a command that needs one small module (``hindsight stats`` reading the
summary) does not import the whole store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_hindsight._lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_hindsight.store._codec import unit_to_metadata
    from langchain_hindsight.store._directory import DATA_FILE, holds_store
    from langchain_hindsight.store._policy import ConfidencePolicy
    from langchain_hindsight.store.memory_store import MemoryStore
    from langchain_hindsight.store.writes import LLMWriteJudge, RuleWriteJudge, WriteJudge, WriteResult

_EXPORTS: dict[str, str] = {
    "DATA_FILE": "._directory",
    "ConfidencePolicy": "._policy",
    "LLMWriteJudge": ".writes",
    "MemoryStore": ".memory_store",
    "RuleWriteJudge": ".writes",
    "WriteJudge": ".writes",
    "WriteResult": ".writes",
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
