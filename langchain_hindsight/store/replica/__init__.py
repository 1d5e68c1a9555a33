"""Where recall reads on every backend but a database: the store's in-process copy of its data, and its files.

:class:`Replica` (``replica``) is their one owner in a store, and that store's reader; the modules below are its
parts.

Derived data is rebuilt from the backend whenever it cannot be trusted; it is never the only copy. A database
that answers recall itself (Postgres, :attr:`~langchain_hindsight.store.backend.Backend.lexical`) has none.

* :mod:`~langchain_hindsight.store.replica.records`: the recall mirror, every active unit's vector and
  record of a namespace in memory (an exact dense arm, no backend read per query);
* :mod:`~langchain_hindsight.store.replica.lexical`: the BM25 index of the lexical arm and its snapshot file;
* :mod:`~langchain_hindsight.store.replica.feed`: the change feed that keeps other writers' changes in view on
  a shared Chroma server;
* :mod:`~langchain_hindsight.store.replica.summary`: the statistics summary ``hindsight stats`` answers from;
* :mod:`~langchain_hindsight.store.replica.snapshot`: :class:`StoreSnapshot`, recall from the files alone
  (the CLI's quick path);
* :mod:`~langchain_hindsight.store.replica.files`: :class:`DerivedFiles`, where each derived file lives,
  which the stamp vouches for, and the one reader the live store and the CLI's quick paths share.

Names are imported on first use: ``hindsight stats`` reads the summary without importing numpy or the store.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_hindsight.store.replica.feed import ChangeFeed
    from langchain_hindsight.store.replica.files import DerivedFiles
    from langchain_hindsight.store.replica.lexical import LexicalIndex, tokenize
    from langchain_hindsight.store.replica.records import Mirror
    from langchain_hindsight.store.replica.replica import Replica
    from langchain_hindsight.store.replica.snapshot import SnapshotFiles, StoreSnapshot

_EXPORTS: dict[str, str] = {
    "ChangeFeed": "feed",
    "DerivedFiles": "files",
    "LexicalIndex": "lexical",
    "Mirror": "records",
    "Replica": "replica",
    "SnapshotFiles": "snapshot",
    "StoreSnapshot": "snapshot",
    "tokenize": "lexical",
}

__all__ = [
    "ChangeFeed",
    "DerivedFiles",
    "LexicalIndex",
    "Mirror",
    "Replica",
    "SnapshotFiles",
    "StoreSnapshot",
    "tokenize",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
