"""Embedders: the offline MiniLM (ONNX), USE multilingual, and the script-routed default.

* :mod:`~langchain_hindsight.embeddings.multilingual`: :class:`ScriptRoutedEmbeddings` (the default,
  :func:`default_embeddings`) and :class:`MultilingualEmbeddings`;
* :mod:`~langchain_hindsight.embeddings.local`: :class:`LocalEmbeddings` (MiniLM) and the
  :class:`EmbedderIdentity` a store records (:func:`embedder_identity`).

Nothing here loads a model (or numpy, onnxruntime) until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_hindsight._lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_hindsight.embeddings.local import MINILM_NAME, EmbedderIdentity, LocalEmbeddings, embedder_identity
    from langchain_hindsight.embeddings.multilingual import (
        MultilingualEmbeddings,
        ScriptRoutedEmbeddings,
        default_embeddings,
    )

_EXPORTS: dict[str, str] = {
    "EmbedderIdentity": ".local",
    "LocalEmbeddings": ".local",
    "MINILM_NAME": ".local",
    "MultilingualEmbeddings": ".multilingual",
    "ScriptRoutedEmbeddings": ".multilingual",
    "default_embeddings": ".multilingual",
    "embedder_identity": ".local",
}
"""Each public name and the module defining it (imported on first use)."""

__all__ = [
    "MINILM_NAME",
    "EmbedderIdentity",
    "LocalEmbeddings",
    "MultilingualEmbeddings",
    "ScriptRoutedEmbeddings",
    "default_embeddings",
    "embedder_identity",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
