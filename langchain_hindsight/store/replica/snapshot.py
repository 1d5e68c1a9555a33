"""A read-only store of one namespace of a closed embedded store, from its files (what ``hindsight search`` uses).

A store that closes cleanly leaves, next to Chroma's files, the lexical index
and the recall mirror of each namespace it searched (``lexical/`` and
``mirror/``), and a stamp listing them (``store._directory``: the stamp exists only while
no process has the store open, and only when every write of the last session
was followed by the close that saved these files). :class:`StoreSnapshot` loads
them into the same :class:`~langchain_hindsight.store.replica.records.Held` the live
store's replica reads, and answers hybrid recall from it exactly as the live store
does: it never imports chromadb and reads no record, so a one-off command pays for
loading two arrays instead of starting a database. It exists only when the files
are trusted; otherwise the caller opens a
:class:`~langchain_hindsight.store.memory_store.MemoryStore` as usual.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from langchain_hindsight.embeddings.identity import embedder_identity
from langchain_hindsight.embeddings.models import QueryEmbedder, builtin_model
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.store._checks import check_k
from langchain_hindsight.store._naming import check_namespace, collection_name
from langchain_hindsight.store.replica.files import DerivedFiles
from langchain_hindsight.store.replica.records import Held, Mirror
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import MemoryUnit

__all__ = ["SnapshotFiles", "StoreSnapshot"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SnapshotFiles:
    """The trusted derived files of one namespace, found by :meth:`locate` (nothing loaded yet).

    Attributes:
        namespace: The namespace.
        lexical: Its lexical index snapshot.
        mirror: Its recall mirror snapshot.
        identity: The embedder identity the mirror's vectors were written with.
    """

    namespace: str
    lexical: Path
    mirror: Path
    identity: str

    @classmethod
    def locate(cls, files: DerivedFiles, namespace: str = "default") -> SnapshotFiles | None:
        """``namespace``'s two snapshots among ``files`` if the stamp vouches for both, else ``None``.

        The question the live store's replica asks before it loads either (``DerivedFiles.vouched``).
        """
        name = collection_name(check_namespace(namespace), "memories")
        lexical, mirror = files.lexical_path(name), files.mirror_path(name)
        if not (files.vouched(lexical) and files.vouched(mirror)):
            return None
        identity = Mirror.read_identity(mirror)
        return None if identity is None else cls(namespace, lexical, mirror, identity)

    def default_embeddings(self) -> QueryEmbedder | None:
        """A new instance of the built-in model that wrote the vectors (``None``: another embedder).

        The model without LangChain (:func:`~langchain_hindsight.embeddings.models.builtin_model`):
        a snapshot only embeds queries, with the vectors the public embedder of that name computes.
        """
        return builtin_model(self.identity)

    def load(self, embeddings: QueryEmbedder) -> StoreSnapshot | None:
        """Load both files; ``None`` when they cannot answer for ``embeddings`` (unreadable, or they disagree)."""
        if str(embedder_identity(embeddings)) != self.identity:
            logger.debug("snapshot of %r holds vectors of %s, not this embedder's", self.namespace, self.identity)
            return None
        held = Held.load(self.lexical, self.mirror, self.identity)
        return None if held is None else StoreSnapshot(self.namespace, held, embeddings)


class StoreSnapshot:
    """One namespace of a closed embedded store, searchable from its lexical index and recall mirror.

    Offers what :class:`~langchain_hindsight.recall.retriever.HindsightRetriever`
    needs of a store (``embeddings``, ``vocabulary``, ``namespace``,
    ``namespace_or_default`` and ``hybrid_search``), with the same results
    :meth:`MemoryStore.hybrid_search` gives for a mirrored namespace. Built by
    :meth:`SnapshotFiles.load` once :meth:`SnapshotFiles.locate` found its files.

    Example:
        >>> with DerivedFiles.closed_store("./memory_db") as files:  # doctest: +SKIP
        ...     located = SnapshotFiles.locate(files)
        ...     snapshot = None if located is None else located.load(located.default_embeddings())
        >>> if snapshot is not None:  # else open a MemoryStore  # doctest: +SKIP
        ...     HindsightRetriever(store=snapshot).recall("清洗销售数据")
    """

    def __init__(self, namespace: str, held: Held, embeddings: QueryEmbedder) -> None:
        self.namespace = check_namespace(namespace)
        self.embeddings = embeddings
        self.vocabulary = TaskTypeVocabulary()
        self._held = held

    def namespace_or_default(self, namespace: str | None) -> str:
        """``namespace`` if it is this snapshot's (``None``: this snapshot's), else a :class:`ConfigurationError`."""
        if namespace is None or namespace == self.namespace:
            return self.namespace
        raise ConfigurationError(f"this snapshot holds namespace {self.namespace!r}, not {namespace!r}")

    def __len__(self) -> int:
        return len(self._held.mirror)

    def hybrid_search(
        self,
        query: str,
        vector: Sequence[float],
        *,
        k: int = 10,
        namespace: str | None = None,
        normalize: bool = False,
    ) -> tuple[dict[str, tuple[MemoryUnit, float]], dict[str, float]]:
        """:meth:`MemoryStore.hybrid_search <langchain_hindsight.store.memory_store.MemoryStore.hybrid_search>`
        over the snapshot: the dense arm's ``k`` nearest (exact) and the lexical arm's ``k`` best, with cosines.
        """  # noqa: D205
        self.namespace_or_default(namespace)
        check_k(k)
        return self._held.hybrid(query, vector, k, normalize)
