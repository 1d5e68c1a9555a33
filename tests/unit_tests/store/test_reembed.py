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
