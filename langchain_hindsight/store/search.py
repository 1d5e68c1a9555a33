"""The search methods of ``MemoryStore``: the dense arm, the lexical (BM25) arm, and both at once.

Each checks its arguments and asks the store's reader (``StoreCore.reader``, chosen once when the store opens);
only a filtered dense search (``where``) asks the backend's index, on every backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_hindsight._checks import check_int, check_query
from langchain_hindsight._text import clean_text
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.store._core import StoreCore, backend_errors, check_ids, query_index
from langchain_hindsight.types import MemoryUnit

__all__ = ["hybrid_search", "lexical_search", "search", "search_by_vector", "similarity_by_ids"]

_MAX_K = 1 << 30
"""Largest search depth ``k``: the over-fetched query depth (``k`` and half again) must fit a backend's 32-bit count."""


def _check_vector(method: str, vector: object) -> None:
    """Refuse a query vector that is not a non-empty sequence of real numbers (``None``, ``[]``, a string)."""
    if isinstance(vector, str | bytes | bytearray | dict) or not hasattr(vector, "__len__"):
        raise ConfigurationError(f"{method}: vector must be a sequence of numbers, got {type(vector).__name__}")
    if len(vector) == 0:  # type: ignore[arg-type]
        raise ConfigurationError(f"{method}: vector is empty")
    try:
        first = vector[0]  # type: ignore[index]
    except (TypeError, KeyError, IndexError) as e:
        raise ConfigurationError(f"{method}: vector must be a sequence of numbers") from e
    if isinstance(first, bool) or not hasattr(first, "__float__"):
        raise ConfigurationError(f"{method}: vector must hold numbers, got {type(first).__name__}")


@backend_errors
def search(
    store: StoreCore, query: str, *, k: int = 10, namespace: str | None = None, include_embeddings: bool = False
) -> list[tuple[MemoryUnit, float, list[float] | None]]:
    """Dense nearest neighbours among *active* units: ``(unit, cosine_similarity, embedding)``.

    Raises:
        ConfigurationError: ``query`` is blank (it has no words to match).
    """
    check_query("MemoryStore.search", query)
    check_int("k", k, 1, _MAX_K)
    vector = store.embeddings.embed_query(clean_text(query))
    return search_by_vector(store, vector, k=k, namespace=namespace, include_embeddings=include_embeddings)


@backend_errors
def search_by_vector(
    store: StoreCore,
    vector: Sequence[float],
    *,
    k: int = 10,
    namespace: str | None = None,
    include_embeddings: bool = False,
    where: dict[str, Any] | None = None,
) -> list[tuple[MemoryUnit, float, list[float] | None]]:
    """Like :meth:`search` with a precomputed query vector; a ``where`` filter is a query of the backend's index."""
    _check_vector("MemoryStore.search_by_vector", vector)
    check_int("k", k, 1, _MAX_K)
    ns = store.namespace_or_default(namespace)
    with store.lock:
        if where is None:
            return store.reader.nearest(ns, vector, k, include_embeddings)
        return query_index(store, ns, vector, k, include_embeddings, {"$and": [{"status": "active"}, where]})


@backend_errors
def similarity_by_ids(
    store: StoreCore, vector: Sequence[float], memory_ids: Sequence[str], *, namespace: str | None = None
) -> list[tuple[MemoryUnit, float]]:
    """The *active* units among ``memory_ids`` with their cosine similarity to ``vector``.

    Hybrid recall scores the candidates only the lexical arm found with it. Order follows ``memory_ids``;
    missing or inactive ids are skipped.
    """
    _check_vector("MemoryStore.similarity_by_ids", vector)
    ids = check_ids(memory_ids) if memory_ids else []
    if not ids:
        return []
    ns = store.namespace_or_default(namespace)
    with store.lock:
        return store.reader.similarities(ns, vector, ids)


@backend_errors
def hybrid_search(
    store: StoreCore,
    query: str,
    vector: Sequence[float],
    *,
    k: int = 10,
    namespace: str | None = None,
    normalize: bool = False,
) -> tuple[dict[str, tuple[MemoryUnit, float]], dict[str, float]]:
    """Both arms of hybrid recall at once: the dense and lexical candidates, each with its cosine similarity.

    Equivalent to :meth:`search_by_vector` (``k``), :meth:`lexical_search` (``k``) and :meth:`similarity_by_ids`
    for the lexical matches the dense arm did not return (a database answers in one statement).

    Args:
        store: The store (``self``: this is :meth:`MemoryStore.hybrid_search`).
        query: The query text (lexical arm).
        vector: Its embedding (dense arm).
        k: Depth of each arm.
        namespace: Namespace to search (default: the store's).
        normalize: Lexical scores as a share of the query's idf mass (see :meth:`lexical_search`).

    Returns:
        ``(candidates, lexical)``: every candidate's ``(unit, cosine_similarity)``
        by id, and the lexical arm's BM25 score by id.

    Raises:
        ConfigurationError: ``query`` is blank (it has no words to match).
    """
    check_query("MemoryStore.hybrid_search", query)
    _check_vector("MemoryStore.hybrid_search", vector)
    check_int("k", k, 1, _MAX_K)
    ns = store.namespace_or_default(namespace)
    with store.lock:
        return store.reader.hybrid(ns, query, vector, k, normalize)


@backend_errors
def lexical_search(
    store: StoreCore, query: str, *, k: int = 10, namespace: str | None = None, normalize: bool = False
) -> list[tuple[str, float]]:
    """BM25 matches among active units: ``(memory_id, score)``, best first.

    ``normalize=True`` scales scores to [0, 1] by the query's idf mass (see
    :meth:`LexicalIndex.search <langchain_hindsight.store.replica.lexical.LexicalIndex.search>`).

    Raises:
        ConfigurationError: ``query`` is blank (it has no words to match).
    """
    check_query("MemoryStore.lexical_search", query)
    check_int("k", k, 1, _MAX_K)
    ns = store.namespace_or_default(namespace)
    with store.lock:
        return store.reader.lexical(ns, query, k, normalize)
