"""Embedder identity per store, EmbedderMismatchError, and ``hindsight reembed`` (in place, resumable, no loss)."""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from langchain_hindsight.embeddings.identity import embedder_identity


class NoEmbeddings(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise AssertionError("no embedding expected")

    def embed_query(self, text: str) -> list[float]:
        raise AssertionError("no embedding expected")


# -- identity and mismatch ------------------------------------------------------------------------


def test_foreign_embedders_are_named_by_model_without_a_call() -> None:
    from langchain_huggingface import HuggingFaceEmbeddings

    from langchain_hindsight.embeddings.models import default_model_path

    hf = HuggingFaceEmbeddings.model_construct(model_name=default_model_path())  # no model load
    assert embedder_identity(hf).name == "all-MiniLM-L6-v2"  # the same vectors as LocalEmbeddings
    other = HuggingFaceEmbeddings.model_construct(
        model_name="sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
    )
    assert embedder_identity(other).name == "paraphrase-multilingual-MiniLM-L12-v2"
    assert embedder_identity(NoEmbeddings()).name == "NoEmbeddings"  # not the module path: entry points differ


# -- reembed --------------------------------------------------------------------------------------


def test_forget_erases_the_copy_an_interrupted_reembed_left() -> None:
    """A run killed mid-copy leaves a side collection holding the units' text until a re-run: forget reaches it."""
    from langchain_hindsight import MemoryStore, MemoryUnit
    from langchain_hindsight.store.backend import InMemoryBackend
    from tests.fakes import HashEmbeddings

    with MemoryStore(backend=InMemoryBackend(), embeddings=HashEmbeddings()) as store:
        kept = store.add(MemoryUnit(content="Keep the weekly report to one page.")).memory_id
        gone = store.add(MemoryUnit(content="Client A wants to be reached by email.")).memory_id
        src = store.collection(store.namespace)
        assert src is not None
        side = store.backend.create_collection(
            src.name + "-reembed", {**src.metadata, "hindsight_role": "reembed"}, like=src
        )
        rows = src.get(include=["documents", "metadatas", "embeddings"])
        side.upsert(ids=rows["ids"], embeddings=rows["embeddings"], documents=rows["documents"],
                    metadatas=rows["metadatas"])  # fmt: skip
        assert store.forget(gone) == 1
        assert side.get(include=[])["ids"] == [kept]


def test_a_namespace_forgotten_then_made_by_another_embedder_is_checked_again() -> None:
    """After ``forget(namespace=...)`` another process may create the namespace with its embedder: never mixed."""
    import pytest

    from langchain_hindsight import MemoryStore, MemoryUnit
    from langchain_hindsight.errors import EmbedderMismatchError
    from langchain_hindsight.store.backend import InMemoryBackend
    from tests.fakes import HashEmbeddings, NgramEmbeddings

    backend = InMemoryBackend()
    with MemoryStore(backend=backend, embeddings=HashEmbeddings()) as store:
        store.add(MemoryUnit(content="Keep the weekly report to one page."))
        store.forget(namespace=store.namespace)
        with MemoryStore(backend=backend, embeddings=NgramEmbeddings()) as other:
            other.add(MemoryUnit(content="Client A wants to be reached by email."))
        with pytest.raises(EmbedderMismatchError):
            store.add(MemoryUnit(content="Send the report on Fridays."))
