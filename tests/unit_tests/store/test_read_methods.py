"""``MemoryStore``'s read methods are the functions of ``search`` and ``reads`` themselves, bound as its write
methods are: one signature and one docstring per method, checked as the method's own (``MemoryStore.search``).
"""

from __future__ import annotations

import inspect

import pytest

from langchain_hindsight.errors import ConfigurationError, UnknownOptionError
from langchain_hindsight.store import reads, search
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.store.memory_store import MemoryStore
from tests.fakes import NgramEmbeddings

SEARCH = ("search", "search_by_vector", "similarity_by_ids", "hybrid_search", "lexical_search")
READS = ("namespaces", "list_units", "iter_units", "iter_vectors", "count_by", "statistics", "count", "history")


@pytest.mark.parametrize(("method", "module"), [*((m, search) for m in SEARCH), *((m, reads) for m in READS)])
def test_the_store_methods_are_the_read_functions(method: str, module: object) -> None:
    assert inspect.unwrap(getattr(MemoryStore, method)) is inspect.unwrap(getattr(module, method))
    assert getattr(MemoryStore, method).__doc__ == getattr(module, method).__doc__
    assert "The body of" not in (getattr(module, method).__doc__ or "")


def test_a_bound_read_checks_its_arguments_under_the_methods_name(fake_embeddings: NgramEmbeddings) -> None:
    with MemoryStore(backend=InMemoryBackend(), embeddings=fake_embeddings) as store:
        with pytest.raises(ConfigurationError, match=r"MemoryStore\.search: the query is empty"):
            store.search("  ")
        with pytest.raises(ConfigurationError, match=r"MemoryStore\.hybrid_search: vector is empty"):
            store.hybrid_search("q", [])
        with pytest.raises(UnknownOptionError, match=r"MemoryStore\.count_by option 'namspace'"):
            store.count_by("status", namspace="x")  # type: ignore[call-arg]
        assert store.count() == 0
        assert store.namespaces() == []
