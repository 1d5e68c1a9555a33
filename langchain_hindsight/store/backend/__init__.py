"""Storage backends: the one narrow interface the store writes through (:mod:`.base`), and its implementations.

:class:`ChromaBackend` (an embedded directory or a ``chroma run`` server), :class:`InMemoryBackend` (for
tests and throwaway stores) and ``postgres.PostgresBackend`` (not imported here: psycopg is the optional
``postgres`` extra). A new backend subclasses :class:`Backend` and :class:`Records` in a module of its
own here; nothing else in the store changes. :data:`REBUILD_SUFFIX` names the side collection a scrub
rebuilds a collection into (a caller listing collections skips it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_hindsight._lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_hindsight.store.backend.base import Backend, Include, LexicalScheme, Records, Rows
    from langchain_hindsight.store.backend.chroma import REBUILD_SUFFIX, ChromaBackend, ChromaRecords
    from langchain_hindsight.store.backend.inmemory import InMemoryBackend

_EXPORTS: dict[str, str] = {
    "REBUILD_SUFFIX": ".chroma",
    "Backend": ".base",
    "ChromaBackend": ".chroma",
    "ChromaRecords": ".chroma",
    "InMemoryBackend": ".inmemory",
    "Include": ".base",
    "LexicalScheme": ".base",
    "Records": ".base",
    "Rows": ".base",
}
"""Each public name and the module defining it (imported on first use, so importing one backend loads no other)."""

__all__ = [
    "REBUILD_SUFFIX",
    "Backend",
    "ChromaBackend",
    "ChromaRecords",
    "InMemoryBackend",
    "Include",
    "LexicalScheme",
    "Records",
    "Rows",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
