"""A read-only store of one namespace of a closed embedded store, from its files (what ``hindsight search`` uses).

:class:`StoreSnapshot` loads the lexical and mirror snapshots a clean close left, when the stamp vouches for
both, into the same :class:`~langchain_hindsight.store.replica.records.Held` the live store's replica reads,
and answers hybrid recall from it as the live store does, without importing chromadb or reading a record.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from langchain_hindsight.embeddings.identity import embedder_identity
from langchain_hindsight.embeddings.models import QueryEmbedder
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.store._checks import check_k
from langchain_hindsight.store._naming import check_namespace
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
        """``namespace``'s two snapshots among ``files`` if the stamp vouches for both, else ``None``."""
        lexical, mirror = files.snapshots(check_namespace(namespace))
        if not (files.vouched(lexical) and files.vouched(mirror)):
            return None
        identity = Mirror.read_identity(mirror)
        return None if identity is None else cls(namespace, lexical, mirror, identity)

    def load(self, embeddings: QueryEmbedder) -> StoreSnapshot | None:
        """Load both files; ``None`` when they cannot answer for ``embeddings`` (unreadable, or they disagree)."""
        if str(embedder_identity(embeddings)) != self.identity:
            logger.debug("snapshot of %r holds vectors of %s, not this embedder's", self.namespace, self.identity)
            return None
        held = Held.load(self.lexical, self.mirror, self.identity)
        return None if held is None else StoreSnapshot(self.namespace, held, embeddings)


class StoreSnapshot:
    """One namespace of a closed embedded store: the recall surface of a store (``RecallSource``), read-only.

    Built by :meth:`SnapshotFiles.load` once :meth:`SnapshotFiles.locate` found its files.

    Example:
        >>> with DerivedFiles.closed_store("./memory_db") as files:  # doctest: +SKIP
        ...     located = SnapshotFiles.locate(files)
        ...     snapshot = None if located is None else located.load(builtin_model(located.identity))
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
        """``MemoryStore.hybrid_search`` over the snapshot (``Held.hybrid``)."""
        self.namespace_or_default(namespace)
        check_k(k)
        return self._held.hybrid(query, vector, k, normalize)
