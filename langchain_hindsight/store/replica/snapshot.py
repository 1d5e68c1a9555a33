"""A read-only store of one namespace of a closed embedded store, from its files (what ``hindsight search`` uses).

:class:`StoreSnapshot` loads the snapshot a clean close left, when the stamp vouches for it, into the same
:class:`~langchain_hindsight.store.replica.records.Held` the live store's replica reads, and answers hybrid recall
from it as the live store does, without importing chromadb or reading a record.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_hindsight.embeddings.identity import embedder_identity
from langchain_hindsight.embeddings.models import QueryEmbedder
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.store._checks import check_k
from langchain_hindsight.store._naming import check_namespace
from langchain_hindsight.store.replica.files import DerivedFiles, read_header
from langchain_hindsight.store.replica.records import Held
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import MemoryUnit

__all__ = ["StoreSnapshot"]


class StoreSnapshot:
    """One namespace of a closed embedded store: the recall surface of a store (``RecallSource``), read-only.

    Example:
        >>> with DerivedFiles.closed_store("./memory_db") as files:  # doctest: +SKIP
        ...     identity = StoreSnapshot.identity_of(files)
        ...     snapshot = None if identity is None else StoreSnapshot.load(files, "default", builtin_model(identity))
        >>> if snapshot is not None:  # else open a MemoryStore  # doctest: +SKIP
        ...     HindsightRetriever(store=snapshot).recall("清洗销售数据")
    """

    def __init__(self, namespace: str, held: Held, embeddings: QueryEmbedder) -> None:
        self.namespace = check_namespace(namespace)
        self.embeddings = embeddings
        self.vocabulary = TaskTypeVocabulary()
        self._held = held

    @staticmethod
    def identity_of(files: DerivedFiles, namespace: str = "default") -> str | None:
        """The embedder identity ``namespace``'s snapshot among ``files`` was written with, if the stamp vouches
        for it (read from its header: nothing loaded); else ``None``.
        """  # noqa: D205
        path = files.trusted_snapshot(check_namespace(namespace))
        identity = None if path is None else (read_header(path, "mirror") or {}).get("identity")
        return identity if isinstance(identity, str) else None

    @classmethod
    def load(cls, files: DerivedFiles, namespace: str, embeddings: QueryEmbedder) -> StoreSnapshot | None:
        """``namespace`` from its snapshot among ``files``; ``None`` unless the stamp vouches for it, it reads and
        holds the vectors of ``embeddings``.
        """  # noqa: D205
        path = files.trusted_snapshot(check_namespace(namespace))
        held = None if path is None else Held.load(path, str(embedder_identity(embeddings)))
        return None if held is None else cls(namespace, held, embeddings)

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
