"""The read path of every store but a database's: each namespace's lexical index and vectors, in process.

A :class:`Replica` answers every recall of a namespace from its :class:`Held` copy, with no backend read per
query. A copy is loaded from the snapshot the clean-close stamp vouches for (the only trust rule), else built by
one paged read, and kept exact by every write (:meth:`Replica.reindex`), which also erases the namespace's
snapshots: a crash can leave a missing file but never a stale one. On a shared Chroma server the change feed is
read before every search. Derived files are written only by :meth:`Replica.close`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from langchain_hindsight.embeddings.identity import EmbedderIdentity
from langchain_hindsight.errors import StoreError
from langchain_hindsight.store._collections import Collection, namespaces
from langchain_hindsight.store._directory import erase_file
from langchain_hindsight.store._naming import Role, collection_name
from langchain_hindsight.store.backend import Backend
from langchain_hindsight.store.replica.feed import ChangeFeed, open_change_feed
from langchain_hindsight.store.replica.files import DerivedFiles
from langchain_hindsight.store.replica.records import Held, Mirror
from langchain_hindsight.types import MemoryUnit

__all__ = ["Replica"]

logger = logging.getLogger(__name__)


class Replica:
    """The in-process read path of one store (see the module docstring), read under the store's lock.

    ``collection`` opens a namespace's collection of a role without creating it (``None``: there is none);
    ``checked`` returns it once its recorded embedder is the store's (raises otherwise).
    """

    def __init__(
        self,
        backend: Backend,
        *,
        collection: Callable[[str, Role], Collection | None],
        checked: Callable[[Collection | None], Collection | None],
        identity: Callable[[], EmbedderIdentity],
    ) -> None:
        self.backend = backend
        held = backend.directory
        self.files = None if held is None else DerivedFiles(held.path, held.trusted)
        """The derived files of an embedded store's directory and the stamp's word at open (``None``: no directory)."""
        self._collection = collection
        self._checked = checked
        self._identity = identity
        self._held: dict[str, Held] = {}
        self.write_failed = False  # a write may have stopped half-way (see close)
        self.feeds: dict[str, ChangeFeed] = {}
        self._dropped: set[str] = set()  # namespaces whose snapshots this store already erased
        self._counted: dict[str, tuple[dict[str, Any], int]] = {}  # statistics counted, and after how many writes

    def hybrid(
        self, namespace: str, query: str, vector: Sequence[float], k: int, normalize: bool
    ) -> tuple[dict[str, tuple[MemoryUnit, float]], dict[str, float]]:
        """Both arms of hybrid recall from the namespace's copy (``Held.hybrid``)."""
        held = self.current(namespace)
        return ({}, {}) if held is None else held.hybrid(query, vector, k, normalize)

    def nearest(
        self, namespace: str, vector: Sequence[float], k: int, include_embeddings: bool
    ) -> list[tuple[MemoryUnit, float, list[float] | None]]:
        """The ``k`` active units nearest ``vector`` (exact), with their stored vectors if asked."""
        held = self.current(namespace)
        if held is None:
            return []
        return [
            (held.mirror.unit(i), sim, held.mirror.vector(i) if include_embeddings else None)
            for i, sim in held.mirror.nearest(vector, k)
        ]

    def similarities(
        self, namespace: str, vector: Sequence[float], memory_ids: Sequence[str]
    ) -> list[tuple[MemoryUnit, float]]:
        """The active units among ``memory_ids`` (in that order) with their cosine to ``vector``."""
        held = self.current(namespace)
        if held is None:
            return []
        sims = held.mirror.similarities(vector, memory_ids)
        return [(held.mirror.unit(i), sims[i]) for i in memory_ids if i in sims]

    def lexical(self, namespace: str, query: str, k: int, normalize: bool) -> list[tuple[str, float]]:
        """The lexical arm alone: BM25 matches among the namespace's active units, best first."""
        held = self.current(namespace)
        return [] if held is None else held.index.search(query, k, normalize=normalize)

    def current(self, namespace: str) -> Held | None:
        """``namespace``'s copy, current, after the embedder check: held, loaded or built; ``None``: no memories yet."""
        col = self._checked(self._collection(namespace, "memories"))
        return None if col is None else self._current(namespace, col)

    def _current(self, namespace: str, col: Collection, *, build: bool = True) -> Held | None:
        """:meth:`current` once ``col`` is open; without ``build``, only if held or loaded. On a shared server what
        other writers changed is read again first (everything, when the feed no longer covers the gap).
        """  # noqa: D205
        held = self._held.get(namespace)
        feed = self._feed(namespace)
        if held is not None and feed is not None:
            seen, changed = feed.poll(held.seen)
            if changed is None:
                logger.debug("the replica of %r is behind other writers: rebuilding", namespace)
                held = None
            else:
                held.mirror.stale.update(changed)
                held.seen = seen
        held = held or self._load(namespace)
        if held is None:
            if not build:
                return None
            seen = feed.snapshot() if feed is not None else {}  # before reading: later writes reach the next poll
            held = Held.build(col, self._identity(), seen)
        self._held[namespace] = held
        held.read_again(col)
        return held

    def _load(self, namespace: str) -> Held | None:
        """``namespace``'s copy from its snapshot, if the stamp vouches for it and this store kept it."""
        if self.files is None or namespace in self._dropped:
            return None
        path = self.files.trusted_snapshot(namespace)
        return None if path is None else Held.load(path, str(self._identity()))

    def holds(self, namespace: str) -> bool:
        """Whether a copy of ``namespace`` is held in memory now."""
        return namespace in self._held

    def held_mirror(self, namespace: str, *, load: bool) -> Mirror | None:
        """``namespace``'s recall mirror, current, if held; with ``load``, also one loaded from its trusted snapshot.
        Never built (that would read every active record), and no embedder check (counting reads no vector).
        """  # noqa: D205
        if namespace not in self._held and (not load or self.files is None):
            return None
        col = self._collection(namespace, "memories")
        held = None if col is None else self._current(namespace, col, build=False)
        return None if held is None else held.mirror

    def _feed(self, namespace: str) -> ChangeFeed | None:
        """The namespace's change feed, or ``None`` when this store is the only writer."""
        if self.backend.single_writer or self.backend.lexical is not None:
            return None  # no other writer (the directory lock, or memory), or a database: no replica at all
        if namespace not in self.feeds:
            self.feeds[namespace] = open_change_feed(self.backend, namespace)
        return self.feeds[namespace]

    def reset(self, namespace: str) -> None:
        """``namespace`` was dropped: forget everything derived from it and erase its files."""
        self._held.pop(namespace, None)
        self._counted.pop(namespace, None)
        self._dropped.discard(namespace)
        self.drop(namespace)
        self.feeds.pop(namespace, None)

    def revector(self, namespace: str) -> None:
        """``namespace``'s vectors are about to change (a re-embedding): drop what holds the old ones."""
        self.drop(namespace)
        self._held.pop(namespace, None)

    def clear(self) -> None:
        """Let go of every copy held in memory (the store closed)."""
        self._held.clear()

    def erase_unvouched(self) -> int:
        """Erase every derived file the stamp does not vouch for (never loaded); returns how many, for a scrub.

        Raises:
            StoreError: a file could not be erased.
        """
        stale = [] if self.files is None else self.files.unvouched()
        for path in stale:
            erase_file(path)
        if stale:
            logger.info("erased %d derived file(s) the clean-close stamp did not vouch for", len(stale))
        return len(stale)

    def drop(self, namespace: str) -> None:
        """Erase ``namespace``'s snapshot once it no longer matches the data (first write of this store)."""
        held = self._held.get(namespace)
        if held is not None:
            held.saved = False
        if self.files is not None and namespace not in self._dropped:
            for path in self.files.snapshots(namespace):
                erase_file(path)
            self._dropped.add(namespace)

    def distrust(self, namespaces: Iterable[str]) -> None:
        """After a write that may have stopped half-way: forget every copy, erase the snapshots of ``namespaces``."""
        self.write_failed = True
        self._held.clear()
        for namespace in set(namespaces):
            try:
                self.drop(namespace)
            except StoreError:
                logger.warning("could not erase the snapshots of %r", namespace, exc_info=True)

    def save(self) -> None:
        """Save each copy that differs from its snapshot; failures are only logged (the next open rebuilds)."""
        for namespace, held in self._held.items():
            if self.files is None or held.saved:
                continue
            try:
                col = self._collection(namespace, "memories")
                if col is not None:
                    held.read_again(col)
                    held.save(self.files.path("mirror", namespace))
                    held.saved = True
            except Exception:  # an optimisation: the next open rebuilds what was not saved
                logger.warning("the replica of %r not saved", namespace, exc_info=True)

    def counted(self, namespace: str, entry: Mapping[str, Any]) -> None:
        """The store counted ``namespace``'s entry (``MemoryStore.statistics``): the close may keep it."""
        held = self.backend.directory
        if held is not None:
            self._counted[namespace] = (dict(entry), held.writes)

    def close(self, *, entry: Callable[[str], dict[str, Any] | None], runs: Callable[[str], int]) -> None:
        """The store's close, before the backend closes: the one moment derived files are written.

        Saves the snapshots, rewrites the statistics summary, then vouches for what is on disk to the stamp (a later
        write through the backend unvouches it). A namespace keeps the entry this session counted (:meth:`counted`)
        if no write followed; else the one trusted at open if none of its collections was written (its ``runs`` read
        again if only the journal was); else ``entry`` counts it again (``None``, not cheap: dropped). Nothing is
        kept after a write of unknown scope or one that failed half-way; a session that neither wrote nor counted
        leaves the files as they were. A summary neither kept nor erased is logged, and nothing is vouched for.
        """
        self.save()
        held, files = self.backend.directory, self.files
        if held is None or files is None:
            return
        written, as_of = held.written, held.writes
        try:
            if not as_of and not self._counted:
                pass  # the files stay as they were
            elif written is None or self.write_failed:  # what changed is not known: nothing can be kept
                files.erase_summary()
            else:
                previous = files.summary()
                present = namespaces(self.backend)
                stats: dict[str, dict[str, Any]] = {}
                for ns in present:
                    trusted = previous.stats.get(ns) if previous is not None else None
                    changed = {r for r in ("memories", "archive", "journal") if collection_name(ns, r) in written}
                    fresh, counted_at = self._counted.get(ns, (None, -1))
                    if fresh is not None and (counted_at == as_of or not changed):
                        stats[ns] = fresh
                    elif trusted is not None and not changed:
                        stats[ns] = trusted
                    elif trusted is not None and changed == {"journal"}:
                        stats[ns] = {**trusted, "runs": runs(ns)}
                    elif (counted := entry(ns)) is not None:
                        stats[ns] = counted
                files.write_summary(present, stats)  # none kept: every counts file erased
        except Exception:  # the summary is a shortcut: the close goes on without it
            logger.warning("statistics summary of %s not kept", files.directory, exc_info=True)
            try:
                files.erase_summary()
            except StoreError:
                logger.warning("could not erase the statistics summary of %s", files.directory, exc_info=True)
                return
        held.vouch()

    def reindex(self, namespace: str, upserts: Sequence[MemoryUnit] = (), deletes: Sequence[str] = ()) -> None:
        """The store wrote ``upserts`` and deleted ``deletes`` in ``namespace``: patch the copy held (or, at the first
        write, loaded from the trusted snapshot), erase the snapshots, and tell other writers of a shared server.
        """  # noqa: D205
        written = [*(u.memory_id for u in upserts), *deletes]
        held = self._held.get(namespace) or self._load(namespace)
        if held is not None:  # not held: built from the backend when first searched
            self._held[namespace] = held
            held.index.delete(deletes)
            held.index.upsert(upserts)
            held.mirror.discard(deletes)
            held.mirror.apply(upserts)
        self.drop(namespace)
        feed = self._feed(namespace)
        if feed is not None:
            try:
                feed.publish(written)
            except StoreError as e:
                raise StoreError(f"could not publish the change to namespace {namespace!r}: {e}") from e
