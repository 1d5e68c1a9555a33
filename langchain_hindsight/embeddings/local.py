"""The MiniLM embedder: :class:`LocalEmbeddings`, all-MiniLM-L6-v2 offline as a LangChain ``Embeddings``.

:class:`LocalEmbeddings` runs all-MiniLM-L6-v2, whose weights ship inside this package (16-bit, see
:func:`~langchain_hindsight.embeddings.models.default_model_path`), through ONNX Runtime from a
one-time local export (see :mod:`langchain_hindsight.embeddings._onnx`), falling back to
``sentence-transformers`` on torch. It is the model of
:class:`~langchain_hindsight.embeddings.models.MiniLMModel` (which computes its vectors, without
LangChain) with LangChain's ``Embeddings`` base. The default embedder of
:class:`~langchain_hindsight.MemoryStore` is
:class:`~langchain_hindsight.embeddings.multilingual.ScriptRoutedEmbeddings`, which joins it with
the Universal Sentence Encoder. Any :class:`langchain_core.embeddings.Embeddings`
(``HuggingFaceEmbeddings``, OpenAI, a local server) can replace them: pass it as
``MemoryStore(embeddings=...)``; the store records its identity
(:func:`~langchain_hindsight.embeddings.identity.embedder_identity`).
"""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from langchain_hindsight.embeddings.models import MiniLMModel

__all__ = ["LocalEmbeddings"]


class LocalEmbeddings(MiniLMModel, Embeddings):
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

    # Every method is MiniLMModel's; Embeddings adds the async pair (the sync call in an executor).
