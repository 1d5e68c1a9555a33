"""The backend interface: :class:`Backend` (named collections) and :class:`Records` (one collection).

As in LangGraph's ``BaseStore``, subclasses implement the abstract methods and everything else (``get_or_create``,
paging) is built on them; it is documented here once, not on each implementation. Failures of the storage itself
surface as :class:`~langchain_hindsight.errors.StoreError`; a programming error keeps its own type.

Filters (``where``) are Chroma's subset the store uses: ``{"field": value}``,
``{"field": {"$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte" | "$in" | "$nin": ...}}`` and
``{"$and" | "$or": [clauses]}``; document filters (``where_document``) are ``{"$contains" | "$not_contains": text}``
combined the same way.
"""

from __future__ import annotations

import functools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from langchain_hindsight.errors import BackendError

if TYPE_CHECKING:
    from langchain_hindsight.store._directory import HeldDirectory

__all__ = [
    "Backend",
    "HybridRows",
    "Include",
    "LexicalScheme",
    "Metadata",
    "Records",
    "Rows",
    "Vector",
    "bm25_idf",
    "check_n_results",
    "check_write",
]

Include = Literal["documents", "metadatas", "embeddings", "distances"]
"""What a read returns besides ids."""
Metadata = Mapping[str, str | int | float | bool]
"""A record's (or a collection's) metadata: flat scalar values."""
Vector = Sequence[float]
Rows = dict[str, Any]
"""A read result, shaped like Chroma's: ``ids`` always; ``documents``, ``metadatas``, ``embeddings``
(a 2-d float array) when included, else ``None``. A query result nests one such list per query vector
and adds ``distances`` (cosine distance, ``1 - similarity``)."""

_T = TypeVar("_T")


def check_write(collection: str, ids: Sequence[str], *columns: Sequence[Any] | Any | None) -> list[str]:
    """``ids`` as a list, once each, with every given column one entry per id (else :class:`ValueError`)."""
    ids = list(ids)
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate ids in one write to collection {collection!r}")
    for column in columns:
        if column is not None and len(column) != len(ids):
            raise ValueError("every column of a write must have one entry per id")
    return ids


def check_n_results(n_results: object) -> None:
    """A query's ``n_results`` is a positive int (a bool is not), else :class:`ValueError`, as Chroma checks."""
    if isinstance(n_results, bool) or not isinstance(n_results, int) or n_results < 1:
        raise ValueError(f"n_results must be a positive int, got {n_results!r}")


@dataclass(frozen=True)
class LexicalScheme:
    """How a backend that answers the lexical arm itself (:attr:`Backend.lexical`) indexes and scores.

    The store builds it from its own tokenizer (``tokens.lexical_scheme``), so a database scores exactly as the
    store's in-process BM25 index would.

    Attributes:
        record_tokens: A stored record's lexical tokens from its document and metadata (repeats count), or ``None``
            when the record is not lexically searchable (an inactive unit, a run record).
        query_terms: A query's tokens.
        signature: Changes whenever either function's rules change (stored terms are then recomputed).
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation.
        prior_documents: Pseudo-documents added to the corpus size in a normalised search's idf.
    """

    record_tokens: Callable[[str | None, Mapping[str, Any]], list[str] | None]
    query_terms: Callable[[str], list[str]]
    signature: str
    k1: float
    b: float
    prior_documents: int


def bm25_idf(documents: float, df: float) -> float:
    """BM25's idf of a term found in ``df`` of ``documents`` documents: the in-process index's and the database's."""
    return math.log(1.0 + (documents - df + 0.5) / (df + 0.5))


@dataclass(frozen=True)
class HybridRows:
    """Both arms of a hybrid search answered at once (:meth:`Records.hybrid_query`).

    Attributes:
        nearest: The dense arm: ``(id, cosine distance)`` of the nearest records (any status), nearest
            first (ties by id), as :meth:`Records.query` would return them.
        lexical: The lexical arm: ``(id, BM25 score)``, best first, as :meth:`Records.lexical_search` would.
        records: ``id -> (document, metadata, inner product with the query vector)`` for every id of either arm.
    """

    nearest: list[tuple[str, float]]
    lexical: list[tuple[str, float]]
    records: dict[str, tuple[str | None, dict[str, Any], float]]


class Records(ABC):
    """One named collection of records (``id``, embedding, document, metadata) in a :class:`Backend`."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The collection's name."""

    @property
    @abstractmethod
    def metadata(self) -> dict[str, Any]:
        """The collection's own metadata (a copy)."""

    @property
    def instance(self) -> str:
        """What tells this collection from a later one of the same name (dropped, then created again).

        A store compares it to reopen a collection another process replaced (``StoreCore._recheck``). The default,
        the name, cannot tell them apart: a backend other processes write overrides it.
        """
        return self.name

    @abstractmethod
    def get(
        self,
        *,
        ids: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        where_document: Mapping[str, Any] | None = None,
        include: Sequence[Include] = ("documents", "metadatas"),
        limit: int | None = None,
        offset: int | None = None,
    ) -> Rows:
        """The records among ``ids`` (default: all) that match the filters, in a stable order, paged."""

    @abstractmethod
    def query(
        self,
        *,
        query_embeddings: Sequence[Vector],
        n_results: int,
        where: Mapping[str, Any] | None = None,
        include: Sequence[Include] = ("documents", "metadatas", "distances"),
    ) -> Rows:
        """The ``n_results`` records nearest (cosine) to each query vector that match ``where``."""

    def upsert(
        self,
        *,
        ids: Sequence[str],
        embeddings: Sequence[Vector] | Any,
        documents: Sequence[str] | None = None,
        metadatas: Sequence[Metadata] | None = None,
    ) -> None:
        """Insert or replace whole records."""
        self._write_columns(ids, embeddings, documents, metadatas, whole=True)

    def update(
        self,
        *,
        ids: Sequence[str],
        embeddings: Sequence[Vector] | Any | None = None,
        documents: Sequence[str] | None = None,
        metadatas: Sequence[Metadata] | None = None,
    ) -> None:
        """Change stored records (other ids are skipped): given embeddings and documents replace, metadata merges in."""
        self._write_columns(ids, embeddings, documents, metadatas, whole=False)

    def _write_columns(
        self,
        ids: Sequence[str],
        embeddings: Sequence[Vector] | Any | None,
        documents: Sequence[str] | None,
        metadatas: Sequence[Metadata] | None,
        *,
        whole: bool,
    ) -> None:
        """:meth:`upsert` (``whole``) or :meth:`update`, for a backend writing both alike (else it overrides them)."""
        raise NotImplementedError

    @abstractmethod
    def delete(self, *, ids: Sequence[str]) -> None:
        """Delete the records among ``ids`` (missing ids are ignored)."""

    @abstractmethod
    def count(self) -> int:
        """How many records the collection holds."""

    @abstractmethod
    def modify(self, *, name: str | None = None, metadata: Metadata | None = None) -> None:
        """Rename the collection and/or replace its metadata."""

    # ------------------------------------------------------------------ built on the above
    def pages(
        self,
        *,
        include: Sequence[Include] = ("documents", "metadatas"),
        where: Mapping[str, Any] | None = None,
        size: int = 1000,
    ) -> Iterator[Rows]:
        """Every matching record, ``size`` at a time (stable while nothing writes)."""
        offset = 0
        while True:
            rows = self.get(where=where, include=include, limit=size, offset=offset)
            if rows["ids"]:
                yield rows
            if len(rows["ids"]) < size:
                return
            offset += size

    def exists(self, ids: Sequence[str]) -> list[str]:
        """The ids among ``ids`` that are stored."""
        return list(self.get(ids=list(ids), include=[])["ids"]) if ids else []

    # ------------------------------------------------------------------ only where Backend.lexical is set
    def lexical_search(self, query: str, k: int, *, normalize: bool = False) -> list[tuple[str, float]]:
        """BM25 matches ``(id, score)`` among lexically indexed records, best first (scored as the store's index)."""
        raise NotImplementedError  # the store asks only a backend with a lexical scheme

    def hybrid_query(self, query: str, vector: Vector, *, k: int, nearest: int, normalize: bool = False) -> HybridRows:
        """The ``nearest`` records nearest ``vector``, the ``k`` best lexical matches of ``query``, their records."""
        raise NotImplementedError


class Backend(ABC):
    """A database of named :class:`Records` collections (override the defaults where the storage differs)."""

    lexical: LexicalScheme | None = None
    """How the database scores the lexical arm itself (:meth:`Records.lexical_search`, :meth:`Records.hybrid_query`);
    ``None``: it does not. Decides a store's read path when it opens: such a backend is read directly, any other
    through the store's in-process lexical index."""
    directory: HeldDirectory | None = None
    """The directory this backend owns exclusively (``None``: none, e.g. in memory or a server). The backend only
    holds it, notes its writes on it and closes it after its own files (``store._directory``)."""

    @abstractmethod
    def get_collection(self, name: str) -> Records | None:
        """The collection called ``name``, or ``None`` if there is none."""

    @abstractmethod
    def create_collection(self, name: str, metadata: Metadata, *, like: Records | None = None) -> Records:
        """Create the (cosine) collection ``name``; ``like``: copy that collection's index configuration.

        Raises:
            StoreError: it exists already.
        """

    @abstractmethod
    def list_collections(self) -> list[Records]:
        """Every collection."""

    @abstractmethod
    def delete_collection(self, name: str) -> None:
        """Drop the collection ``name`` and every record in it."""

    # ------------------------------------------------------------------ built on the above, or defaults
    def get_or_create(self, name: str, metadata: Metadata) -> Records:
        """The collection ``name``, created with ``metadata`` when missing (a concurrent creator's wins)."""
        found = self.get_collection(name)
        if found is not None:
            return found
        try:
            return self.create_collection(name, metadata)
        except BackendError:
            found = self.get_collection(name)
            if found is None:
                raise
            return found

    @property
    def max_batch_size(self) -> int:
        """The most records one write may carry."""
        return 5000

    @property
    def single_writer(self) -> bool:
        """True when nothing but this object writes the data (an embedded directory, memory)."""
        return True

    def atomic(self, key: str, fn: Callable[[], _T]) -> _T:
        """Run ``fn`` (a store write plan on namespace ``key``) so that its writes land together or not at all.

        The default just calls ``fn``: a single-writer backend relies on the store's two-step writes and their
        repair. A database backend runs it in one transaction.
        """
        return fn()

    def atomic_all(self, keys: Sequence[str], fn: Callable[[], _T]) -> _T:
        """``fn()`` as one write plan over several namespaces: :meth:`atomic` nested once per key.

        The keys are taken in sorted order, so two such plans never wait for each other in a cycle. On a database
        every nested call joins the one transaction and takes its key's lock.
        """
        for key in sorted(set(keys), reverse=True):  # the first key's atomic() is the outermost
            fn = functools.partial(self.atomic, key, fn)
        return fn()

    @property
    def can_erase(self) -> bool:
        """True when :meth:`erase` can physically erase deleted records (by default: a :attr:`directory`)."""
        return self.directory is not None

    def erase(self, rebuild: Sequence[str] | None) -> None:  # noqa: B027 - optional, nothing by default
        """Physically erase deleted records: rebuild ``rebuild`` (names; ``None``: every collection), then files.

        The default does nothing: a backend whose deletes leave no bytes behind needs nothing more.
        """

    def owe_erase(self) -> None:  # noqa: B027 - optional, nothing by default
        """Note durably, inside the current write plan, that its deletes still wait for :meth:`erase`.

        A database records it here and :meth:`recover_interrupted` finishes the erase at the next open;
        the default does nothing (an embedded directory notes the intent in a file, ``store._directory``).
        """

    def recover_interrupted(self) -> bool:
        """Finish or undo maintenance (an :meth:`erase`) a crash interrupted; True if there was any."""
        return False

    def close(self) -> None:  # noqa: B027 - optional, nothing by default
        """Release what the backend holds (idempotent). The default does nothing."""
