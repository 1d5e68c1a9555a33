"""Re-embedding (``MemoryStore.reembed``, ``hindsight reembed``): migrate a store in place to another embedder.

The memories and archive collections of every namespace asked for are migrated in two steps (docs/embeddings.md):

1. **Copy** (:func:`_sync`) each into a side collection (``<name>-reembed``, role ``reembed``, invisible to the
   store), embedding only what it lacks, so a re-run after a crash continues where it stopped. On a database
   other processes write, a second pass catches up with their writes, outside any lock.
2. **Switch, all together** (:func:`_switch`): one write plan holding the lock of every namespace involved (on a
   database: one transaction) syncs what was written since (``carried``), verifies each copy, drops the
   originals and renames the copies. Another process's next write plan finds the new collections, so one still
   on the old embedder is refused (``EmbedderMismatchError``) instead of mixing its vectors in. A crash before
   the commit leaves every original as it was. Without transactions (embedded Chroma, one writer) the switch is
   drop then rename per collection; a process that died between the two leaves a complete side collection and
   no original, which ``_collections.recover_reembed`` (run whenever a collection is opened) finishes.

The run journal carries no meaningful vectors and is left as it is.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from langchain_hindsight._checks import check_namespace, is_int
from langchain_hindsight.embeddings.identity import EmbedderIdentity, embedder_identity
from langchain_hindsight.embeddings.models import check_vectors
from langchain_hindsight.errors import ConfigurationError, StoreError
from langchain_hindsight.store import forget as _forget_ops
from langchain_hindsight.store import reads as _read_ops
from langchain_hindsight.store._collections import (
    Collection,
    identity_metadata,
    open_collection,
    recorded_identity,
    switch_reembed,
)
from langchain_hindsight.store._core import StoreCore, backend_errors
from langchain_hindsight.store._naming import (
    REEMBED_COMPLETE,
    REEMBED_OF,
    REEMBED_SUFFIX,
    ROLE_KEY,
    ROLES,
    Role,
    collection_name,
)
from langchain_hindsight.store.backend import Backend

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings


__all__ = ["ReembedReport", "reembed"]

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
        carried: Of ``embedded``: units other processes wrote during the copy, re-embedded before the switch.
    """

    embedder: str
    migrated: list[tuple[str, str, int]] = field(default_factory=list)
    unchanged: list[tuple[str, str]] = field(default_factory=list)
    embedded: int = 0
    carried: int = 0

    @property
    def units(self) -> int:
        """Units now on the new embedder, over every migrated collection."""
        return sum(n for _, _, n in self.migrated)


def _side_collection(backend: Backend, src: Collection, target: EmbedderIdentity) -> Collection:
    """The side collection for ``src``, reused when an earlier run to the same embedder left it."""
    name = src.name + REEMBED_SUFFIX
    side = backend.get_collection(name)
    if side is not None and recorded_identity(side) != target:
        backend.delete_collection(name)  # left by a run towards another embedder: start over
        side = None
    role = src.metadata[ROLE_KEY]
    meta = {**src.metadata, **identity_metadata(target), ROLE_KEY: "reembed", REEMBED_COMPLETE: False, REEMBED_OF: role}
    if side is None:
        return backend.create_collection(name, meta, like=src)
    side.modify(metadata=meta)  # the original may have changed since: verify again
    return side


@dataclass(frozen=True)
class _Target:
    """What every copy of one run writes: the new embedder, its identity, the batch size, progress."""

    embeddings: Embeddings
    identity: EmbedderIdentity
    batch_size: int
    progress: Progress


def _sync(src: Collection, side: Collection, to: _Target, stage: str) -> int:
    """Make ``side`` hold exactly ``src``'s records with ``to``'s vectors; return the texts embedded.

    A record already in ``side`` is left alone, one whose metadata alone changed keeps the copy's vector, one
    whose text changed or that is missing is embedded, and one ``src`` no longer holds is deleted from ``side``.
    """
    total, done, embedded = src.count(), 0, 0
    src_ids: set[str] = set()
    to.progress(stage, 0, total)
    for rows in src.pages(size=_PAGE):
        ids, docs, metas = rows["ids"], rows["documents"] or [], rows["metadatas"] or []
        src_ids.update(ids)
        have = side.get(ids=ids, include=["documents", "metadatas"])
        rows_have = zip(have["ids"], have["documents"] or [], have["metadatas"] or [], strict=True)
        copied = {i: (d, m) for i, d, m in rows_have}
        todo = [j for j, i in enumerate(ids) if i not in copied or copied[i][0] != docs[j]]
        relabel = [j for j, i in enumerate(ids) if i in copied and copied[i][0] == docs[j] and copied[i][1] != metas[j]]
        if relabel:  # same text, new metadata: the copy's vector is still right
            kept = side.get(ids=[ids[j] for j in relabel], include=["embeddings"])
            kept_vectors = dict(zip(kept["ids"], kept["embeddings"], strict=True))
            side.upsert(
                ids=[ids[j] for j in relabel],
                embeddings=[kept_vectors[ids[j]] for j in relabel],
                documents=[docs[j] for j in relabel],
                metadatas=[metas[j] for j in relabel],
            )
        for start in range(0, len(todo), to.batch_size):
            chunk = todo[start : start + to.batch_size]
            texts = [docs[j] or "" for j in chunk]
            vectors = to.embeddings.embed_documents(texts)
            check_vectors(vectors, len(texts), to.identity.dimension, source=to.identity.name)
            side.upsert(
                ids=[ids[j] for j in chunk], embeddings=vectors, documents=texts, metadatas=[metas[j] for j in chunk]
            )
            embedded += len(chunk)
            so_far = done + len(ids) - len(todo) + min(start + to.batch_size, len(todo))
            if so_far < total:  # the page's end reports completion once
                to.progress(stage, so_far, total)
        done += len(ids)
        to.progress(stage, done, total)
    extra = [i for rows in side.pages(include=[], size=_PAGE) for i in rows["ids"] if i not in src_ids]
    if extra:  # deleted from the original since the copy began (or since an interrupted run)
        side.delete(ids=extra)
    return embedded


def _verified(src: Collection, side: Collection, stage: str) -> int:
    """The number of records, once ``side`` holds exactly ``src``'s ids (else :class:`StoreError`)."""
    src_ids = {i for rows in src.pages(include=[], size=_PAGE) for i in rows["ids"]}
    copied_ids = {i for rows in side.pages(include=[], size=_PAGE) for i in rows["ids"]}
    if copied_ids != src_ids or side.count() != src.count():
        raise StoreError(
            f"re-embedding {stage} copied {side.count()} of {src.count()} records; the original is untouched, "
            "run `hindsight reembed` again"
        )
    return len(src_ids)


def _switch(
    backend: Backend, copies: list[tuple[str, Role]], to: _Target
) -> tuple[list[tuple[str, str, int]], list[tuple[str, str]], int]:
    """Carry over what changed since the copies were made, verify each and switch them all (step 2).

    Returns ``(namespace, role, units)`` switched, ``(namespace, role)`` found switched by another
    run, and the texts carried over. May be re-run after a serialization failure: it reads everything.
    """
    migrated: list[tuple[str, str, int]] = []
    done_elsewhere: list[tuple[str, str]] = []
    carried = 0
    for i, (ns, role) in enumerate(copies):
        name, stage = collection_name(ns, role), f"{ns}/{role}"
        src, side = backend.get_collection(name), backend.get_collection(name + REEMBED_SUFFIX)
        if side is None and src is not None and recorded_identity(src) == to.identity:
            done_elsewhere.append((ns, role))  # a concurrent `hindsight reembed` switched it first
            continue
        if src is None or side is None:
            raise StoreError(f"re-embedding {stage}: the collection or its copy vanished meanwhile; run it again")
        if not backend.single_writer:  # writes other processes committed during the copy
            n = _sync(src, side, to, f"{stage} (writes made meanwhile)")
            if n:
                logger.info("re-embedding %s: carried over %d unit(s) written during the copy", stage, n)
            carried += n
        units = _verified(src, side, stage)
        side.modify(metadata={**side.metadata, REEMBED_COMPLETE: True})
        switch_reembed(backend, name, side)
        migrated.append((ns, role, units))
        to.progress("switch", i + 1, len(copies))
    return migrated, done_elsewhere, carried


@backend_errors
def reembed(
    store: StoreCore, *, namespaces: Sequence[str] | None = None, batch_size: int = 64, progress: Progress | None = None
) -> ReembedReport:
    """Re-embed every unit with this store's embedder, in place (what ``hindsight reembed`` runs).

    Use it after changing a store's embedder (the store raises :class:`EmbedderMismatchError` until then).
    Every collection is copied with new vectors from the stored text, verified, and all are switched together;
    a crash leaves the old ones intact and a re-run finishes. An embedded store is then scrubbed: the old
    vectors leave the disk.

    Args:
        store: The store (``self``: this is :meth:`MemoryStore.reembed`).
        namespaces: Namespaces to migrate (default: every namespace).
        batch_size: Texts per embedding call.
        progress: Called as ``progress("namespace/role", done, total)``.

    Raises:
        EmbeddingError: the new embedder returned unusable vectors (nothing switched).
        StoreError: the backend failed or a copy did not verify (the original is untouched).
    """
    if not is_int(batch_size, 1):
        raise ConfigurationError(f"batch_size must be a positive int, got {batch_size!r}")
    with store.lock:
        store.ensure_open()
        names = _read_ops.namespaces(store) if namespaces is None else [check_namespace(n) for n in namespaces]
        for name in names:  # new vectors: the cached and mirrored ones are the old embedder's
            store.replica.revector(name)
        store.reopen_collections()
        try:
            report = _migrate(store.backend, store.embeddings, names, batch_size, progress)
        finally:
            store.reopen_collections()
        if report.migrated and store.backend.can_erase:
            _forget_ops.scrub_collections(store, None)
        return report


def _migrate(
    backend: Backend, embeddings: Embeddings, namespaces: Sequence[str], batch_size: int, progress: Progress | None
) -> ReembedReport:
    """Migrate the memories and archive collections of ``namespaces`` on ``backend`` to ``embeddings``."""
    target = embedder_identity(embeddings)
    if target.dimension is None:  # not declared: measure it, so the store records it
        target = EmbedderIdentity(target.name, len(embeddings.embed_query("dimension probe")))
    to = _Target(embeddings, target, batch_size, progress or (lambda _stage, _done, _total: None))
    unchanged: list[tuple[str, str]] = []
    copies: list[tuple[str, Role]] = []
    embedded = 0
    for ns in namespaces:
        for role in ROLES:
            src = open_collection(backend, ns, role, create=False)
            if src is None:
                continue
            if recorded_identity(src) == target and backend.get_collection(src.name + REEMBED_SUFFIX) is None:
                unchanged.append((ns, role))
                continue
            embedded += _sync(src, _side_collection(backend, src, target), to, f"{ns}/{role}")
            copies.append((ns, role))
    caught_up = 0
    if not backend.single_writer:  # catch up outside the lock, so the switch has little left to embed
        for ns, role in copies:
            name = collection_name(ns, role)
            src, side = backend.get_collection(name), backend.get_collection(name + REEMBED_SUFFIX)
            if src is not None and side is not None:
                caught_up += _sync(src, side, to, f"{ns}/{role} (catching up)")
        if caught_up:
            logger.info("re-embedding: caught up with %d unit(s) other processes wrote during the copy", caught_up)
    migrated, done_elsewhere, carried = backend.atomic_all(
        [ns for ns, _ in copies], functools.partial(_switch, backend, copies, to)
    )
    for name, kind, units in migrated:
        logger.info("re-embedded %d unit(s) of %s/%s with %s", units, name, kind, target)
    for name, kind in done_elsewhere:
        logger.warning("%s/%s was re-embedded by another process meanwhile; left as it is", name, kind)
    carried += caught_up
    return ReembedReport(str(target), migrated, unchanged + done_elsewhere, embedded + carried, carried=carried)
