"""Embedders: the offline MiniLM (ONNX), USE multilingual, and the script-routed default.

* :mod:`~langchain_hindsight.embeddings.multilingual`: :class:`ScriptRoutedEmbeddings` (the default,
  :func:`default_embeddings`) and :class:`MultilingualEmbeddings`;
* :mod:`~langchain_hindsight.embeddings.local`: :class:`LocalEmbeddings` (MiniLM);
* :mod:`~langchain_hindsight.embeddings.models`: the same models without LangChain (what computes
  every vector: loading, checks (:func:`check_vectors`), caches, the script routing), which
  ``hindsight search`` embeds its query with;
* :mod:`~langchain_hindsight.embeddings.identity`: the :class:`EmbedderIdentity` a store records
  (:func:`embedder_identity`).

Nothing here loads a model (or numpy, onnxruntime, langchain_core) until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_hindsight._lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_hindsight.embeddings.identity import MINILM_NAME, EmbedderIdentity, embedder_identity
    from langchain_hindsight.embeddings.local import LocalEmbeddings
    from langchain_hindsight.embeddings.models import check_vectors, default_model_path
    from langchain_hindsight.embeddings.multilingual import (
        MultilingualEmbeddings,
        ScriptRoutedEmbeddings,
        default_embeddings,
    )

_EXPORTS: dict[str, str] = {
    "EmbedderIdentity": ".identity",
    "LocalEmbeddings": ".local",
    "MINILM_NAME": ".identity",
    "MultilingualEmbeddings": ".multilingual",
    "ScriptRoutedEmbeddings": ".multilingual",
    "check_vectors": ".models",
    "default_embeddings": ".multilingual",
    "default_model_path": ".models",
    "embedder_identity": ".identity",
}
"""Each public name and the module defining it (imported on first use)."""

__all__ = [
    "MINILM_NAME",
    "EmbedderIdentity",
    "LocalEmbeddings",
    "MultilingualEmbeddings",
    "ScriptRoutedEmbeddings",
    "check_vectors",
    "default_embeddings",
    "default_model_path",
    "embedder_identity",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
