"""Where recall reads on every backend but a database: the store's in-process copy of its data, and its files.

:class:`Replica` owns them and reads them; ``records`` (the recall mirror), ``lexical`` (the BM25 index), ``feed``
(a shared Chroma server's change feed), ``summary`` (what ``hindsight stats`` prints) and ``files`` (the one
reader of the derived files) are its parts. Derived data is rebuilt whenever it cannot be trusted.
Names are imported on first use: ``hindsight stats`` reads the summary without importing numpy or the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_hindsight._lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_hindsight.store.replica.feed import ChangeFeed
    from langchain_hindsight.store.replica.files import DerivedFiles
    from langchain_hindsight.store.replica.lexical import LexicalIndex
    from langchain_hindsight.store.replica.records import Mirror
    from langchain_hindsight.store.replica.replica import Replica

_EXPORTS: dict[str, str] = {
    "ChangeFeed": ".feed",
    "DerivedFiles": ".files",
    "LexicalIndex": ".lexical",
    "Mirror": ".records",
    "Replica": ".replica",
}

__all__ = ["ChangeFeed", "DerivedFiles", "LexicalIndex", "Mirror", "Replica"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
