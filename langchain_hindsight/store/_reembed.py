"""Re-embedding (``MemoryStore.reembed``, ``hindsight reembed``): migrate a store in place to another embedder.

Each memories and archive collection is migrated on its own, in four steps:

1. **Copy.** Every record (id, text, every metadata field) is re-embedded from
   its stored text by the new embedder and written into a side collection
   (``<name>-reembed``, role ``reembed``, invisible to the store). A record
   already there with the same text and metadata is not embedded again, so a
   re-run after a crash continues where it stopped, and records the old
   collection gained or lost in the meantime are synced.
2. **Verify.** The side collection must hold exactly the old collection's ids;
   then it is marked complete.
3. **Switch.** The old collection is dropped and the side collection renamed to
   its name, with the new embedder's identity. Until the drop the old
   collection is untouched and authoritative; after it the complete copy is.
4. A process that died between drop and rename leaves a complete side
   collection and no original: ``_collections.recover_reembed`` (run whenever
   a collection is opened) finishes the rename.

The run journal and the lexical change feed carry no meaningful vectors and are
left as they are.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_hindsight._checks import is_int
from langchain_hindsight.embeddings.local import EmbedderIdentity, check_vectors, embedder_identity
from langchain_hindsight.errors import ConfigurationError, StoreError
from langchain_hindsight.store._collections import (
    EMBEDDER_DIM_KEY,
    EMBEDDER_KEY,
    REEMBED_COMPLETE,
    REEMBED_OF,
    REEMBED_SUFFIX,
    ROLES,
    Collection,
    collection_name,
    identity_metadata,
    recorded_identity,
    recover_reembed,
    switch_reembed,
)
from langchain_hindsight.store.backend import Backend, Include

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings


__all__ = ["ReembedReport", "reembed_collections"]

logger = logging.getLogger(__name__)

_PAGE = 256

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class ReembedReport:
    """What a migration did.

    Attributes:
        embedder: The new embedder's identity (``name (dim-d)``).
        migrated: ``(namespace, role, units)`` for every collection re-embedded.
        unchanged: ``(namespace, role)`` of collections already on the new embedder.
        embedded: Texts embedded by this run (fewer than the units when a run resumed).
    """

    embedder: str
    migrated: list[tuple[str, str, int]] = field(default_factory=list)
    unchanged: list[tuple[str, str]] = field(default_factory=list)
    embedded: int = 0

    @property
    def units(self) -> int:
        """Units now on the new embedder, over every migrated collection."""
        return sum(n for _, _, n in self.migrated)


def _pages(col: Collection, include: list[Include]) -> Iterator[dict[str, Any]]:
    return col.pages(include=include, size=_PAGE)


def _side_collection(backend: Backend, src: Collection, target: EmbedderIdentity) -> Collection:
    """The side collection for ``src``, reused when an earlier run to the same embedder left it."""
    name = src.name + REEMBED_SUFFIX
    side = backend.get_collection(name)
    if side is not None and recorded_identity(side) != target:
        backend.delete_collection(name)  # left by a run towards another embedder: start over
        side = None
    src_meta = {k: v for k, v in src.metadata.items() if k not in (EMBEDDER_KEY, EMBEDDER_DIM_KEY)}
    meta = {**src_meta, **identity_metadata(target), "hindsight_role": "reembed"}
    meta[REEMBED_OF] = src_meta["hindsight_role"]
    if side is None:
        return backend.create_collection(name, {**meta, REEMBED_COMPLETE: False}, like=src)
    side.modify(metadata={**meta, REEMBED_COMPLETE: False})  # the original may have changed since: verify again
    return side


def _migrate(
    backend: Backend,
    src: Collection,
    embeddings: Embeddings,
    target: EmbedderIdentity,
    batch_size: int,
    progress: Progress,
    stage: str,
) -> tuple[int, int]:
    """Copy, verify and switch one collection; return (units, texts embedded)."""
    side = _side_collection(backend, src, target)
    total, done, embedded = src.count(), 0, 0
    src_ids: set[str] = set()
    progress(stage, 0, total)
    for rows in _pages(src, ["documents", "metadatas"]):
        ids, docs, metas = rows["ids"], rows["documents"] or [], rows["metadatas"] or []
        src_ids.update(ids)
        have = side.get(ids=ids, include=["documents", "metadatas"])
        rows_have = zip(have["ids"], have["documents"] or [], have["metadatas"] or [], strict=True)
        copied = {i: (d, m) for i, d, m in rows_have}
        todo = [j for j, i in enumerate(ids) if copied.get(i) != (docs[j], metas[j])]
        for start in range(0, len(todo), batch_size):
            chunk = todo[start : start + batch_size]
            texts = [docs[j] or "" for j in chunk]
            vectors = embeddings.embed_documents(texts)
            check_vectors(vectors, len(texts), target.dimension, source=target.name)
            side.upsert(
                ids=[ids[j] for j in chunk], embeddings=vectors, documents=texts, metadatas=[metas[j] for j in chunk]
            )
            embedded += len(chunk)
            so_far = done + len(ids) - len(todo) + min(start + batch_size, len(todo))
            if so_far < total:  # the page's end reports completion once
                progress(stage, so_far, total)
        done += len(ids)
        progress(stage, done, total)
    extra = [i for rows in _pages(side, []) for i in rows["ids"] if i not in src_ids]
    if extra:  # deleted from the original since an earlier, interrupted run
        side.delete(ids=extra)
    copied_ids = {i for rows in _pages(side, []) for i in rows["ids"]}
    if copied_ids != src_ids or side.count() != src.count():
        raise StoreError(
            f"re-embedding {stage} copied {side.count()} of {src.count()} records; the original is untouched, "
            "run `hindsight reembed` again"
        )
    side.modify(metadata={**side.metadata, REEMBED_COMPLETE: True})
    switch_reembed(backend, src.name, side)
    return len(src_ids), embedded


def reembed_collections(
    backend: Backend,
    embeddings: Embeddings,
    namespaces: Sequence[str],
    *,
    batch_size: int = 64,
    progress: Progress | None = None,
) -> ReembedReport:
    """Migrate the memories and archive collections of ``namespaces`` on ``backend`` to ``embeddings``.

    Use :meth:`MemoryStore.reembed <langchain_hindsight.store.memory_store.MemoryStore.reembed>`;
    nothing else may write to these collections meanwhile.

    Raises:
        EmbeddingError: the new embedder returned unusable vectors (nothing switched).
        StoreError: the backend failed or a copy did not verify (the original is untouched).
    """
    if not is_int(batch_size, 1):
        raise ConfigurationError(f"batch_size must be a positive int, got {batch_size!r}")
    target = embedder_identity(embeddings)
    if target.dimension is None:  # not declared: measure it, so the store records it
        target = EmbedderIdentity(target.name, len(embeddings.embed_query("dimension probe")))
    report = ReembedReport(embedder=str(target))
    embedded = 0
    for ns in namespaces:
        for role in ROLES:
            name = collection_name(ns, role)
            src = backend.get_collection(name) or recover_reembed(backend, name)
            if src is None:
                continue
            if recorded_identity(src) == target and backend.get_collection(name + REEMBED_SUFFIX) is None:
                report.unchanged.append((ns, role))
                continue
            units, n = _migrate(backend, src, embeddings, target, batch_size, progress or _quiet, f"{ns}/{role}")
            report.migrated.append((ns, role, units))
            embedded += n
            logger.info("re-embedded %d unit(s) of %s/%s with %s", units, ns, role, target)
    return ReembedReport(report.embedder, report.migrated, report.unchanged, embedded)


def _quiet(stage: str, done: int, total: int) -> None:
    """The default progress callback: nothing."""
